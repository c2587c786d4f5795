"""python -m mlaplan.calibrate.validate --cost FILE --scenarios A.json B.json ... --buffer-tokens LIST

Predicts each batch's layer time under each policy and buffer with a cost file, measures it with the
executor (or reads measurements saved with --save), and reports the error and the ranking: per
workload (one scenario file each), the median and p90 of |predicted / measured - 1|, and Kendall's
tau between the settings (buffer, policy) ranked by predicted and by measured mean time.

Exit status: 0 the targets are met (per workload median |error| <= 5%, p90 <= 15% for graph time and
10% for eager, tau >= 0.8; for eager time also the eager / graph ratio within 0.1 of the measured at
every setting of 8K rows and below), 1 missed, 2 bad usage or input, 3 a device failure.
"""
from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from typing import Dict, List, Optional

import numpy as np

# Torch-free: with --measured (no GPU) torch is never imported, which alone takes seconds on a loaded host.
from .._cli import (CPU_SLOW, CPU_WAIT_HELP, CPU_WAIT_S, KERNELS, REHEAT_HELP, SETTLE_MS, UsageError, _count, _positive_list,
                    _seconds, claim_outputs, exit_with, write_output)
from .options import Parser, refuse_given

MEDIAN_TARGET, TAU_TARGET = 0.05, 0.8
# The p90 by timing: eager time's is tighter, since a model of the host that only held at the median
# would mislead on exactly the host-bound settings an eager engine's buffer is chosen among.
P90_TARGET = {"graph": 0.15, "eager": 0.10}
# Eager time's other target: on every host-bound setting (8K rows and below, where a step has the most
# chunks), the eager / graph ratio predicted within 0.1 of the measured.
RATIO_BUFFER, RATIO_TOLERANCE = 8192, 0.1
MEASURED_FORMAT = "mlaplan-validation-measurements"
# What validate measures without --model, --tp or a --cost file to take them from.
DEFAULT_MODEL, DEFAULT_TP = "deepseek-v3", 8
# What only measuring reads: with --measured, which measures nothing, each is refused rather than ignored.
MEASURING = ("policy", "model", "tp", "buffer_tokens", "reps", "warmup", "rounds", "settle_ms", "cpu_wait_s", "reheat_ms",
             "max_seconds", "batches", "device", "attention", "host")


EXAMPLES = """examples:
  mlaplan gen --workload coding-agent --seed 81 --batches 4 -o held-out.json      (batches no fit saw)
  python -m mlaplan.calibrate.validate --cost my-gpu.json --scenarios held-out.json --max-seconds 300
  python -m mlaplan.calibrate.validate --cost my-gpu-eager.json --scenarios held-out.json --host --save runs.json
  python -m mlaplan.calibrate.validate --cost my-gpu-eager.json --measured runs.json --timing eager -o report.md

"""


