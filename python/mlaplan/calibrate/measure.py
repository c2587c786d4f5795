"""Timing calibration points with the executor: one MLA layer's prefill per point, eager (the loop
as engines run it) and replayed as a CUDA graph (the kernels alone), the median of `reps` runs.
SGLang runs its chunked loop (what a buffer size changes; its one-shot path is the whole-context step
TensorRT-LLM runs too, and its absorbed path is a float32 reference here, not a kernel to time), and
TensorRT-LLM what it runs on this GPU (the whole context at once on SM90, its loop on SM100)."""
from __future__ import annotations

import statistics
import sys
import time
from typing import Dict, Iterable, List, Optional

import torch

from ..prefill import phases
from ..prefill.inputs import host_page_table, random_inputs
from ..prefill.measure import Run, run_one
from ..prefill.model import MlaDims
from ..prefill.schedule import build_schedule
from .fit import HOST_REPS, PROBES
from .grid import Point

ENGINE_PATHS = {"sglang_path": "chunked", "trtllm_path": "auto"}
# What the engines run on this GPU, as their dispatch picks it (validation).
AUTO_PATHS = {"sglang_path": "auto", "trtllm_path": "auto"}


def measure_point(p: Point, dims: MlaDims, dtype, device, reps: int, warmup: int, kernel: str, seed: int,
                  paths: Optional[dict] = None, settle_ms: float = 0.0, host_reps: int = HOST_REPS,
                  graph_first: bool = False, cpu_wait_s: float = 0.0, reheat_ms: float = 0.0, eager: bool = True,
                  up_projection: str = "unfused") -> dict:
    """The point with its times: eager_ms, graph_ms (None where capture failed), iterations, path,
    on the GPU host_ms (the host's dispatch alone, None where it could not be told apart) and
    launches by kind; or refused with why (out of memory included). paths: build_schedule's
    sglang_path and trtllm_path (default ENGINE_PATHS); graph_first: the graph replays timed before
    the eager runs (timing.measure), recorded as `graph_first` where set; cpu_wait_s: the eager runs
    wait up to that long for the host CPU's full speed, the probe's ms recorded (`cpu_probe_ms`); on the
    GPU the median of the host's dispatch probes beside them is recorded too (`dispatch_probe_ms`), and
    with host_reps the host's microseconds per launch of each kind in the timed eager runs
    (`host_launch_us`) and their issue time (`host_issue_ms`, prefill.host_clock). reheat_ms: on the
    GPU, the layer runs back to back that long after each dispatch probe, before its timed run.
    eager=False: on the GPU, the graph alone (eager_ms None); with no eager runs there is no host
    dispatch to time, no CPU to wait for and no order of the two timings, so host_reps, cpu_wait_s and
    graph_first are ignored. up_projection "fused": mlaplan's own loop (executor.prepare)."""
    rec = p.as_dict()
    cuda = torch.device(device).type == "cuda"
    if not eager:
        host_reps, cpu_wait_s, graph_first = 0, 0.0, False
    paths = ENGINE_PATHS if paths is None else paths
    try:
        with phases.phase("inputs"):
            x = random_inputs(p.cache, p.offsets, p.page_size, dims, dtype, device, seed)
            sched = build_schedule(p.policy, x.lengths, host_page_table(x), p.buffer_tokens, None, device, **paths)
        if sched.path == "absorbed":  # a float32 reference here (attention.latent_attention), not a kernel
            rec.update(path="absorbed", refused="absorbed MLA: the executor's absorbed path is a float32 reference, not timed")
            return rec
        run = run_one(x, sched, Run("calibration", p.buffer_tokens, p.policy), None, reps=reps, warmup=warmup,
                      graph=cuda, fused_merge=cuda or None, kernel=kernel, parts=False, settle_ms=settle_ms,
                      host_reps=host_reps if cuda else 0, graph_first=graph_first, cpu_wait_s=cpu_wait_s,
                      reheat_ms=reheat_ms, eager=eager, up_projection=up_projection)
    except ValueError as e:
        rec["refused"] = str(e)
        return rec
    except torch.cuda.OutOfMemoryError as e:
        rec["refused"] = "out of memory: " + str(e).splitlines()[0]
        torch.cuda.empty_cache()
        return rec
    rec.update(path=run.path, iterations=run.iterations, eager_ms=run.eager_ms, eager_spread_ms=run.eager_spread_ms,
               graph_ms=run.graph_ms)
    rec.update({k: v for k, v in (("sm_clock_mhz", run.sm_clock_mhz), ("power_w", run.power_w)) if v is not None})
    if graph_first and run.graph_ms is not None:
        rec["graph_first"] = True
    if run.cpu_probe_ms is not None:
        rec["cpu_probe_ms"] = run.cpu_probe_ms
    if run.dispatch_probe_ms is not None:
        rec["dispatch_probe_ms"] = run.dispatch_probe_ms
    if cuda and host_reps:
        rec.update(host_ms=run.host_ms, launches=run.launches)
        if run.host_launch_us:
            rec.update(host_launch_us=run.host_launch_us, host_issue_ms=run.host_issue_ms)
    del x, sched
    return rec


