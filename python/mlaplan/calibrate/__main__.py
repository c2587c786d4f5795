"""python -m mlaplan.calibrate --model deepseek-v3 --tp 8 -o my-gpu.json

Times the prefill executor (mlaplan.prefill) on this GPU, on a grid of batch shapes and policies and on
workload-shaped batches it draws itself, fits the cost model (docs/cost-model.md), checks the fit on
batches it never fitted (another seed) against the targets, and writes the cost file that `mlaplan
run/sweep --cost` read, within --max-seconds (default 9 minutes). With --refit, fits measurements
saved by an earlier --measurements instead (no GPU needed). Needs torch with CUDA, Triton and scipy:
pip install scipy torch (or, in a clone of mlaplan, pip install '.[calibrate]').

Exit status: 0 ok, 1 written but the held-out check missed its targets, 2 bad usage or input (no GPU
or torch included), 3 a device failure.
"""
from __future__ import annotations

import argparse
import datetime
import os
import shlex
import sys
from typing import List, Optional

# Torch-free: with --refit (no GPU) torch is never imported, which alone takes seconds on a loaded host.
from .. import _cli
from .._cli import (CPU_WAIT_HELP, CPU_WAIT_S, KERNEL_TITLES, KERNELS, REHEAT_HELP, SETTLE_MS, UsageError, _count, _positive,
                    _positive_list, _seconds, claim_outputs, exit_with, write_output)
from .fit import HOST_REPS, SMALL_GEMM_GAIN
from .oneshot import DEFAULT_SECONDS
from .options import Parser, given, refuse_given
from .workloads import FIT_BATCHES, FIT_SEED, FIT_SPREAD, HELDOUT_SEED, WORKLOADS, parse_workloads

MEASUREMENTS_FORMAT = "mlaplan-calibration-measurements"
# A workload-shaped point weighs this many grid points in the fit: chosen on the seed-51 held-out
# batches (1 to 1000 tried on the three FA3 files), confirmed on batches drawn after (docs/cost-model.md).
WORKLOAD_WEIGHT = 8.0
_weight = _positive("weight", "8")
# What only measuring reads: with --refit, which measures nothing, each is refused rather than ignored.
MEASURING = ("model", "tp", "dtype", "points", "buffer_tokens", "host_reps", "seed", "attention", "reps", "warmup", "settle_ms",
             "cpu_wait_s", "reheat_ms", "max_total_context", "max_seconds", "device", "workloads", "workload_seed", "heldout_seed",
             "no_check", "host", "loop")
# With --host the host-bound points come on top: the budget's default grows by this much.
HOST_EXTRA_SECONDS = 180


