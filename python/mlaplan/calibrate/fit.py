"""Fitting a cost model: coefficients >= 0 that minimise the relative error of the predicted layer
time (non-negative least squares on each point's terms divided by its time), the attention kernel's
geometry (query tile, blocks per SM) chosen by the fit, and which terms the measurements cannot tell
apart."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import cost_terms

# A term whose (relative) column is this well explained by the others cannot be told from them.
COLLINEAR_R2 = 0.999
# Geometries tried: FlashAttention-2's query tiles for head dimension 192 are 64 or 128 rows, one or
# two blocks resident per SM.
GEOMETRIES = [(tile, blocks) for tile in (128, 64) for blocks in (1, 2)]
# How each kernel hands its blocks out (features.hpp, Scheduler): FlashAttention-3's persistent varlen
# scheduler takes the sequences longest first and a causal launch's tiles one L2 head section at a time
# (sectioned: on an H100, Kimi-K2's one-sequence Mooncake steps were priced 2-5% short without the
# sections, sorted), the others their grid in order.
SCHEDULERS = {"fa3": "sectioned"}
# FlashAttention-3's SM90 forward for head dimension 192 runs tiles of 128 queries, one CTA per SM
# (hopper/tile_size.h, tile_size_fwd_sm90; flash_fwd_kernel_sm90.h): its geometry is known, not fitted.
KERNEL_GEOMETRIES = {"fa3": [(128, 1)]}
# What a cost file holds per unit of a term (the C++ reader's kMaxCoefficient: a second): a fit past it
# wrote a file that `run --cost` then refused.
MAX_COEFFICIENT = 1e6
# A fit that prices for longer than this says how far it is, this often (stderr).
PROGRESS_S = 3.0


class Progress:
    """A line on stderr every PROGRESS_S seconds of a long fit (none for a fit done sooner): what is
    being fitted and how far, so that a fit of many or large runs never sits silent."""

    def __init__(self, what: str, command: str = "calibrate"):
        self.what, self.command, self.start = what, command, time.monotonic()
        self.last = self.start

    def tick(self, where: str) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_S:
            self.last = now
            print(f"{self.command}: {self.what}: {where}, {now - self.start:.0f} s", file=sys.stderr, flush=True)


def scheduler_for(kernel: str) -> str:
    return SCHEDULERS.get(kernel, "grid")


def geometries_for(kernel: str) -> List[Tuple[int, int]]:
    return KERNEL_GEOMETRIES.get(kernel, GEOMETRIES)


def term_names() -> List[str]:
    return [name for name, _ in cost_terms()]


# Terms a fit offers only under some schedulers: the causal blocks' cost was found on FlashAttention-3's
# kernels (Kimi-K2 and DeepSeek-V3, H100 and H200); files of the others keep the terms they were fitted
# with (a refit of them gives their coefficients again).
SCHEDULER_TERMS = {"per_causal_block_us": ("sectioned",)}


def offered(name: str, scheduler: str) -> bool:
    return scheduler in SCHEDULER_TERMS.get(name, (scheduler,))


def _nnls():
    try:
        from scipy.optimize import nnls
    except ImportError as e:  # pragma: no cover - scipy comes with the calibrate extra
        raise ImportError("the calibration fits with scipy.optimize.nnls: pip install scipy") from e
    return nnls


def fit_coefficients(X: np.ndarray, y: np.ndarray, weights: Optional[np.ndarray] = None) -> np.ndarray:
    """Coefficients c >= 0 minimising sum(w * ((X c - y) / y)^2): each point weighs by its relative error,
    so a 1 ms batch counts as much as a 100 ms one, times its weight w (default 1)."""
    root = np.ones(len(y)) if weights is None else np.sqrt(np.asarray(weights, dtype=np.float64))
    A = X / y[:, None] * root[:, None]
    scale = np.linalg.norm(A, axis=0)
    scale[scale == 0] = 1.0
    c, _ = _nnls()(A / scale, root, maxiter=50 * X.shape[1])
    return c / scale


def relative_errors(X: np.ndarray, y: np.ndarray, c: np.ndarray) -> np.ndarray:
    return (X @ c - y) / y


def identifiability(X: np.ndarray, y: np.ndarray, names: Sequence[str], coefficients: Optional[np.ndarray] = None) -> Dict[str, str]:
    """Why each term that the measurements cannot pin down is so, by name: a term no point exercises
    (its column is zero), one whose column is within COLLINEAR_R2 a combination of the others' (the
    largest of them named), and, given the fit, one left at its bound of 0. Terms not named are
    identified."""
    A = X / y[:, None]
    norms = np.linalg.norm(A, axis=0)
    live = [j for j in range(A.shape[1]) if norms[j] > 0]
    out: Dict[str, str] = {}
    for j, name in enumerate(names):
        if norms[j] == 0:
            out[name] = "never exercised: no calibration point has any of it"
            continue
        others = [k for k in live if k != j]
        if not others:
            continue
        B = A[:, others] / norms[others]
        target = A[:, j] / norms[j]
        w, *_ = np.linalg.lstsq(B, target, rcond=None)
        resid = target - B @ w
        r2 = 1.0 - float(resid @ resid)  # target has unit norm (uncentred: the model has no intercept)
        if r2 > COLLINEAR_R2:
            top = [names[others[k]] for k in np.argsort(-np.abs(w))[:3] if abs(w[k]) > 1e-6]
            out[name] = f"not identifiable: {r2:.5f} of its variation is a combination of {', '.join(top)}"
    if coefficients is not None:
        for j, name in enumerate(names):
            if name not in out and coefficients[j] == 0:
                out[name] = "at its bound 0: the measurements give it no positive weight"
    return out


@dataclass
class FitResult:
    coefficients: Dict[str, float]
    tile_queries: int
    blocks_per_sm: int
    points: int
    median_abs_error: float
    p90_abs_error: float
    max_abs_error: float
    cv_median_abs_error: Optional[float]  # 5-fold cross-validated (None: too few points for any fold's fit)
    cv_p90_abs_error: Optional[float]
    not_identifiable: Dict[str, str] = field(default_factory=dict)
    errors: List[float] = field(default_factory=list)
    scheduler: str = "grid"
    workload_weight: float = 1.0          # the weight of each workload-shaped point against a grid point's 1
    small_gemm_rows: int = 0              # the largest up-projection priced as small (0: none; SMALL_GEMM_ROWS)
    # Why the small-GEMM term is or is not used: each candidate's cross-validated figures.
    small_gemm_trial: Dict[str, object] = field(default_factory=dict)

    def summary(self) -> dict:
        return {"points": self.points, "median_abs_error": self.median_abs_error, "p90_abs_error": self.p90_abs_error,
                "max_abs_error": self.max_abs_error, "cross_validated_median_abs_error": self.cv_median_abs_error,
                "cross_validated_p90_abs_error": self.cv_p90_abs_error, "not_identifiable": self.not_identifiable,
                "workload_weight": self.workload_weight, **({"small_gemm": self.small_gemm_trial} if self.small_gemm_trial else {})}


def _cross_validated(X: np.ndarray, y: np.ndarray, weights: np.ndarray, folds: int = 5, seed: int = 0) -> np.ndarray:
    order = np.random.default_rng(seed).permutation(len(y))
    errs = np.full(len(y), np.nan)  # a point whose fold could not be fitted stays NaN: left out of the figures
    for k in range(folds):
        test = order[k::folds]
        train = np.setdiff1d(order, test)
        if len(train) < X.shape[1] or len(test) == 0:
            continue
        c = fit_coefficients(X[train], y[train], weights[train])
        errs[test] = relative_errors(X[test], y[test], c)
    return errs


def design(records: Sequence[dict], heads: int, sms: int, tile: int, blocks: int,
           scheduler: str = "grid", progress: Optional[Progress] = None, points=None,
           small_gemm_rows: int = 0) -> Tuple[np.ndarray, List[str]]:
    """Each record's terms (a row) at the geometry. points: the records' batches, built once
    (record_points), where the caller prices them at several geometries."""
    from .grid import features

    names = term_names()
    rows = []
    for i, (p, sm) in enumerate(points or record_points(records)):
        f = features(p, heads, sms, blocks, tile, sm, scheduler, small_gemm_rows)
        rows.append([f[n] for n in names])
        if progress:
            progress.tick(f"geometry {tile} x {blocks}, {i + 1} of {len(records)} points priced")
    return np.asarray(rows, dtype=np.float64), names


# The small-GEMM term (per_small_gemm_row_us, docs/cost-model.md): up-projections of at most this many rows
# tried as "small". On an H100 at DeepSeek-V3 TP 1, rows in up-projections past 64K rows cost 15 ns (12%)
# less than in smaller ones, which priced its 128K- and 256K-row buffers 4-5% slow without the term: the K
# concat reading the GEMM's output, once that passes 2^31 elements (docs/cost-model.md, "Small GEMMs").
SMALL_GEMM_ROWS = (32768, 65536, 131072)
# A candidate is used only where the points have GEMMs on both sides of it (this many points, and this
# share of them, with a larger one) and it lowers the cross-validated RMS error by this much: the term
# must be seen and must predict, not only fit. (The H100 TP 1 run: 27% lower at 64K; the H200 FA3 TP 8
# measurements: 5% at any of the three, a smooth trend of a few percent of per_row_us, left out.)
SMALL_GEMM_MIN_POINTS, SMALL_GEMM_MIN_SHARE, SMALL_GEMM_GAIN = 10, 0.05, 0.10


def _cv_rms(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    e = _cross_validated(X, y, w)
    ok = np.isfinite(e)
    return float(np.sqrt(np.average(e[ok] ** 2, weights=w[ok]))) if ok.any() else float("inf")


def _small_gemm_choice(records, heads, sms, tile, blocks, scheduler, points, X, y, w, c, e):
    """(small_gemm_rows, X, c, e, trial): the fit with the candidate of SMALL_GEMM_ROWS that lowers the
    cross-validated RMS error most, by at least SMALL_GEMM_GAIN, among those with GEMMs on both sides in
    the points; else 0 and the fit as it was. trial: each candidate's figures, for the file's record."""
    names = term_names()
    j_row, j_small = names.index("per_row_us"), names.index("per_small_gemm_row_us")
    base = _cv_rms(X, y, w)
    finite = lambda v: v if np.isfinite(v) else None  # noqa: E731 - too few points for a fold: null, as the fit's figures
    trial: Dict[str, object] = {"cross_validated_rms_without": finite(base), "tried": {}}
    best = (base * (1 - SMALL_GEMM_GAIN), 0, X, c, e)
    for rows in SMALL_GEMM_ROWS:
        Xs, _ = design(records, heads, sms, tile, blocks, scheduler, None, points, rows)
        Xs[:, [j for j, n in enumerate(names) if not offered(n, scheduler)]] = 0
        larger = int(np.sum(Xs[:, j_row] - Xs[:, j_small] > 0.5))
        entry: Dict[str, object] = {"points_with_a_larger_gemm": larger}
        trial["tried"][str(rows)] = entry
        if larger < max(SMALL_GEMM_MIN_POINTS, SMALL_GEMM_MIN_SHARE * len(y)) or larger == len(y):
            entry["used"] = False
            continue
        rms = _cv_rms(Xs, y, w)
        entry["cross_validated_rms"] = finite(rms)
        if rms < best[0]:
            cs = fit_coefficients(Xs, y, w)
            best = (rms, rows, Xs, cs, relative_errors(Xs, y, cs))
    trial["small_gemm_rows"] = best[1]
    return best[1], best[2], best[3], best[4], trial  # without it, X's column is 0 (no GEMM is small): the term at 0


def record_points(records: Sequence[dict]) -> list:
    """(batch, compute capability of its path) of each record: the batch's arrays built once, so
    that a fit pricing it many times converts its lists once (grid.Point.arrays)."""
    from .grid import Point, record_sm

    return [(Point(r["cache"], r["new"], r["page_size"], r["buffer_tokens"], r["policy"]), record_sm(r)) for r in records]


def _figures(errors: np.ndarray) -> Tuple[Optional[float], Optional[float]]:
    """(median, p90) of |errors| over the finite ones; None where there are none."""
    e = np.abs(errors[np.isfinite(errors)])
    return (float(np.median(e)), float(np.quantile(e, 0.9))) if e.size else (None, None)


def fit_records(records: Sequence[dict], heads: int, sms: int, timing: str = "graph",
                geometries: Sequence[Tuple[int, int]] = GEOMETRIES, scheduler: str = "grid",
                workload_weight: float = 1.0) -> FitResult:
    """Fits measured records (measure.py's) to their `timing` ("eager" or "graph") ms, trying each
    geometry and keeping the one with the smallest (weighted) root-mean-square relative error;
    scheduler: the kernel's (scheduler_for); workload_weight: what a workload-shaped point (a record
    with a `workload`, from --scenarios) weighs against a grid point's 1."""
    if not (np.isfinite(workload_weight) and workload_weight > 0):
        raise ValueError(f"workload weight {workload_weight!r}: give a number > 0")
    key = f"{timing}_ms"
    usable = [r for r in records if r.get(key)]
    if len(usable) < len(term_names()) + 1:
        raise ValueError(f"{len(usable)} measured points with {key}: the fit needs more than {len(term_names())}")
    y = np.asarray([r[key] * 1e3 for r in usable])  # microseconds
    w = np.asarray([workload_weight if r.get("workload") else 1.0 for r in usable])
    best = None
    progress, points = Progress("fitting the graph coefficients"), record_points(usable)
    for tile, blocks in geometries:
        X, names = design(usable, heads, sms, tile, blocks, scheduler, progress, points)
        X[:, [j for j, n in enumerate(names) if not offered(n, scheduler)]] = 0  # left at 0
        c = fit_coefficients(X, y, w)
        e = relative_errors(X, y, c)
        rms = float(np.sqrt(np.average(e**2, weights=w)))
        if best is None or rms < best[0]:
            best = (rms, tile, blocks, X, c, e)
    _, tile, blocks, X, c, e = best
    names = term_names()
    small, X, c, e, trial = _small_gemm_choice(usable, heads, sms, tile, blocks, scheduler, points, X, y, w, c, e)
    # A cost file holds at most MAX_COEFFICIENT per unit: past it the times are no layer's (a unit slip).
    for n, v in zip(names, c):
        if not v <= MAX_COEFFICIENT:
            raise ValueError(f"the fit gives {n} {v:.3g} us, past the {MAX_COEFFICIENT:g} (a second per unit) a cost file "
                             f"holds: the {key} times are not one layer's; check their units")
    cv_median, cv_p90 = _figures(_cross_validated(X, y, w))
    return FitResult(
        coefficients={n: float(v) for n, v in zip(names, c)}, tile_queries=tile, blocks_per_sm=blocks, points=len(usable),
        scheduler=scheduler,
        median_abs_error=float(np.median(np.abs(e))), p90_abs_error=float(np.quantile(np.abs(e), 0.9)),
        max_abs_error=float(np.max(np.abs(e))), cv_median_abs_error=cv_median,
        cv_p90_abs_error=cv_p90,
        not_identifiable={n: why for n, why in identifiability(X, y, names, c).items()
                          if offered(n, scheduler) and (small or n != "per_small_gemm_row_us")},  # an unused term is no news
        errors=[float(v) for v in e], workload_weight=float(workload_weight), small_gemm_rows=small, small_gemm_trial=trial)


