"""The one command's parts around the fit (issue 62): the time budget and its progress line, and the
held-out check on batches the command draws itself, with its verdict against the targets."""
from __future__ import annotations

import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

# The whole command, measuring, fit and held-out check, ends within about this many seconds by
# default: a 270 s calibration (101 points) met the targets on an H100; the check gets what is left.
DEFAULT_SECONDS = 510
# The calibration points' share of the budget, and what is kept back at the end for pricing the
# held-out runs and writing (the fit's own time comes out of the check's share).
FIT_SHARE, RESERVE_S = 0.55, 10.0
# The held-out check's targets per workload, by graph time (issue 62): what the shipped files meet.
TARGETS = {"median_abs_error": 0.02, "p90_abs_error": 0.05, "kendall_tau": 0.85}
PROGRESS_S = 5.0  # a progress line at most this often


class Budget:
    """The command's clock: when it started, when it must end (None: no bound), and each phase's end."""

    def __init__(self, seconds: Optional[float], clock: Callable[[], float] = time.monotonic):
        self.clock, self.seconds, self.start = clock, seconds, clock()

    def elapsed(self) -> float:
        return self.clock() - self.start

    def end(self) -> Optional[float]:
        return None if self.seconds is None else self.start + self.seconds

    def phase_end(self, share: float, reserve: float = 0.0) -> Optional[float]:
        """The clock time by which a phase that may use `share` of the whole, less `reserve`, ends."""
        return None if self.seconds is None else self.start + max(0.0, self.seconds * share - reserve)


class Progress:
    """`calibrate: measuring 37 of 212 points, 2:10 in, about 6:50 left` on stderr every PROGRESS_S
    seconds. The time left is this phase's (its points at their pace so far, at most its end) plus
    `after`, the seconds the later phases are given."""

    def __init__(self, what: str, total: int, budget: Budget, phase_end: Optional[float], after: float = 0.0,
                 stream=None, every: float = PROGRESS_S):
        self.what, self.total, self.budget, self.phase_end, self.after = what, total, budget, phase_end, after
        self.stream, self.every = stream, every
        self.began = self.last = budget.clock()

    def left(self, done: int) -> Optional[float]:
        now = self.budget.clock()
        pace = (now - self.began) / done * (self.total - done) if done else None
        bound = None if self.phase_end is None else max(0.0, self.phase_end - now)
        mine = bound if pace is None else pace if bound is None else min(pace, bound)
        return None if mine is None else mine + self.after

    def line(self, done: int) -> str:
        left = self.left(done)
        return (f"calibrate: {self.what} {done} of {self.total} points, {clock_text(self.budget.elapsed())} in"
                + ("" if left is None else f", about {clock_text(left)} left"))

    def tick(self, done: int, force: bool = False) -> None:
        now = self.budget.clock()
        if force or now - self.last >= self.every:
            self.last = now
            print(self.line(done), file=self.stream or sys.stderr, flush=True)


def clock_text(seconds: float) -> str:
    s = max(0, int(round(seconds)))
    return f"{s // 60}:{s % 60:02d}"


def verdict(rep: dict, targets: Dict[str, float] = TARGETS) -> dict:
    """Each workload's figures from validate.report with PASS or MISS against `targets` and what it
    missed; `met` where every workload passed (and there is one)."""
    out = {}
    for w, s in rep["workloads"].items():
        missed = [f"median {100 * s['median_abs_error']:.1f}% > {100 * targets['median_abs_error']:g}%"
                  ] if s["median_abs_error"] > targets["median_abs_error"] else []
        if s["p90_abs_error"] > targets["p90_abs_error"]:
            missed.append(f"p90 {100 * s['p90_abs_error']:.1f}% > {100 * targets['p90_abs_error']:g}%")
        tau = s["kendall_tau"]
        if tau is None or tau < targets["kendall_tau"]:
            missed.append("tau: no ranking" if tau is None else f"tau {tau:.2f} < {targets['kendall_tau']:g}")
        out[w] = {k: s[k] for k in ("batches", "runs", "settings", "median_abs_error", "p90_abs_error", "max_abs_error",
                                     "kendall_tau")}
        out[w].update(verdict="MISS" if missed else "PASS", missed=missed)
    return {"timing": rep["timing"], "targets": dict(targets), "workloads": out,
            "met": bool(out) and all(v["verdict"] == "PASS" for v in out.values())}