def replays_first(*indices: int) -> bool:
    """Whether a setting replays its graph before its eager runs (measure_point's graph_first), from
    its indices (policy, buffer, batch, round...): every other one along each. A step at the card's
    power cap times a few percent slower in whichever timing comes second (docs/cost-model.md), so
    neither may always come second for one policy, buffer or batch; alternating over the settings in
    order would, since six policies make an even row and every policy would keep one order."""
    return sum(indices) % 2 == 1


def measure_points(points: Iterable[Point], dims: MlaDims, dtype, device, reps: int = 5, warmup: int = 2,
                   kernel: str = "auto", seed: int = 1, progress: Optional[str] = None,
                   max_seconds: Optional[float] = None, settle_ms: float = 0.0, host_reps: int = HOST_REPS,
                   cpu_wait_s: float = 0.0, reheat_ms: float = 0.0) -> List[dict]:
    """The points measured in order; with max_seconds, those measured by then (the grid is random, so
    a prefix of it is a smaller grid of the same spread)."""
    points = list(points)
    out, start, spent = [], time.monotonic(), phases.seconds()
    timed: Dict[str, int] = {}  # points measured so far, by policy
    for i, p in enumerate(points):
        if max_seconds is not None and time.monotonic() - start > max_seconds:
            print(f"{progress or 'measure'}: --max-seconds {max_seconds:g} reached after {i} of {len(points)} points",
                  file=sys.stderr, flush=True)
            break
        # Each policy's points replay their graph first every other time (timing.measure's graph_first).
        turn = timed.get(p.policy, 0)
        timed[p.policy] = turn + 1
        rec = measure_point(p, dims, dtype, device, reps, warmup, kernel, seed + i, settle_ms=settle_ms, host_reps=host_reps,
                            graph_first=replays_first(turn), cpu_wait_s=cpu_wait_s, reheat_ms=reheat_ms)
        if p.scenario:
            rec.update(workload=p.workload, scenario=p.scenario)
        out.append(rec)
        if progress and (i + 1) % 25 == 0:
            took = time.monotonic() - start
            print(f"{progress}: {i + 1} of {len(points)} points, {took:.0f} s ({phases.words(phases.since(spent), took)})",
                  file=sys.stderr, flush=True)
    return out


def combine_rounds(recs: List[dict]) -> dict:
    """One setting measured in several rounds, spread over time, as one record: each time the median of
    the rounds' (their medians of reps), with each round's eager time (`eager_rounds_ms`) and their
    spread (`eager_round_spread_ms`, max - min). A host that drifts between moments moves a setting's
    eager time by more than one run's repetitions show; the median over rounds is what it typically
    costs, and the spread what one measurement of it can be off by. A round refused is the record."""
    if len(recs) == 1:
        return recs[0]
    refused = [r for r in recs if "refused" in r]
    if refused:
        return refused[0]
    out = dict(recs[0])
    out.pop("graph_first", None)  # the rounds alternate it
    for key in ("eager_ms", "graph_ms", "host_ms", "host_issue_ms"):
        if key in out:
            got = [r[key] for r in recs if r.get(key) is not None]
            out[key] = statistics.median(got) if got else None
    stamped = [r["host_launch_us"] for r in recs if r.get("host_launch_us")]
    if stamped:
        kinds = dict.fromkeys(k for h in stamped for k in h)
        out["host_launch_us"] = {k: statistics.median(h[k] for h in stamped if k in h) for k in kinds}
    eager = [r["eager_ms"] for r in recs]
    out["eager_spread_ms"] = statistics.median(r["eager_spread_ms"] for r in recs)
    out.update(eager_rounds_ms=eager, eager_round_spread_ms=max(eager) - min(eager))
    for key in PROBES.values():
        probes = [r[key] for r in recs if r.get(key) is not None]
        if probes:
            # The median, as the times: the host costs are priced at it (validate scales them by the
            # probe), and the slowest round's probe priced a median time up to 25% long.
            out[key] = statistics.median(probes)
            out[key.replace("_ms", "_rounds_ms")] = probes
    return out