def parser() -> Parser:
    p = Parser(prog="python -m mlaplan.calibrate", description=__doc__.split("\n\n")[1].replace("\n", " "),
               formatter_class=argparse.RawDescriptionHelpFormatter,
               epilog="examples:\n"
                      "  python -m mlaplan.calibrate --model deepseek-v3 --tp 8 -o my-gpu.json\n"
                      "  python -m mlaplan.calibrate --model deepseek-v3 --tp 8 --host -o my-gpu-eager.json\n"
                      "  python -m mlaplan.calibrate --model deepseek-v3 --tp 8 --loop fused -o my-gpu-fused.json\n"
                      "  python -m mlaplan.calibrate --model kimi-k2 --tp 8 --points 120 --measurements raw.json -o kimi.json\n"
                      "  python -m mlaplan.calibrate --model deepseek-v3 --tp 8 --points 150 --scenarios coding-agent.json short-chat.json \\\n"
                      "      --buffer-tokens 8192,65536 -o fa3.json\n"
                      "  python -m mlaplan.calibrate --refit raw.json --timing graph -o graph.json\n"
                      "  python -m mlaplan.calibrate --refit raw.json --host-from full-speed.json -o graph.json\n")
    p.add_argument("--model", default="deepseek-v3", metavar="NAME", help="a model preset (default deepseek-v3; docs/models.md)")
    p.add_argument("--tp", type=_count(1), default=1, metavar="N", help="tensor-parallel ranks: local heads = num_attention_heads / TP")
    p.add_argument("--dtype", choices=("bf16",), default="bf16", help="the activations' and cache's type (bf16, as the executor runs)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.json", help="the cost file to write (atomically)")
    p.add_argument("--points", type=_count(10), default=160, metavar="N", help="calibration points, each a batch, buffer and policy (default 160)")
    p.add_argument("--workloads", default=",".join(WORKLOADS), metavar="LIST",
                   help=f"workload presets whose scheduler steps (drawn here, --workload-seed) are measured under every policy at "
                        f"every --buffer-tokens, and checked on after the fit (--heldout-seed); none: the grid alone (default "
                        f"{','.join(WORKLOADS)}; with --scenarios, none)")
    p.add_argument("--workload-seed", type=_count(0, 2**64 - 1), default=FIT_SEED, metavar="N",
                   help=f"seed of the workload batches fitted (default {FIT_SEED})")
    p.add_argument("--heldout-seed", type=_count(0, 2**64 - 1), default=HELDOUT_SEED, metavar="N",
                   help=f"seed of the held-out batches checked, never fitted (default {HELDOUT_SEED})")
    p.add_argument("--no-check", action="store_true", help="skip the held-out check (the file then has no `heldout` field)")
    p.add_argument("--host", action="store_true",
                   help="also measure host-bound steps (the workloads at 8K-64K rows, another seed) and fit the host section on "
                        "the workload-shaped runs, so that eager time (--timing eager in run/sweep, guided/eager) can be "
                        f"priced; the budget's default grows by {HOST_EXTRA_SECONDS} s")
    p.add_argument("--scenarios", nargs="+", action="extend", metavar="FILE.json",
                   help="also every batch of these scenario files (mlaplan gen, one workload each; other seeds than the held-out "
                        "batches) under every policy and --buffer-tokens: points shaped as the workloads priced")
    p.add_argument("--buffer-tokens", type=_positive_list, default=[8192, 16384, 65536, 131072, 262144], metavar="N[,N...]",
                   help="the buffers of the workload points, fitted and held out (default 8192,16384,65536,131072,262144)")
    p.add_argument("--host-reps", type=_count(0), default=HOST_REPS, metavar="N",
                   help="layers whose host dispatch is also timed on its own per point, the GPU held busy (default 3; recorded as "
                        "host_ms; 0: not timed). The host section is fitted on the eager times either way")
    p.add_argument("--seed", type=_count(0, 2**64 - 1), default=1, metavar="N", help="seed of the grid and the inputs (default 1)")
    p.add_argument("--timing", choices=("graph", "eager"), default="graph",
                   help="fit the loop's CUDA-graph replay (default: the kernels alone, what the GPU must do) or the eager loop "
                        "(host dispatch included where the GPU waits for it, which a linear model fits worse; docs/cost-model.md)")
    p.add_argument("--attention", choices=KERNELS, default="auto",
                   help="the executor's attention kernel (default auto: FlashAttention-3 on SM90 where a build imports, "
                        "what vLLM and SGLang run there; else flash, FlashAttention-2 with V padded)")
    p.add_argument("--loop", choices=("engine", "fused"), default="engine",
                   help="the loop measured: engine (default: the gather, kv_b_proj's GEMM and K's concat, as vLLM and SGLang run "
                        "them) or fused (mlaplan's own: one kernel up-projects the rows read through the page table, prefill "
                        "--policy NAME+fused); the file's kernels.up_projection says which, and run/sweep --loop picks it")
    p.add_argument("--scheduler", choices=("auto", "grid", "sorted", "sectioned"), default="auto",
                   help="how the fit's pricing hands out the attention's blocks (default auto: sectioned for fa3, FlashAttention-3's "
                        "L2 sections; grid for the others); sorted reproduces the FA3 files fitted before the sections "
                        "(docs/cost-model.md)")
    p.add_argument("--workload-weight", type=_weight, default=WORKLOAD_WEIGHT, metavar="W",
                   help=f"what each workload-shaped point (from --scenarios) weighs in the fit against a grid point's 1 (default "
                        f"{WORKLOAD_WEIGHT:g}: the grid spans the terms, the workloads are what is priced; docs/cost-model.md)")
    p.add_argument("--reps", type=_count(1), default=5, metavar="N", help="timed runs per point, the median kept (default 5)")
    p.add_argument("--warmup", type=_count(0), default=2, metavar="N", help="untimed runs first (default 2)")
    p.add_argument("--settle-ms", type=_count(0), default=SETTLE_MS, metavar="MS", help="on the GPU, run each timing back to back this long first, so it sees the sustained clock (default 250; docs/cost-model.md)")
    p.add_argument("--cpu-wait-s", type=_count(0, 3600), default=CPU_WAIT_S, metavar="S", help=CPU_WAIT_HELP)
    p.add_argument("--reheat-ms", type=_count(0, 10000), default=0, metavar="MS", help=REHEAT_HELP)
    p.add_argument("--max-total-context", type=_count(1), metavar="TOKENS",
                   help="cached tokens per batch at most (default 16M / local heads, at most 1M)")
    p.add_argument("--max-seconds", type=_seconds, default=DEFAULT_SECONDS, metavar="S",
                   help=f"the whole run ends within about S seconds (default {DEFAULT_SECONDS}): the points take about half, "
                        f"measured until then and fitted, the held-out check what is left; with --no-check measuring takes all")
    p.add_argument("--measurements", metavar="FILE.json", help="also write the raw measurements, for --refit (and the held-out runs, as heldout_records)")
    p.add_argument("--refit", nargs="+", action="extend", metavar="FILE.json",
                   help="fit these saved measurements instead of measuring (several: of one model, TP and GPU, pooled)")
    p.add_argument("--host-from", nargs="+", action="extend", metavar="FILE.json",
                   help="fit the host section on these saved measurements' eager times instead (of the same model, TP, GPU and "
                        "kernel; e.g. runs timed at the host CPU's full speed, --cpu-wait-s, or held-out runs validate --save "
                        "wrote, once reported); the graph fit is the others'")
    p.add_argument("--device", default="auto", metavar="DEV", help="auto (default), cuda or cuda:N")
    p.add_argument("--commit", metavar="SHA", help="the mlaplan commit to record (default: git's, where there is a checkout)")
    return p