def table(v: dict) -> str:
    t = v["targets"]
    lines = [f"held-out check ({v['timing']} time; targets per workload: median |error| <= {100 * t['median_abs_error']:g}%, "
             f"p90 <= {100 * t['p90_abs_error']:g}%, Kendall tau >= {t['kendall_tau']:g}):",
             f"  {'workload':<16} {'batches':>7} {'runs':>5} {'median':>7} {'p90':>7} {'tau':>6}  verdict"]
    for w, s in v["workloads"].items():
        tau = "-" if s["kendall_tau"] is None else f"{s['kendall_tau']:.2f}"
        lines.append(f"  {w:<16} {s['batches']:>7} {s['runs']:>5} {100 * s['median_abs_error']:>6.1f}% "
                     f"{100 * s['p90_abs_error']:>6.1f}% {tau:>6}  {s['verdict']}"
                     + (f" ({'; '.join(s['missed'])})" if s["missed"] else ""))
    if not v["workloads"]:
        lines.append("  nothing measured in the time left: MISS")
    lines.append("held-out verdict: " + ("PASS: every workload meets the targets" if v["met"] else "MISS"))
    return "\n".join(lines) + "\n"


def heldout_groups(pts: Sequence) -> List[List]:
    """The held-out points grouped by batch (workload, scenario), in order: a group is measured whole
    or not at all, so that every setting of a batch is ranked on the same batches."""
    from .grid import grouped

    return grouped(pts, lambda p: (p.workload, p.scenario))


def measure_heldout(groups: Sequence[Sequence], measure: Callable, budget: Budget, end: Optional[float],
                    after: float = 0.0, stream=None) -> List[dict]:
    """Each group's points measured by measure(point, index in group, group index) -> record, whole
    groups only, until `end` (clock time; None: all). Each workload's first group is measured while
    any time is left, so that every workload gets a verdict; a later one only where it is expected to
    end in time, taking what its workload's groups took on average, and one that would not is passed
    over for the shorter ones after it. The first group is always measured. Long-context batches take
    several times a short chat's: the mean over all groups had started a coding-agent batch 40 s
    before the end, and the check ran 60 s past it."""
    total = sum(len(g) for g in groups)
    progress = Progress("held-out check:", total, budget, end, after, stream)
    records: List[dict] = []
    took: Dict[str, List[float]] = {}
    skipped = 0
    with Spent("held-out check: measured", budget, records, stream):
        for gi, group in enumerate(groups):
            mine = took.get(group[0].workload)
            if records and end is not None and budget.clock() + (sum(mine) / len(mine) if mine else 0.0) >= end:
                skipped += 1
                continue
            began = budget.clock()
            for i, p in enumerate(group):
                rec = measure(p, i, gi)
                rec.update(workload=p.workload, scenario=p.scenario)
                records.append(rec)
                progress.tick(len(records))
            took.setdefault(group[0].workload, []).append(budget.clock() - began)
    if skipped:
        print(f"calibrate: held-out check: {len(groups) - skipped} of {len(groups)} batches measured, the budget reached",
              file=stream or sys.stderr, flush=True)
    return records