LAUNCH_KINDS = ("gather", "up_projection", "concat", "attention", "merge", "fill")  # executor.LAUNCH_KINDS, without torch
# Layers whose host dispatch a calibration times on its own per point (the median kept as host_ms).
HOST_REPS = 3
# The host fit's robust loss: residuals past 5% weigh linearly, so that the few layers a noisy host
# stalled (an eager run's spread reaches a third of its median) do not set every launch's cost.
HOST_LOSS, HOST_SCALE = "soft_l1", 0.05


@dataclass
class HostFit:
    launch_us: Dict[str, float]
    points: int
    median_abs_error: float
    p90_abs_error: float
    not_identifiable: Dict[str, str] = field(default_factory=dict)
    probe_ms: Optional[float] = None  # the host speed launch_us is stated at (None: the runs were not probed)
    probe: Optional[str] = None       # which probe probe_ms is of (PROBES)
    # Where runs of several sessions are pooled: each session's runs, points and median signed error
    # under the pooled costs. A session whose host sat off its probe throughout shows as a bias.
    sessions: List[dict] = field(default_factory=list)
    # Where more runs than kinds stamped their launches (host_launch_us): the host costs those stamps
    # measure, at the same probe (each kind's median over the runs, each run's scaled by its probe), and
    # the errors the two clocks give those runs with them and with the fitted ones. A check on the fit
    # that does not depend on which kinds the eager times can tell apart.
    stamped: Optional[dict] = None
    # Whether the runs pin down what eager pricing compares (host_identification): False with the
    # reasons where a choice by eager time would rest on costs the runs only bound.
    identified: bool = True
    unidentified_because: List[str] = field(default_factory=list)
    host_bound_runs: int = 0

    def summary(self) -> dict:
        out = {"points": self.points, "target": "eager_ms, by the two clocks over the graph coefficients",
               "median_abs_error": self.median_abs_error, "p90_abs_error": self.p90_abs_error,
               "not_identifiable": self.not_identifiable, "host_bound_runs": self.host_bound_runs}
        if self.sessions:
            out["sessions"] = self.sessions
        if self.stamped:
            out["stamped"] = self.stamped
        return out