def _read_measurements(path: str, host_runs: bool = False) -> dict:
    """A file --measurements wrote; with host_runs (--host-from), also one validate --save wrote: held-out
    runs, once reported, pooled into a later host fit."""
    from .records import read_measurements, require_fields
    from .validate import MEASURED_FORMAT

    wrote = "--measurements or validate --save" if host_runs else "--measurements"
    doc = read_measurements(path, (MEASUREMENTS_FORMAT, MEASURED_FORMAT) if host_runs else MEASUREMENTS_FORMAT, wrote)
    keys = [("model", str), ("tp", int), ("heads", int), ("gpu", str), ("sms", int), ("attention", str)]
    if doc["format"] == MEASURED_FORMAT:
        doc = dict(doc)
        # validate wrote neither before it recorded them: it times bfloat16 on a GPU (float32 on the CPU,
        # where there is no graph time), and a pool without a date keeps the others' latest.
        if "dtype" not in doc:
            doc["dtype"] = "bf16" if any(r.get("graph_ms") is not None for r in doc["records"]) else "fp32"
        keys.append(("dtype", str))
        if "date" in doc:
            keys.append(("date", str))
    else:
        keys += [("merge", str), ("dtype", str), ("date", str)]
    require_fields(path, doc, keys, f"give a file {wrote} wrote")
    if doc["attention"] not in KERNEL_TITLES and not isinstance(doc.get("attention_title"), str):
        raise UsageError(f"{path}: attention: {doc['attention']!r} is not one of {', '.join(KERNEL_TITLES)}; give a file "
                         f"{wrote} wrote")
    return doc


def _require_alike(path: str, doc: dict, other_name: str, other: dict, fix: str) -> None:
    """doc (read from path) measured what other did: the same model, TP, GPU and kernel."""
    for key in ("model", "tp", "heads", "gpu", "sms", "attention", "dtype", "up_projection"):
        if doc[key] != other[key]:
            raise UsageError(f"{path}: {key}: {doc[key]!r}, but {other_name} has {other[key]!r}; {fix}")