def heldout_record(cost: dict, records: List[dict], timing: str, *, seed: Optional[int], batches: Optional[int],
                   buffers: Sequence[int], policies: Sequence[str], reps: Optional[int], warmup: Optional[int],
                   timings: Sequence[str], elapsed: Optional[Callable[[], float]] = None) -> dict:
    """The cost file's `heldout` field: the held-out runs priced by `cost`, each workload's figures and
    verdict by `timing`, with what was drawn and measured (`timings`, how the runs were timed; `seconds`,
    elapsed() read once they are priced, where they were measured here)."""
    from .validate import report

    v = verdict(report(cost, records, timing))
    # How the host section prices the same runs' eager time (no verdict: for the record).
    eager = report(cost, records, "eager") if cost.get("host") and any(r.get("eager_ms") for r in records) else None
    out = {"seed": seed, "batches_per_workload": batches, "buffer_tokens": list(buffers), "policies": list(policies),
           "reps": reps, "warmup": warmup, "timings": list(timings),
           **({} if elapsed is None else {"seconds": round(elapsed(), 1)}), **v}
    if eager is not None:
        out["eager"] = {w: {k: s[k] for k in ("median_abs_error", "p90_abs_error", "kendall_tau")}
                        for w, s in eager["workloads"].items()}
    return out


def measure_all(points: Sequence, measure: Callable, budget: Budget, end: Optional[float], after: float = 0.0,
                stream=None) -> List[dict]:
    """The calibration points measured in order by measure(point, index) -> record until `end` (clock
    time; None: all), a progress line every few seconds: a prefix of the interleaved points is a smaller
    set of the same spread. A closing line says where the seconds went."""
    progress = Progress("measuring", len(points), budget, end, after, stream)
    out: List[dict] = []
    with Spent("measured", budget, out, stream):
        for i, p in enumerate(points):
            if end is not None and budget.clock() >= end:
                print(f"calibrate: the measuring budget reached after {i} of {len(points)} points; fitting those",
                      file=stream or sys.stderr, flush=True)
                break
            rec = measure(p, i)
            if p.scenario:
                rec.update(workload=p.workload, scenario=p.scenario)
            out.append(rec)
            progress.tick(i + 1)
    return out


class Spent:
    """`calibrate: measured 53 points in 231 s (... s timed eager runs, ...)` on leaving: where the
    phase's seconds went (prefill.phases), so that a slow GPU or model shows what to cut. A TP 1
    calibration spent 4.4 s per point, of which its timed runs were 0.7 s. `records`: the list the
    phase fills, whose length is the points measured."""

    def __init__(self, what: str, budget: Budget, records: List[dict], stream=None):
        from ..prefill import phases

        self.phases, self.what, self.budget, self.records, self.stream = phases, what, budget, records, stream

    def __enter__(self) -> "Spent":
        self.began, self.before = self.budget.clock(), self.phases.seconds()
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None and self.records:
            took = self.budget.clock() - self.began
            print(f"calibrate: {self.what} {len(self.records)} points in {took:.0f} s "
                  f"({self.phases.words(self.phases.since(self.before), took)})", file=self.stream or sys.stderr, flush=True)


# The held-out runs: as validate times them in the checks docs/cost-model.md reports (3 runs, 1 warm-up).
HELDOUT_REPS, HELDOUT_WARMUP = 3, 1