def parser() -> Parser:
    p = Parser(prog="python -m mlaplan.calibrate.validate", description=__doc__.split("\n\n")[1].replace("\n", " "),
               epilog=EXAMPLES + __doc__.split("\n\n")[2].strip(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cost", metavar="FILE.json", help="the cost file to check (without it: measure and --save only)")
    p.add_argument("--scenarios", nargs="+", action="extend", metavar="FILE.json", help="held-out batches, one file per workload (mlaplan gen)")
    p.add_argument("--buffer-tokens", type=_positive_list, default=[8192, 16384, 65536, 131072, 262144], metavar="N[,N...]",
                   help="the buffer sizes measured, in rows (default 8192,16384,65536,131072,262144)")
    p.add_argument("--policy", default="all", metavar="LIST", help="all (default) or a comma list of engines")
    p.add_argument("--model", metavar="NAME", help="the model measured, a preset (docs/models.md; default: the --cost file's, "
                   f"else {DEFAULT_MODEL})")
    p.add_argument("--tp", type=_count(1), metavar="N", help=f"its tensor-parallel ranks (default: the --cost file's, else {DEFAULT_TP})")
    p.add_argument("--reps", type=_count(1), default=5, metavar="N", help="timed runs per setting, the median kept (default 5)")
    p.add_argument("--warmup", type=_count(0), default=2, metavar="N", help="untimed runs first (default 2)")
    p.add_argument("--rounds", type=_count(1, 1000), default=1, metavar="N",
                   help="measure each batch's settings N times over, the order reversed every other round, and "
                        "keep the median of the rounds and their spread (eager time drifts with the host; default 1)")
    p.add_argument("--settle-ms", type=_count(0), default=SETTLE_MS, metavar="MS", help="on the GPU, run each timing back to back this long first, so it sees the sustained clock (default 250; docs/cost-model.md)")
    p.add_argument("--cpu-wait-s", type=_count(0, 3600), default=CPU_WAIT_S, metavar="S", help=CPU_WAIT_HELP)
    p.add_argument("--reheat-ms", type=_count(0, 10000), default=0, metavar="MS", help=REHEAT_HELP)
    p.add_argument("--measured", nargs="+", action="extend", metavar="FILE.json", help="measurements saved by --save, instead of measuring")
    p.add_argument("--save", metavar="FILE.json", help="write the measurements (atomically)")
    p.add_argument("--timing", choices=("eager", "graph"), help="which measured time to compare (default: the cost file's)")
    p.add_argument("--host", action="store_true", default=None,  # None: whether it was given is seen (options.Parser)
                   help="comparing graph time, also time each setting eagerly with the host's dispatch (what a later "
                        "--timing eager or calibrate --host-from reads from --save); without --cost they always are")
    p.add_argument("-o", "--output", metavar="FILE.md", help="write the report (Markdown) to FILE instead of stdout")
    p.add_argument("--json", metavar="FILE.json", help="also write the report's figures as JSON")
    p.add_argument("--max-seconds", type=_seconds, metavar="S", help="stop measuring after S seconds (whole batches; with --rounds, whole rounds of a batch)")
    p.add_argument("--batches", type=_count(1), metavar="N",
                   help="measure only the first N batches of each scenario file (every workload gets its share of the time)")
    p.add_argument("--device", default="auto", metavar="DEV", help="auto (default: cuda where there is a GPU), cuda or cuda:N")
    p.add_argument("--attention", choices=KERNELS, default="auto",
                   help="the executor's attention kernel (default auto: FlashAttention-3 on SM90 where a build imports)")
    return p


def cost_kernel(cost: dict) -> Optional[str]:
    """The attention kernel a cost file was calibrated with: the first word of its kernels.attention,
    as calibrate writes it ("fa3 (FlashAttention-3, ...)"); None where that names no kernel the
    executor runs (a file written by hand)."""
    word = (cost.get("attention") or "").split(" ", 1)[0]
    return word if word in KERNELS and word != "auto" else None


def cost_gpu(cost: dict) -> Optional[str]:
    """The GPU a cost file was calibrated on (its `gpu`, as calibrate writes torch's device name); None
    where it names none."""
    gpu = cost.get("gpu")
    return gpu if isinstance(gpu, str) and gpu else None


def check_alike(cost_path: str, cost: dict, runs: Optional[str], model: str, tp: int, kernel: Optional[str],
                gpu: Optional[str] = None) -> None:
    """The runs (a --measured file; None: those the options ask for) measured what the cost file
    prices: its model, TP and, where both name one, attention kernel and GPU (runs on the CPU, the
    executor's own check, are priced by any file). Else one line and exit 2: a report pricing one
    model's runs with another's file reads as a large error of the model, and an H200 file's
    prices against an H100's runs as one of the host costs."""
    gpu = None if gpu == "CPU" else gpu
    for key, theirs, mine in (("model", model, cost["model"]), ("tp", tp, cost["tp"]), ("attention", kernel, cost_kernel(cost)),
                              ("gpu", gpu, cost_gpu(cost))):
        if theirs is None or mine is None or theirs == mine:
            continue
        if key == "gpu" and runs is None:
            raise UsageError(f"--device: this machine's GPU is {theirs}, but {cost_path} prices the {mine}; measure on the "
                             f"{mine}, or give a cost file calibrated on the {theirs}")
        name = f"TP {theirs}" if key == "tp" else theirs
        if runs is None:
            raise UsageError(f"--{key}: {theirs}, but {cost_path} prices {mine}; give --{key} {mine} (or leave it out: the "
                             f"file's is the default), or a cost file for {name}")
        raise UsageError(f"{runs}: {key}: {theirs!r}, but {cost_path} prices {mine!r}; price these runs with a cost file "
                         f"for {name} (costs/)")


def measure(args, cost: Optional[dict] = None, eager: bool = True) -> dict:
    """The held-out runs the options ask for; with the cost file to check, refused before any timing
    where this machine's kernel or GPU is not the file's. eager False: on the GPU the graphs alone, no
    eager runs, host dispatch timing or wait for the CPU (half a TP 1 batch's time on an H100)."""
    from .records import require_torch

    if not args.scenarios:
        raise UsageError("--scenarios: give the held-out batches to measure (or --measured FILE)")
    torch = require_torch("report saved runs with --measured")
    from ..prefill import phases
    from ..prefill.__main__ import _device, attention_kernel
    from ..prefill.model import model_dims
    from ..prefill.schedule import parse_engines
    from .device_info import describe
    from .grid import Point, grouped, scenario_batches, take_turns
    from ..prefill.attention import kernel_title
    from .fit import HOST_REPS
    from .measure import AUTO_PATHS, combine_rounds, measure_point, replays_first

    engines = parse_engines(args.policy)
    model, tp = args.model or DEFAULT_MODEL, args.tp or DEFAULT_TP
    dims = model_dims(model, tp)
    device = _device(torch, args.device)
    kernel = attention_kernel(args.attention, device)
    # The loop the file prices: a file of mlaplan's fused loop is checked on runs of that loop.
    up_projection = cost["up_projection"] if cost else "unfused"
    expect_kernel = cost_kernel(cost) if cost else None
    if expect_kernel is not None and kernel != expect_kernel:  # before the time is spent
        raise UsageError(f"--attention: {args.attention} runs {kernel} here, but {args.cost} prices {expect_kernel}; "
                         f"give --attention {expect_kernel} or a cost file for {kernel}")
    machine = describe(torch, device)
    if cost is not None:  # and on the GPU the file was calibrated on
        check_alike(args.cost, cost, None, None, None, None, machine["gpu"])
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    records = []
    import time

    start = time.monotonic()

    def out_of_time() -> bool:
        return args.max_seconds is not None and time.monotonic() - start > args.max_seconds

    stopped = set()  # the workloads whose scenarios --max-seconds cut off
    from .._mlaplan import printable

    # Each workload's first batch, then each's second...: a --max-seconds too short for every batch measures
    # some of every workload, as calibrate's points take turns, not only the first file's. `order`: the
    # batch's place in the files, where its runs are saved.
    batches = list(enumerate(scenario_batches(args.scenarios)))
    for order, (workload, i, s) in take_turns(grouped(batches, lambda b: b[1][0])):
        # The progress lines name them: the file's name and the scenario's, escaped as the CLI's.
        shown = printable(f"{workload} {s['name']}")
        if workload in stopped or (args.batches is not None and i >= args.batches):
            continue
        # Not before the first batch: the time counts from the start, and a loaded host may spend it on
        # reading the batches.
        if records and out_of_time():
            print(f"validate: --max-seconds reached; {shown} and after not measured", file=sys.stderr)
            stopped.add(workload)
            continue
        settings = [(buffer, engine) for buffer in args.buffer_tokens for engine in engines]
        rounds = {k: [] for k in settings}
        batch_start, spent = time.monotonic(), phases.seconds()
        for r in range(args.rounds):
            if r and out_of_time():
                # Whole rounds are kept: every setting of the batch measured as often, the time asked for
                # overrun by one round, not by the batch's remaining rounds.
                print(f"validate: --max-seconds reached; {shown} measured in {r} of {args.rounds} rounds, "
                      f"the batches after it not", file=sys.stderr)
                stopped.add(workload)
                break
            # Every other round backwards, so that a drift of the machine falls on every setting alike.
            for buffer, engine in settings if r % 2 == 0 else reversed(settings):
                p = Point(list(s["cache_lengths"]), s["new"], int(s["page_size"]), buffer, engine)
                rounds[buffer, engine].append(measure_point(
                    p, dims, dtype, device, args.reps, args.warmup, kernel, 1000 + i, AUTO_PATHS, args.settle_ms,
                    host_reps=HOST_REPS, eager=eager,
                    graph_first=replays_first(engines.index(engine), args.buffer_tokens.index(buffer), i, r),
                    cpu_wait_s=args.cpu_wait_s, reheat_ms=args.reheat_ms, up_projection=up_projection))
        for k in settings:
            rec = combine_rounds(rounds[k])
            rec.update(workload=workload, scenario=s["name"])
            records.append((order, rec))
        # Its time, so that a session can size --max-seconds, --reps and --rounds to its slot.
        taken, took = sum(len(v) for v in rounds.values()), time.monotonic() - batch_start
        print(f"validate: {shown} measured, {taken} runs in {took:.0f} s "
              f"({phases.words(phases.since(spent), took)})", file=sys.stderr, flush=True)
    import datetime

    # date and dtype let calibrate --host-from pool these runs into a later host fit.
    return {"format": MEASURED_FORMAT, "model": model, "tp": tp, "heads": dims.heads, **machine,
            "dtype": "bf16" if dtype == torch.bfloat16 else "fp32", "date": datetime.date.today().isoformat(),
            "attention": kernel, "attention_title": kernel_title(kernel), "up_projection": up_projection,
            "settle_ms": args.settle_ms, "cpu_wait_s": args.cpu_wait_s, **({"reheat_ms": args.reheat_ms} if args.reheat_ms else {}),
            **({"rounds": args.rounds} if args.rounds > 1 else {}),
            "records": [rec for _, rec in sorted(records, key=lambda r: r[0])]}


def read_cost(path: str) -> dict:
    """The cost file as `run --cost` reads it (the CLI's reader: every field checked, 256 MiB at most)."""
    from .. import _mlaplan

    return _mlaplan.read_cost_model(path)


def predict_us(cost: dict, rec: dict, timing: str = "graph") -> float:
    """The layer's time as `run --cost` predicts it: the terms times the coefficients, or for eager
    time from a graph-timed file the two clocks with its host section, as --timing eager prices it."""
    from .fit import probe_scale
    from .grid import Point, eager_us, features, record_sm

    g = cost["geometry"]
    p = Point(rec["cache"], rec["new"], rec["page_size"], rec["buffer_tokens"], rec["policy"])
    if timing == "eager" and cost.get("timing") != "eager":
        h = cost["host"]
        scale = probe_scale(rec, h.get("probe_ms"), h.get("probe", "cpu"))  # the host's speed at this run against the file's
        return eager_us(p, cost["coefficients"], {k: v * scale for k, v in h["launch_us"].items()}, h["pad_v"], g["heads"],
                        g["sms"], g["blocks_per_sm"], g["tile_queries"], record_sm(rec), g.get("scheduler", "grid"),
                        g.get("small_gemm_rows", 0))
    f = features(p, g["heads"], g["sms"], g["blocks_per_sm"], g["tile_queries"], record_sm(rec), g.get("scheduler", "grid"),
                 g.get("small_gemm_rows", 0))
    return sum(cost["coefficients"].get(k, 0.0) * v for k, v in f.items())  # an optional term left out is 0


def kendall_tau(a, b) -> float:
    from scipy.stats import kendalltau

    tau = float(kendalltau(a, b).statistic) if len(a) > 1 else float("nan")
    return None if np.isnan(tau) else tau  # one setting (or all tied) ranks nothing: null in the JSON, a miss


# What each probe is, in the report's words (fit.PROBES).
PROBE_WORDS = {"cpu": "CPU probe", "dispatch": "dispatch probe (a small layer's issue time)"}


def report(cost: dict, records: List[dict], timing: str) -> dict:
    from .fit import PROBES, Progress

    key = f"{timing}_ms"
    by_workload: Dict[str, List[dict]] = defaultdict(list)
    progress = Progress("pricing the runs", "validate")
    for i, r in enumerate(records):
        progress.tick(f"{i} of {len(records)} runs priced")
        if r.get(key):
            r = dict(r, predicted_ms=predict_us(cost, r, timing) / 1e3)
            r["error"] = r["predicted_ms"] / r[key] - 1
            by_workload[r["workload"]].append(r)
    out = {"timing": timing, "workloads": {}, "settings": []}
    all_errors = []
    # The host speed the file's costs are stated at: eager predictions scaled by each run's probe
    # against it (predict_us) also get their price at it.
    ref = (cost.get("host") or {}).get("probe_ms") if timing == "eager" else None
    kind = (cost.get("host") or {}).get("probe", "cpu")
    for w, rs in by_workload.items():
        errs = np.abs([r["error"] for r in rs])
        all_errors.extend(errs)
        settings = defaultdict(list)
        for r in rs:
            settings[(r["policy"], r["buffer_tokens"])].append(r)
        keys = sorted(settings)
        measured = [float(np.mean([r[key] for r in settings[k]])) for k in keys]
        # Rounded to a nanosecond: settings whose plans cost the same are tied, whatever the float
        # sums' last bits (which differ between builds), before Kendall's tau-b counts ties.
        predicted = [round(float(np.mean([r["predicted_ms"] for r in settings[k]])), 6) for k in keys]
        for k, m, p in zip(keys, measured, predicted):
            out["settings"].append({"workload": w, "policy": k[0], "buffer_tokens": k[1], "batches": len(settings[k]),
                                    "measured_ms": m, "predicted_ms": p, "error": p / m - 1})
            if ref:  # priced at the file's own host speed: what a policy choosing by the file compares
                nominal = [predict_us(cost, dict(r, **{PROBES[kind]: None}), timing) / 1e3 for r in settings[k]]
                out["settings"][-1]["predicted_nominal_ms"] = float(np.mean(nominal))
        out["workloads"][w] = {"runs": len(rs), "batches": len({r["scenario"] for r in rs}), "settings": len(keys),
                               "median_abs_error": float(np.median(errs)), "p90_abs_error": float(np.quantile(errs, 0.9)),
                               "max_abs_error": float(np.max(errs)), "kendall_tau": kendall_tau(measured, predicted)}
        # By which timing came first, where runs were timed both ways: an order effect (the card at its
        # power cap runs whichever comes second slower) shows as the two sides' signed errors apart.
        sides = {name: [r["error"] for r in rs if bool(r.get("graph_first")) == first]
                 for name, first in (("graph_first", True), ("eager_first", False))}
        if all(sides.values()):
            out["workloads"][w]["order"] = {name: {"runs": len(e), "median_error": float(np.median(e))} for name, e in sides.items()}
        # How far the eager runs of one setting spread ((max - min) / median over the reps): where the
        # host sets the pace, its noise bounds what any prediction of eager time can do.
        spreads = [r["eager_spread_ms"] / r["eager_ms"] for r in rs if r.get("eager_spread_ms") is not None and r.get("eager_ms")]
        if timing == "eager" and spreads:
            out["workloads"][w].update(eager_spread_median=float(np.median(spreads)),
                                       eager_spread_p90=float(np.quantile(spreads, 0.9)))
        # And between rounds of the same setting (--rounds), where the host's drift shows.
        drift = [r["eager_round_spread_ms"] / r["eager_ms"] for r in rs
                 if r.get("eager_round_spread_ms") is not None and r.get("eager_ms")]
        if timing == "eager" and drift:
            out["workloads"][w].update(eager_round_spread_median=float(np.median(drift)),
                                       eager_round_spread_p90=float(np.quantile(drift, 0.9)))
    # The host CPU's speed at the eager runs (--cpu-wait-s): how many were timed in a slow phase,
    # against the fastest probe of the whole measurement.
    probes = [r["cpu_probe_ms"] for rs in by_workload.values() for r in rs if r.get("cpu_probe_ms")]
    if timing == "eager" and probes:
        slow = CPU_SLOW * min(probes)
        out["cpu_slow_runs"] = sum(p > slow for p in probes)
        out["cpu_probed_runs"] = len(probes)
        if ref:
            out["cpu_probe_median_ms"] = float(np.median(probes))
        # And each workload's error over its runs timed at full speed, where some were not.
        for w, rs in by_workload.items() if out["cpu_slow_runs"] else ():
            fast = np.abs([r["error"] for r in rs if r.get("cpu_probe_ms") and r["cpu_probe_ms"] <= slow])
            if fast.size:
                out["workloads"][w].update(full_speed_runs=int(fast.size), full_speed_median_abs_error=float(np.median(fast)),
                                           full_speed_p90_abs_error=float(np.quantile(fast, 0.9)))
    # Each run's host costs were scaled by its probe of the file's kind against the file's (predict_us).
    scaled = [r[PROBES[kind]] for rs in by_workload.values() for r in rs if r.get(PROBES[kind])]
    if ref and scaled:
        out.update(host_probe=kind, host_probe_ms=ref, host_probe_median_ms=float(np.median(scaled)))
    if timing == "eager":
        out["ratio"] = ratio_check(cost, [r for rs in by_workload.values() for r in rs])
    if all_errors:
        out["overall"] = {"runs": len(all_errors), "median_abs_error": float(np.median(all_errors)),
                          "p90_abs_error": float(np.quantile(all_errors, 0.9))}
    out["targets"] = targets(out)
    if timing == "graph" and out["workloads"]:  # the stricter targets the shipped files are held to, beside the gate's
        from .oneshot import verdict

        out["shipped_targets"] = verdict(out)
    return out


def targets(rep: dict) -> dict:
    """The report's verdict: each target, and each miss in words (`missed`); `met` where there is none."""
    timing = rep["timing"]
    t = {"median_abs_error": MEDIAN_TARGET, "p90_abs_error": P90_TARGET[timing], "kendall_tau": TAU_TARGET}
    missed = []
    for w, s in rep["workloads"].items():
        for key, word in (("median_abs_error", "median"), ("p90_abs_error", "p90")):
            if s[key] > t[key]:
                missed.append(f"{w} {word} {100 * s[key]:.1f}% > {100 * t[key]:g}%")
        if s["kendall_tau"] is None:
            missed.append(f"{w} tau: no ranking (one setting, or all tied)")
        elif s["kendall_tau"] < TAU_TARGET:
            missed.append(f"{w} tau {s['kendall_tau']:.3f} < {TAU_TARGET:g}")
    q = rep.get("ratio")
    if q is not None:
        t.update(ratio_tolerance=RATIO_TOLERANCE, ratio_buffer_at_most=RATIO_BUFFER)
        if q["misses"]:
            missed.append(f"eager / graph ratio off by more than {RATIO_TOLERANCE:g} at {len(q['misses'])} of {q['settings']} "
                          f"settings of {RATIO_BUFFER} rows and below")
    return {**t, "met": bool(rep["workloads"]) and not missed, "missed": missed}


def ratio_check(cost: dict, records: List[dict]) -> dict:
    """The eager / graph ratio of each host-bound setting (workload, policy, buffer of RATIO_BUFFER rows
    or fewer; its batches' eager time over their graph time), measured on the same runs and predicted,
    and the settings where the two differ by more than RATIO_TOLERANCE. Each setting also carries the
    measured ratio's own range, its runs' (max - min) eager time over their graph time (None where a
    run lacks its spread): a miss smaller than that is inside the measurement's own noise. Measured in
    rounds (validate --rounds), each also carries `rounds_range`, its runs' (max - min) over the rounds
    over their graph time, and `rounds_apart` counts the settings whose rounds differ by more than the
    tolerance: there the measurement does not repeat within the target, whatever predicts it."""
    sums: Dict[tuple, List[float]] = defaultdict(lambda: [0.0] * 6)
    for r in records:
        if r["buffer_tokens"] <= RATIO_BUFFER and r.get("graph_ms") and r.get("eager_ms"):
            s = sums[(r["workload"], r["policy"], r["buffer_tokens"])]
            s[0] += r["eager_ms"]
            s[1] += r["graph_ms"]
            s[2] += r["predicted_ms"]
            s[3] += predict_us(cost, r, "graph") / 1e3
            s[4] += r["eager_spread_ms"] if r.get("eager_spread_ms") is not None else math.nan
            s[5] += r["eager_round_spread_ms"] if r.get("eager_round_spread_ms") is not None else math.nan
    # A file whose coefficients price the setting's graph time 0 predicts no ratio (null), which misses.
    rows = [{"workload": k[0], "policy": k[1], "buffer_tokens": k[2], "measured": s[0] / s[1],
             "predicted": s[2] / s[3] if s[3] > 0 else None,
             "measured_range": None if math.isnan(s[4]) else s[4] / s[1],
             **({} if math.isnan(s[5]) else {"rounds_range": s[5] / s[1]})} for k, s in sorted(sums.items())]
    misses = [x for x in rows if x["predicted"] is None or abs(x["predicted"] - x["measured"]) > RATIO_TOLERANCE]
    inside = [x for x in misses if x["measured_range"] is not None and x["predicted"] is not None
              and abs(x["predicted"] - x["measured"]) <= x["measured_range"]]
    out = {"buffer_at_most": RATIO_BUFFER, "tolerance": RATIO_TOLERANCE, "settings": len(rows),
           "within": len(rows) - len(misses), "misses": misses, "misses_within_measured_range": len(inside)}
    rounds = [x["rounds_range"] for x in rows if "rounds_range" in x]
    if rounds:
        out.update(settings_in_rounds=len(rounds), rounds_apart=sum(v > RATIO_TOLERANCE for v in rounds),
                   rounds_range_median=float(np.median(rounds)))
    return out


def markdown(rep: dict, cost_path: str) -> str:
    lines = [f"Predicted by `{cost_path}` against the executor's {rep['timing']} time (one layer).", "",
             "| workload | batches | runs | settings | median abs error | p90 abs error | max abs error | Kendall tau |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for w, s in rep["workloads"].items():
        lines.append(f"| {w} | {s['batches']} | {s['runs']} | {s['settings']} | {100 * s['median_abs_error']:.1f}% | "
                     f"{100 * s['p90_abs_error']:.1f}% | {100 * s['max_abs_error']:.1f}% | "
                     f"{'-' if s['kendall_tau'] is None else format(s['kendall_tau'], '.3f')} |")
    if "overall" in rep:
        o = rep["overall"]
        lines.append(f"| all | | {o['runs']} | | {100 * o['median_abs_error']:.1f}% | {100 * o['p90_abs_error']:.1f}% | | |")
    t = rep["targets"]
    ratio = (f", and the eager / graph ratio within {t['ratio_tolerance']:g} of the measured at every setting of "
             f"{t['ratio_buffer_at_most']} rows and below" if "ratio_tolerance" in t else "")
    lines += ["", f"Targets: median |error| <= {100 * t['median_abs_error']:g}%, p90 <= {100 * t['p90_abs_error']:g}% and "
                  f"Kendall tau >= {t['kendall_tau']:g} per workload{ratio}. "
                  + ("**Met.**" if t["met"] else "**Missed:** " + "; ".join(t["missed"]) + ".")]
    if "shipped_targets" in rep:
        v = rep["shipped_targets"]
        lines += ["", f"Against the shipped cost files' targets (median <= {100 * v['targets']['median_abs_error']:g}%, p90 <= "
                      f"{100 * v['targets']['p90_abs_error']:g}%, tau >= {v['targets']['kendall_tau']:g}, calibrate's held-out "
                      "check): " + "; ".join(f"{w} {s['verdict']}" + (f" ({', '.join(s['missed'])})" if s["missed"] else "")
                                             for w, s in v["workloads"].items()) + "."]
    if "cpu_slow_runs" in rep:
        lines += ["", f"The host CPU was in a slow phase (its probe over {CPU_SLOW:g}x the fastest) at "
                      f"{rep['cpu_slow_runs']} of the {rep['cpu_probed_runs']} eager runs probed (--cpu-wait-s)."]
        fast = [f"{w} {100 * s['full_speed_median_abs_error']:.1f}%, {100 * s['full_speed_p90_abs_error']:.1f}% "
                f"({s['full_speed_runs']} runs)" for w, s in rep["workloads"].items() if "full_speed_runs" in s]
        if fast:
            lines.append("Over the runs timed at full speed only, median and p90 of |error|: " + "; ".join(fast) + ".")
    if "host_probe_ms" in rep:
        lines.append(f"Each run's host costs are scaled by its {PROBE_WORDS[rep.get('host_probe', 'cpu')]} against the file's "
                     f"{rep['host_probe_ms']:.3f} ms (the runs' median: {rep['host_probe_median_ms']:.3f} ms).")
    order = [f"{w} {100 * s['order']['graph_first']['median_error']:+.1f}% ({s['order']['graph_first']['runs']} runs) "
             f"against {100 * s['order']['eager_first']['median_error']:+.1f}% ({s['order']['eager_first']['runs']})"
             for w, s in rep["workloads"].items() if "order" in s]
    if order:
        lines += ["", "Median signed error of the runs that replayed their graph first, against those timed eagerly first: "
                  + "; ".join(order) + "."]
    spread = [f"{w} {100 * s['eager_spread_median']:.1f}% (p90 {100 * s['eager_spread_p90']:.1f}%)"
              for w, s in rep["workloads"].items() if "eager_spread_median" in s]
    if spread:
        lines += ["", "The eager runs' spread, (max - min) / median over each run's repetitions, median per workload: "
                  + "; ".join(spread) + "."]
    drift = [f"{w} {100 * s['eager_round_spread_median']:.1f}% (p90 {100 * s['eager_round_spread_p90']:.1f}%)"
             for w, s in rep["workloads"].items() if "eager_round_spread_median" in s]
    if drift:
        lines += ["", "Between rounds, (max - min) / median of each setting's rounds (the time compared is their median): "
                  + "; ".join(drift) + "."]
    q = rep.get("ratio")
    if q and q["settings"]:
        miss = "; ".join(f"{x['workload']} {x['policy']} at {x['buffer_tokens']}: "
                         + ("none predicted (the file prices its graph time 0)" if x["predicted"] is None
                            else f"{x['predicted']:.2f} predicted")
                         + f", {x['measured']:.2f} measured" + ("" if x.get("measured_range") is None else
                                                                f" (its repetitions span {x['measured_range']:.2f})")
                         for x in q["misses"])
        lines += ["", f"The eager / graph ratio at {q['buffer_at_most']} rows and below, predicted within {q['tolerance']:g} of "
                      f"the measured (the same runs) at {q['within']} of {q['settings']} settings" + (f"; not at {miss}." if miss else ".")]
        if q["misses"]:
            lines.append(f"{q.get('misses_within_measured_range', 0)} of the {len(q['misses'])} misses are smaller than the measured "
                         "ratio's own range, (max - min) over its runs' repetitions divided by their graph time.")
        if "settings_in_rounds" in q:
            lines.append(f"Between rounds the measured ratio itself moved by more than {q['tolerance']:g} at {q['rounds_apart']} of "
                         f"{q['settings_in_rounds']} settings (the rounds' range over graph time, median "
                         f"{q['rounds_range_median']:.2f}): there a repeat of the measurement misses it too.")
    lines += ["", "| workload | policy | buffer | measured ms | predicted ms | error |", "|---|---|---:|---:|---:|---:|"]
    for s in rep["settings"]:
        lines.append(f"| {s['workload']} | {s['policy']} | {s['buffer_tokens']} | {s['measured_ms']:.3f} | "
                     f"{s['predicted_ms']:.3f} | {100 * s['error']:+.1f}% |")
    # The workloads, scenarios and paths come from the user's files: control bytes escaped, as the CLI's.
    from .._mlaplan import printable

    return "\n".join(printable(line) for line in lines) + "\n"


def met(rep: dict) -> bool:
    return rep["targets"]["met"]


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.measured and args.scenarios:
        raise UsageError("--scenarios: they are measured, and --measured gives the measurements; give one of them")
    if args.measured and args.save:
        raise UsageError("--save: it saves what this run measures, and --measured measures nothing; drop one")
    if args.measured:  # options that choose what to measure, or how: the runs of --measured are the file's own
        refuse_given(args, MEASURING, "--measured", "it chooses what to measure or how, and --measured gives runs measured "
                                                    "already (their settings are the file's)")
    if not args.cost:  # the report and its timing need a cost file to predict with
        refuse_given(args, ("output", "json", "timing"), "give --cost FILE",
                     "it concerns the report, and without --cost there is none (validate only measures and saves)")
        if not args.measured and not args.save:
            raise UsageError("--save: without --cost (nothing to check) the runs measured would be lost; give --save FILE, "
                             "or --cost FILE to check")
    from .records import each_once

    each_once([("--measured", args.measured), ("--scenarios", args.scenarios)])
    claim_outputs(args, [(args.cost, "the --cost file")] + [(p, "a --measured file") for p in args.measured or ()]
                  + [(p, "a --scenarios file") for p in args.scenarios or ()],
                  [(args.output, "-o"), (args.save, "--save"), (args.json, "--json")])
    from .cost_file import json_text
    from .records import read_measurements, require_fields, require_scipy

    cost = None
    if args.cost:
        require_scipy("the ranking (Kendall's tau, scipy.stats.kendalltau)")
        cost = read_cost(args.cost)  # before measuring: a bad file fails at once
    elif args.measured:
        raise UsageError("--measured: without --cost there is nothing to report; give the cost file to check with --cost")
    if args.measured:
        records = []
        for path in args.measured:
            doc = read_measurements(path, MEASURED_FORMAT, "--save", text_keys=("workload", "scenario"))
            if not doc["records"]:
                raise UsageError(f"{path}: records: empty; give runs that validate --save wrote")
            # What the runs measured, which the cost file must price (check_alike).
            require_fields(path, doc, (("model", str), ("tp", int)),
                           "give a file validate --save wrote (it records the model and TP measured)")
            check_alike(args.cost, cost, path, doc.get("model"), doc.get("tp"), doc.get("attention"), doc.get("gpu"))
            if cost and doc["up_projection"] != cost["up_projection"]:  # the fused loop's runs by the engines' file, or back
                raise UsageError(f"{path}: up_projection: {doc['up_projection']!r}, but {args.cost} prices the "
                                 f"{cost['up_projection']!r} loop; price these runs with a cost file of their loop (calibrate --loop)")
            records += doc["records"]
    else:
        if cost:  # measure what the file prices unless told otherwise, and refuse a mismatch at once
            args.model, args.tp = args.model or cost["model"], args.tp or cost["tp"]
            check_alike(args.cost, cost, None, args.model, args.tp, None)
        # Graph time compared: the graphs alone, as calibrate times its points, unless --host asks for more.
        doc = measure(args, cost, eager=cost is None or args.host or _timing(args, cost) == "eager")
        records = doc["records"]
        if args.save:
            write_output(args.save, json_text(doc, args.save))
    if cost is None:
        return 0
    timing = _timing(args, cost)
    if timing == "eager" and cost.get("timing") != "eager" and cost.get("host") is None:
        raise UsageError(f"{args.cost}: host: missing; eager time needs the host's dispatch costs: calibrate the file again "
                         f"(python -m mlaplan.calibrate --host measures them), or compare --timing graph")
    try:
        rep = report(cost, records, timing)
    except ValueError as e:  # a record no batch can be: the C++ message names no file
        raise UsageError(f"{' '.join(args.measured or ['the measurements'])}: {e}") from None
    if not rep["workloads"]:
        # A gate that measured nothing has not passed: say so, exit 1, and write no report.
        refused = sum(1 for r in records if r.get("refused"))
        article = "an" if timing == "eager" else "a"
        raise NothingMeasured(f"validate: nothing was measured: none of the {len(records)} runs has {article} {timing} time"
                              f"{f' ({refused} refused)' if refused else ''}; measure on a CUDA GPU"
                              f"{'' if timing == 'eager' else ', or compare --timing eager'}")
    if args.json:
        write_output(args.json, json_text(rep, args.json))
    write_output(args.output, markdown(rep, args.cost))
    return 0 if met(rep) else 1


def _timing(args, cost: dict) -> str:
    """The measured time the report compares: --timing, else the cost file's."""
    return args.timing or cost.get("timing") or "eager"


class NothingMeasured(UsageError):
    """Exit 1: the gate is missed, as a miss of its targets is (entry's exit_code)."""

    exit_code = 1


if __name__ == "__main__":
    from .__main__ import entry

    exit_with(entry(None, main, "validate"))