def _pooled(paths: List[str], host_runs: bool = False) -> dict:
    """The measurements of several files, which must agree on what was measured (the latest date kept)."""
    docs = [_read_measurements(p, host_runs) for p in paths]
    first = docs[0]
    for path, doc in zip(paths[1:], docs[1:]):
        _require_alike(path, doc, paths[0], first, "pool measurements of one model, TP, GPU and kernel")
        if doc.get("settle_ms") != first.get("settle_ms"):  # the clock they saw differs (docs/cost-model.md)
            raise UsageError(f"{path}: settle_ms: {doc.get('settle_ms')!r}, but {paths[0]} has {first.get('settle_ms')!r}; "
                             f"pool measurements timed at one clock (--settle-ms)")
        if doc.get("reheat_ms", 0) != first.get("reheat_ms", 0):  # the eager runs' clock after the probe differs
            raise UsageError(f"{path}: reheat_ms: {doc.get('reheat_ms', 0)!r}, but {paths[0]} has {first.get('reheat_ms', 0)!r}; "
                             f"pool eager runs timed alike (--reheat-ms)")
    dates = [d["date"] for d in docs if "date" in d]
    pooled = dict(first, records=[r for d in docs for r in d["records"]], date=max(dates) if dates else None,
                  sessions=[p for p, d in zip(paths, docs) for _ in d["records"]],
                  heldout_records=[r for d in docs for r in d.get("heldout_records") or []])
    return pooled


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.refit and args.measurements:
        raise UsageError("--measurements: it saves what this run measures, and --refit measures nothing; drop one")
    if args.refit and args.scenarios:
        raise UsageError("--scenarios: they add points to measure, and --refit measures nothing; drop one")
    if args.refit:  # the files' model, TP, kernel and clocks are what is fitted
        refuse_given(args, MEASURING, "--refit", "it only matters when measuring, and --refit measures nothing (it fits the "
                                                 "runs its files hold)")
    try:
        workloads = () if args.scenarios and not given(args, "workloads") else parse_workloads(args.workloads)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not args.refit and not args.scenarios and not workloads:  # both only concern the workload-shaped points
        refuse_given(args, ("workload_weight",), "give --scenarios or --workloads",
                     "it weighs the workload points in the fit, and none are measured")
        if args.no_check:  # the check's buffers otherwise
            refuse_given(args, ("buffer_tokens",), "give --scenarios or --workloads",
                         "it sets the buffers of the workload points, and none are measured")
    if args.no_check:
        refuse_given(args, ("heldout_seed",), "--no-check", "it draws the held-out batches, and --no-check checks none")
    if not args.refit and args.heldout_seed == args.workload_seed and not args.no_check:
        raise UsageError(f"--heldout-seed: {args.heldout_seed} is the --workload-seed too: the check would test the fit on "
                         f"the batches it fitted; give another")
    if args.host_from and args.timing == "eager":
        raise UsageError("--host-from: an eager-timed file has no host section to fit; give --timing graph (the default)")
    if args.host and args.host_from:
        raise UsageError("--host: it measures the host section's runs, and --host-from gives them; drop one")
    from .records import each_once, require_scipy

    each_once([("--refit", args.refit), ("--host-from", args.host_from), ("--scenarios", args.scenarios)])
    claim_outputs(args, [(p, "a --refit file") for p in args.refit or ()] + [(p, "a --scenarios file") for p in args.scenarios or ()]
                  + [(p, "a --host-from file") for p in args.host_from or ()],
                  [(args.output, "-o"), (args.measurements, "--measurements")])
    require_scipy("the fit (scipy.optimize.nnls)")  # before an hour of measuring, not after
    from .cost_file import check_readable, cost_document, json_text
    from .device_info import git_commit
    from .fit import fit_host, fit_records, geometries_for, scheduler_for
    from .oneshot import Budget

    seconds = args.max_seconds + (HOST_EXTRA_SECONDS if args.host and not given(args, "max_seconds") else 0)
    budget = Budget(None if args.refit else seconds)
    check = not args.refit and not args.no_check
    dev = None
    if args.refit:
        doc = _pooled(args.refit)
    else:
        dev = open_device(args)
        doc, host_batches = _measure(args, dev, workloads, budget, check)
        if args.measurements:
            write_output(args.measurements, json_text(doc, args.measurements))
    try:
        fit = fit_records(doc["records"], int(doc["heads"]), int(doc["sms"]), args.timing,
                          geometries_for(doc["attention"]),
                          scheduler_for(doc["attention"]) if args.scheduler == "auto" else args.scheduler, args.workload_weight)
    except ValueError as e:  # too few points, or a record no batch can be (the messages name no file)
        raise UsageError(f"{' '.join(args.refit) if args.refit else 'calibrate'}: {e}") from None
    attention = doc.get("attention_title") or KERNEL_TITLES[doc["attention"]]
    host_doc = doc
    if args.host_from:
        host_doc = _pooled(args.host_from, host_runs=True)
        _require_alike(args.host_from[0], host_doc, args.refit[0] if args.refit else "this run", doc,
                       "give --host-from runs of the same model, TP, GPU and kernel")
    host_records = host_doc["records"]
    if args.host:  # the workload-shaped runs, the host-bound steps among them: the grid's random shapes fit the host worse
        host_records = [r for r in host_records if r.get("workload")]
    host = fit_host(host_records, fit, int(doc["heads"]), int(doc["sms"]), doc["attention"] == "flash",
                    host_doc.get("sessions")) if args.timing == "graph" else None
    if args.host_from and host is None:
        raise UsageError(f"{' '.join(args.host_from)}: too few runs with both an eager and a graph time to fit the host costs "
                         f"(more than one per launch kind); measure more points")
    cost = cost_document(
        model=doc["model"], tp=int(doc["tp"]), dtype=doc["dtype"], heads=int(doc["heads"]), gpu=doc["gpu"], sms=int(doc["sms"]),
        attention=attention, merge=doc["merge"], up_projection=doc["up_projection"], timing=args.timing, date=doc["date"], fit=fit, driver=doc.get("driver"),
        compute_capability=doc.get("compute_capability"), settle_ms=doc.get("settle_ms"),
        torch_version=doc.get("torch"), triton_version=doc.get("triton"), host=host, host_cpu=host_doc.get("host"),
        pad_v=doc["attention"] == "flash", host_date=host_doc.get("date"),
        commit=args.commit or git_commit(os.path.dirname(os.path.abspath(__file__))),
        command="python -m mlaplan.calibrate " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])))
    check_readable(cost, args.output)
    from .._gpu_clock import clock_line

    text = summary(doc, fit, host, args.timing) + clock_line(doc["records"], "fitted points")
    met = True
    if check:
        from .oneshot import table

        print(text, end="", flush=True)  # the fit's figures while the check runs
        text = ""
        cost["heldout"], held = _heldout(args, dev, cost, workloads or WORKLOADS, host_batches, budget)
        if args.measurements:  # the held-out runs too, so that a miss can be studied and priced again (--refit)
            drawn = {f"heldout_{k}": cost["heldout"][k] for k in ("seed", "batches_per_workload", "reps", "warmup")}
            write_output(args.measurements, json_text({**doc, **drawn, "heldout_records": held}, args.measurements))
        check_readable(cost, args.output)
        text, met = table(cost["heldout"]) + clock_line(held, "held-out runs"), cost["heldout"]["met"]
    elif args.refit and doc["heldout_records"]:
        from .oneshot import table

        cost["heldout"] = _repriced(args, cost, doc)
        check_readable(cost, args.output)
        text, met = text + table(cost["heldout"]), cost["heldout"]["met"]
    write_output(args.output, json_text(cost, args.output))
    print(text, end="")  # a failing stdout: entry's line, nothing written
    return 0 if met else 1