class Device:
    """The GPU the calibration times, and how it times each point: the calibration's points as
    calibrate always has (each policy's replaying its graph first every other time), the held-out ones
    as validate does (each engine as it dispatches on this GPU)."""

    def __init__(self, args, torch, dims):
        self.args, self.torch, self.dims = args, torch, dims
        self.turns: Dict[str, int] = {}
        self.heldout_reps, self.heldout_warmup = HELDOUT_REPS, HELDOUT_WARMUP
        self.up_projection = "unfused"  # open() reads --loop

    def open(self) -> "Device":
        """The device's checks, one line each: a GPU, Triton for the fused merge, the kernel asked for."""
        from .._cli import UsageError

        torch, args = self.torch, self.args
        if not torch.cuda.is_available():
            build = "a CPU-only build of torch" if torch.version.cuda is None else f"torch {torch.__version__}"
            from .options import given

            where = f"--device {args.device}" if given(args, "device") else "calibrate"
            raise UsageError(f"{where}: the calibration times a CUDA GPU, and {build} sees none here; run it on "
                             f"a machine with one" + (" (pip install torch, a CUDA build)" if torch.version.cuda is None else "")
                             + ", or fit saved measurements with --refit")
        from ..prefill.__main__ import _device, attention_kernel

        self.device = _device(torch, args.device)
        if self.device.type != "cuda":
            raise UsageError(f"--device {args.device}: the calibration times a GPU; give cuda or cuda:N (or leave it out)")
        from ..prefill import merge

        if merge.triton is None:
            raise UsageError("the executor's fused merge needs Triton on CUDA (pip install triton)")
        from ..prefill.attention import kernel_title
        from . import device_info

        self.kernel = attention_kernel(args.attention, self.device)
        # --loop fused: every point runs mlaplan's own loop (prefill's NAME+fused), whose fused_up kernel
        # falls back to the torch reference where Triton cannot run it: refused here instead of timed.
        self.up_projection = "fused" if args.loop == "fused" else "unfused"
        if self.up_projection == "fused":
            from ..prefill import fused_up

            why = fused_up.why_reference(torch.empty(0, self.dims.latent, device=self.device, dtype=torch.bfloat16), self.dims)
            if why:
                raise UsageError(f"--loop fused: the fused up-projection cannot run here ({why}); calibrate --loop engine")
        self.kernel_title = kernel_title(self.kernel)
        self.info = device_info.describe(torch, self.device)
        return self

    def measure_calibration(self, p, i: int) -> dict:
        from .measure import measure_point, replays_first

        a = self.args
        turn = self.turns.get(p.policy, 0)
        self.turns[p.policy] = turn + 1
        # The eager runs only serve the host section, which graph time without --host does not identify
        # (every H100 run's was "not identified"): skipping them, their CPU waits and dispatch probes
        # times twice the points in the budget (a DeepSeek-V3 TP 1 point on an H100: 1.4 s of 3.2 s).
        eager = heldout_eager(a)
        return measure_point(p, self.dims, self.torch.bfloat16, self.device, a.reps, a.warmup, self.kernel, a.seed + i,
                             settle_ms=a.settle_ms, host_reps=a.host_reps, graph_first=replays_first(turn),
                             cpu_wait_s=a.cpu_wait_s, reheat_ms=a.reheat_ms, eager=eager,
                             up_projection=self.up_projection)

    def measure_heldout(self, p, i: int, group: int) -> dict:
        from .._cli import ENGINES
        from .fit import HOST_REPS
        from .measure import AUTO_PATHS, measure_point, replays_first

        a = self.args
        first = replays_first(ENGINES.index(p.policy), a.buffer_tokens.index(p.buffer_tokens), group)
        return measure_point(p, self.dims, self.torch.bfloat16, self.device, self.heldout_reps, self.heldout_warmup, self.kernel,
                             1000 + group, AUTO_PATHS, a.settle_ms, host_reps=HOST_REPS, graph_first=first,
                             cpu_wait_s=a.cpu_wait_s, reheat_ms=a.reheat_ms, eager=heldout_eager(a),
                             up_projection=self.up_projection)


def heldout_eager(args) -> bool:
    """Whether the runs (the fitted points and the held-out ones) are timed eagerly too: where the fit or
    the verdict is by eager time, or --host asks for the host section. A check by graph time replays the graphs alone: the eager runs, their
    probes and the host's dispatch took half of an H100 Kimi-K2 check's 166 s, and a DeepSeek-V3 TP 1
    coding-agent batch over 120 s, for figures no verdict reads (the order of the two timings moved
    that check's graph errors by 0.4 points at most)."""
    return args.timing == "eager" or bool(args.host)


def open_gpu(args) -> Device:
    """torch and the model's dimensions, each refused in one line (what to install; the model's fix);
    Device.open then asks for the GPU, after the scenario files are read."""
    from .._cli import UsageError
    from .records import require_torch

    torch = require_torch("fit saved measurements with --refit")
    from ..prefill.model import model_dims

    try:
        dims = model_dims(args.model, args.tp)
    except ValueError as e:
        msg = str(e)
        raise UsageError(msg if msg.startswith("--") else f"--model: {msg}") from None
    return Device(args, torch, dims)