# The probes a host section can be stated at (the cost file's host.probe), each the record field it
# is kept in: cpu, cpu_speed's pure-Python loop; dispatch, a small layer's issue time through the
# executor (prefill.dispatch_probe), which follows a layer's dispatch more closely. A file without
# host.probe is stated at cpu, the only probe before dispatch's.
PROBES = {"cpu": "cpu_probe_ms", "dispatch": "dispatch_probe_ms"}


def probe_scale(rec: dict, probe_ms: Optional[float], probe: str = "cpu") -> float:
    """How much slower the host ran at this record than at probe_ms: its probe of that kind over the
    reference. Dispatch is CPU work like the probe, so host costs scale with it (the H200's hosts
    differ by 15% at full speed, docs/cost-model.md); 1 where either is missing."""
    p = rec.get(PROBES[probe])
    return p / probe_ms if p and probe_ms else 1.0


def common_probe(records: Sequence[dict]) -> Optional[str]:
    """The probe every record has, dispatch before cpu; None where neither is in all of them."""
    for probe in ("dispatch", "cpu"):
        if records and all(r.get(PROBES[probe]) for r in records):
            return probe
    return None


def fit_host(records: Sequence[dict], graph: FitResult, heads: int, sms: int, pad_v: bool,
             sessions: Optional[Sequence[str]] = None) -> Optional[HostFit]:
    """Eager time's host costs: microseconds per launch of each kind, >= 0, such that the two clocks
    over the graph fit's device times give each point's measured eager time (robust least squares on
    the relative error). None where fewer points than kinds have both times. `sessions`, one label per
    record (the file it came from), has the fit report each session's median signed error where there
    are two or more."""
    try:
        from scipy.optimize import least_squares
    except ImportError as e:  # pragma: no cover - scipy comes with the calibrate extra
        raise ImportError("the host fit uses scipy.optimize.least_squares: pip install scipy") from e
    from .grid import eager_us

    keep = [i for i, r in enumerate(records) if r.get("eager_ms") and r.get("graph_ms")]
    usable = [records[i] for i in keep]
    labels = [sessions[i] for i in keep] if sessions is not None else None
    if len(usable) <= len(LAUNCH_KINDS):
        return None
    y = np.asarray([r["eager_ms"] * 1e3 for r in usable])
    # The costs are stated at the runs' median host speed, each run's scaled by its own probe.
    probe = common_probe(usable)
    probe_ms = float(np.median([r[PROBES[probe]] for r in usable])) if probe else None
    # The points once (their arrays built once), each priced at every step of the search, which says
    # how far it is every few seconds.
    points = [(p, sm, probe_scale(r, probe_ms, probe or "cpu")) for (p, sm), r in zip(record_points(usable), usable)]
    progress, calls = Progress(f"fitting the host costs on {len(usable)} runs"), [0]

    def residuals(h):
        calls[0] += 1
        out = np.empty(len(points))
        for i, (p, sm, scale) in enumerate(points):
            out[i] = eager_us(p, graph.coefficients, {k: float(v) * scale for k, v in zip(LAUNCH_KINDS, h)}, pad_v, heads, sms,
                              graph.blocks_per_sm, graph.tile_queries, sm, graph.scheduler, graph.small_gemm_rows)
            progress.tick(f"pricing {calls[0]}, {i + 1} of {len(points)} runs")
        return out / y - 1

    # The walk is piecewise linear in h: finite differences of a few percent see its kinks.
    f = least_squares(residuals, np.full(len(LAUNCH_KINDS), 50.0), bounds=(0.0, 1e4), diff_step=0.05, loss=HOST_LOSS,
                      f_scale=HOST_SCALE)
    e = np.abs(f.fun)
    # The runs that stamped their launches (a pooled fit's older sessions did not), each priced by
    # the stamps' costs and by the fitted ones.
    stamped = None
    have = [i for i, r in enumerate(usable) if r.get("host_launch_us")]
    if len(have) > len(LAUNCH_KINDS):
        measured = stamped_us([usable[i] for i in have], probe_ms, probe or "cpu", f.x)
        s_err = np.abs(residuals(np.asarray([measured[k] for k in LAUNCH_KINDS]))[have])
        f_err = np.abs(f.fun[have])
        stamped = {"runs": len(have), "launch_us": measured, "median_abs_error": float(np.median(s_err)),
                   "p90_abs_error": float(np.quantile(s_err, 0.9)), "fitted_median_abs_error": float(np.median(f_err)),
                   "fitted_p90_abs_error": float(np.quantile(f_err, 0.9))}
    counts = np.asarray([[r["launches"].get(k, 0) for k in LAUNCH_KINDS] for r in usable if r.get("launches")], dtype=np.float64)
    why = identifiability(counts, np.ones(len(counts)), LAUNCH_KINDS, f.x) if len(counts) > len(LAUNCH_KINDS) else {}
    bound = np.asarray([r["eager_ms"] / r["graph_ms"] >= HOST_BOUND_RATIO for r in usable])
    launches = (np.asarray([[r["launches"].get(k, 0) * scale for k in LAUNCH_KINDS] for r, (_, _, scale) in zip(usable, points)],
                           dtype=np.float64) if all(r.get("launches") for r in usable) else None)
    identified, because = host_identification(bound, f.fun, f.jac, f.cost, f.x, launches)
    by_session = []
    if labels is not None and len(set(labels)) > 1:
        for name in dict.fromkeys(labels):  # in the order given
            mine = np.asarray([x for x, lab in zip(f.fun, labels) if lab == name])
            by_session.append({"runs": name, "points": int(mine.size), "median_error": float(np.median(mine))})
    return HostFit(launch_us={k: float(v) for k, v in zip(LAUNCH_KINDS, f.x)}, points=len(usable),
                   median_abs_error=float(np.median(e)), p90_abs_error=float(np.quantile(e, 0.9)), not_identifiable=why,
                   probe_ms=probe_ms, probe=probe, sessions=by_session, stamped=stamped, identified=identified,
                   unidentified_because=because, host_bound_runs=int(bound.sum()))