def _repriced(args, cost: dict, doc: dict) -> dict:
    """--refit of measurements that kept a check's held-out runs: those runs priced by this fit, with
    each workload's verdict, as the command that measured them would give it (the runs of a batch the
    fit holds left out). The file's `heldout` says so (`repriced`)."""
    from .oneshot import heldout_record

    fitted = {(tuple(r["cache"]), tuple(r["new"])) for r in doc["records"]}
    held = [dict(r) for r in doc["heldout_records"] if (tuple(r["cache"]), tuple(r["new"])) not in fitted]
    out = heldout_record(cost, held, args.timing, seed=doc.get("heldout_seed"), batches=doc.get("heldout_batches_per_workload"),
                         buffers=sorted({r["buffer_tokens"] for r in held}), policies=list(dict.fromkeys(r["policy"] for r in held)),
                         reps=doc.get("heldout_reps"), warmup=doc.get("heldout_warmup"),
                         timings=("eager", "graph") if any(r.get("eager_ms") for r in held) else ("graph",))
    out["repriced"] = (f"the held-out runs {' and '.join(args.refit)} keep, measured with the fitted points, priced by "
                       f"this fit ({len(held)} runs)")
    return out


def open_device(args):
    """The GPU the points are timed on (oneshot.Device), refused in one line where there is none, or no
    torch, Triton or CUDA build to time it with. Tests replace it with a made-up one."""
    from .oneshot import open_gpu

    return open_gpu(args)