# The host's costs show in eager time only where the GPU waits for the host: a run whose eager time is
# this much over its graph time (the kernels alone). Elsewhere the runs bound the costs from above and
# no more; a fit on few host-bound runs chose plans that ran 6.5-15% slower eagerly (issue 62).
HOST_BOUND_RATIO = 1.2
MIN_HOST_BOUND = 2 * len(LAUNCH_KINDS)
# On the host-bound runs: their host time (launches x costs) known to within this relative standard
# error (p90 over the runs), and their eager time fitted within this p90. The shipped H200 sections
# (dedicated host runs) give 11% and a few percent; 101 points of grid and workloads, as a 4.5-minute
# calibration measures, 41% and 39% (docs/data/cost-calibration's DeepSeek-V3 TP 8 FA3 runs).
HOST_SE_LIMIT, HOST_P90_LIMIT = 0.10, 0.15


def host_identification(bound: np.ndarray, residuals: np.ndarray, jac: np.ndarray, cost: float, h: np.ndarray,
                        launches: Optional[np.ndarray]) -> Tuple[bool, List[str]]:
    """Whether the runs pin down what eager pricing compares, and else why, in words. Each kind's cost on
    its own never is (every loop iteration launches an up-projection and a concat: identifiability names
    them), so what is asked is what a choice by eager time needs: enough host-bound runs, their host
    time (each run's launches x the costs) known to HOST_SE_LIMIT by the fit's own covariance (its
    Jacobian: sigma^2 (J'J)^+), and their eager time fitted to HOST_P90_LIMIT."""
    why: List[str] = []
    n = int(bound.sum())
    if n < MIN_HOST_BOUND:
        why.append(f"{n} of {bound.size} runs are host-bound (eager at least {HOST_BOUND_RATIO:g}x the graph time), "
                   f"{MIN_HOST_BOUND} needed: the launch costs are bounded from above, not measured")
        return False, why
    p90 = float(np.quantile(np.abs(residuals[bound]), 0.9))
    if p90 > HOST_P90_LIMIT:
        why.append(f"the host-bound runs' eager time is fitted at p90 |error| {100 * p90:.1f}% (> {100 * HOST_P90_LIMIT:g}%)")
    if launches is not None:
        sigma2 = 2 * cost / max(1, residuals.size - h.size)
        cov = sigma2 * np.linalg.pinv(jac.T @ jac)
        host = launches[bound] @ h
        se = np.sqrt(np.maximum(0.0, np.einsum("ij,jk,ik->i", launches[bound], cov, launches[bound])))
        rel = float(np.quantile(se / np.maximum(host, 1e-9), 0.9))
        if rel > HOST_SE_LIMIT:
            why.append(f"the host-bound runs' host time is known to {100 * rel:.0f}% (p90 relative standard error; at most "
                       f"{100 * HOST_SE_LIMIT:g}%)")
    return not why, why


def stamped_us(records: Sequence[dict], probe_ms: Optional[float], probe: str, fallback: Sequence[float]) -> Dict[str, float]:
    """The host's microseconds per launch of each kind that the runs' launch stamps measured
    (host_launch_us), stated at probe_ms: the median over the runs of each one's, scaled by its probe.
    A kind no run launched takes its value from fallback (the fitted costs, in LAUNCH_KINDS' order)."""
    out = {}
    for k, fit_value in zip(LAUNCH_KINDS, fallback):
        got = [r["host_launch_us"][k] / probe_scale(r, probe_ms, probe) for r in records if k in r.get("host_launch_us", {})]
        out[k] = float(np.median(got)) if got else float(fit_value)
    return out