def _measure(args, dev, workloads, budget, check):
    """The calibration points measured within the budget's share: (the measurements document, the
    batches drawn for them, which the held-out draw must not repeat)."""
    from .grid import interleave_workloads, make_grid, scenario_points, take_turns
    from .oneshot import FIT_SHARE, measure_all
    from .workloads import HOST_BUFFERS, HOST_SEED, draw, points

    dims = dev.dims
    # Read before any point is timed, so a bad file is named first.
    try:
        files = scenario_points(args.scenarios or (), args.buffer_tokens, heads=dims.heads)
    except ValueError as e:  # the reader's message names the file and field
        raise UsageError(str(e)) from None
    dev.open()
    fitted = draw(workloads, args.workload_seed, FIT_BATCHES, spread=FIT_SPREAD)
    workload_points = interleave_workloads(files + points(fitted, args.buffer_tokens, dims.heads))
    host_batches = draw(workloads or WORKLOADS, HOST_SEED, 1) if args.host or args.timing == "eager" else []
    host_points = interleave_workloads(points(host_batches, HOST_BUFFERS, dims.heads))
    limit = args.max_total_context or min(1 << 20, (16 << 20) // dims.heads)
    grid = make_grid(args.points, args.seed, dims.heads, max_total_context=limit, max_buffer=min(1 << 19, (8 << 20) // dims.heads))
    # Taking turns, so that the budget keeps a share of each kind.
    ordered = take_turns((host_points, grid, workload_points))
    end = budget.phase_end(FIT_SHARE if check else 1.0)
    after = (budget.seconds - budget.seconds * FIT_SHARE) if check and budget.seconds else 0.0
    records = measure_all(ordered, dev.measure_calibration, budget, end, after)
    doc = {"format": MEASUREMENTS_FORMAT, "model": args.model, "title": dims.name, "tp": args.tp, "heads": dims.heads,
           "dtype": args.dtype, "attention": dev.kernel, "attention_title": dev.kernel_title, "merge": "fused (Triton)",
           "up_projection": dev.up_projection, **dev.info,
           "date": datetime.date.today().isoformat(), "reps": args.reps, "warmup": args.warmup,
           "settle_ms": args.settle_ms, "cpu_wait_s": args.cpu_wait_s, **({"reheat_ms": args.reheat_ms} if args.reheat_ms else {}),
           "records": records}
    return doc, fitted + host_batches


def _heldout(args, dev, cost, workloads, fitted, budget) -> dict:
    """The held-out check: batches drawn with --heldout-seed (none of the fitted ones), measured within
    what is left of the budget, priced with `cost`: (its verdict and figures, the file's `heldout`;
    the runs measured)."""
    from .oneshot import RESERVE_S, heldout_eager, heldout_groups, heldout_record, measure_heldout
    from .workloads import HELDOUT_BATCHES, disjoint, draw, points
    from .._cli import ENGINES

    start = budget.clock()
    held = disjoint(draw(workloads, args.heldout_seed, HELDOUT_BATCHES), fitted)
    groups = heldout_groups(points(held, args.buffer_tokens, dev.dims.heads))
    end = None if budget.seconds is None else budget.end() - RESERVE_S
    records = measure_heldout(groups, dev.measure_heldout, budget, end)
    return heldout_record(cost, records, args.timing, seed=args.heldout_seed, batches=HELDOUT_BATCHES, buffers=args.buffer_tokens,
                          policies=ENGINES, reps=dev.heldout_reps, warmup=dev.heldout_warmup,
                          timings=("eager", "graph") if heldout_eager(args) else ("graph",),
                          elapsed=lambda: budget.clock() - start), records


def summary(doc: dict, fit, host, timing: str) -> str:
    """What the fit found, for stdout: its names (the files' model and GPU, sessions' paths) escaped."""
    from .._mlaplan import printable

    cv = ("too few points for any fold" if fit.cv_median_abs_error is None
          else f"{100 * fit.cv_median_abs_error:.1f}%, {100 * fit.cv_p90_abs_error:.1f}%")
    lines = [f"{doc['model']} TP {doc['tp']} on {doc['gpu']}: {fit.points} points, {timing} timing, geometry tile "
             f"{fit.tile_queries} x {fit.blocks_per_sm} per SM, {fit.scheduler} scheduler; |error| median "
             f"{100 * fit.median_abs_error:.1f}%, p90 {100 * fit.p90_abs_error:.1f}% (5-fold cross-validated {cv})"]
    small = (f"on up-projections of at most {fit.small_gemm_rows:,} rows" if fit.small_gemm_rows
             else f"unused: no GEMM size tried lowers the cross-validated error by {100 * SMALL_GEMM_GAIN:.0f}%")
    lines += [f"  {name:<22} {value:12.6g}  {small if name == 'per_small_gemm_row_us' else fit.not_identifiable.get(name, '')}"
              for name, value in fit.coefficients.items()]
    if host is None and timing == "graph":
        lines.append("no host section: the points were timed as graphs alone, so eager time (--timing eager, guided/eager) is "
                     "refused with this file; calibrate with --host to measure the host's dispatch too")
    if host is not None:
        lines.append(f"eager time's host costs, {host.points} points (the two clocks against the eager times): |error| median "
                     f"{100 * host.median_abs_error:.1f}%, p90 {100 * host.p90_abs_error:.1f}%; us per launch:")
        lines += [f"  {name:<22} {value:12.6g}  {host.not_identifiable.get(name, '')}" for name, value in host.launch_us.items()]
        lines.append(f"  the host section is identified: {host.host_bound_runs} host-bound runs pin it down" if host.identified else
                     "  the host section is NOT identified, so eager time must not be chosen by (host.identified false): "
                     + "; ".join(host.unidentified_because) + ("" if timing == "eager" else "; calibrate with --host to measure it"))
        if host.stamped:
            st = host.stamped
            lines.append(f"  on the {st['runs']} runs that stamped their launches, the stamps' own costs at the same probe give "
                         f"|error| median {100 * st['median_abs_error']:.1f}%, p90 {100 * st['p90_abs_error']:.1f}% (these costs: "
                         f"{100 * st['fitted_median_abs_error']:.1f}%, {100 * st['fitted_p90_abs_error']:.1f}%): "
                         + ", ".join(f"{k} {v:.3g}" for k, v in st["launch_us"].items()))
        if host.sessions:
            spread = max(x["median_error"] for x in host.sessions) - min(x["median_error"] for x in host.sessions)
            lines.append(f"the sessions pooled, each's median signed error under these costs (they differ by {100 * spread:.1f} "
                         f"points):")
            lines += [f"  {x['runs']}: {x['points']} points, {100 * x['median_error']:+.1f}%" for x in host.sessions]
    return "\n".join(printable(line) for line in lines) + "\n"


def entry(argv: Optional[List[str]] = None, command=None, name: str = "calibrate") -> int:
    return _cli.entry(argv, command or main, name)


if __name__ == "__main__":
    exit_with(entry())
