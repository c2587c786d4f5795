"""One measured run: a batch, a buffer size, an engine; its schedule, times, parts, FLOPs and error
against one-shot attention. What the command prints and what a cost model is fitted on."""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Dict, Optional

import torch

from .. import _gpu_clock as gpu_clock
from . import cpu_speed, dispatch_probe, executor, host_clock, phases, roofline
from .executor import execute, prepare
from .inputs import PrefillInputs
from .schedule import Schedule, merge_stats
from .timing import Timing, measure, time_host


@dataclass
class Run:
    scenario: str
    buffer_tokens: int
    policy: str
    path: str = ""
    iterations: int = 0
    steps: int = 0
    merges: int = 0
    merges_per_query_max: int = 0  # LSE merges of one query row's running state: the most, and p99 over the rows
    merges_per_query_p99: int = 0
    state: str = ""               # the running state's dtype across merges (bfloat16, float32)
    buffer_rows: int = 0
    refused: Optional[str] = None
    eager_ms: Optional[float] = None
    eager_spread_ms: Optional[float] = None
    graph_ms: Optional[float] = None
    graph_error: Optional[str] = None
    host_ms: Optional[float] = None  # the host's dispatch of one layer, the GPU held busy (timing.time_host)
    cpu_probe_ms: Optional[float] = None  # the host CPU's speed probe at the eager runs (cpu_speed; cpu_wait_s > 0)
    dispatch_probe_ms: Optional[float] = None  # the median of the host's dispatch probes beside the eager runs (dispatch_probe; GPU)
    launches: Dict[str, int] = field(default_factory=dict)  # kernels one layer launches, by kind (executor.LAUNCH_KINDS)
    # The host's microseconds per launch of each kind in the timed eager runs, and their start to last
    # launch (host_clock.per_launch_us of their launch stamps; GPU, with host_reps)
    host_launch_us: Dict[str, float] = field(default_factory=dict)
    host_issue_ms: Optional[float] = None
    # The SM clock and board power NVML gave right after the timed runs (mlaplan._gpu_clock; None where
    # it cannot be read): what a run's time moved with, where identical work times apart.
    sm_clock_mhz: Optional[int] = None
    power_w: Optional[float] = None
    parts_ms: Dict[str, float] = field(default_factory=dict)
    # Each timed part's FLOPs and bytes moved as the executor runs it, and with a measured peak the
    # least time they take at it (roofline.part_work, roofline.roofline_ms; the header's peak)
    parts_flops: Dict[str, float] = field(default_factory=dict)
    parts_bytes: Dict[str, float] = field(default_factory=dict)
    parts_roofline_ms: Dict[str, float] = field(default_factory=dict)
    gpu_busy_ms: Optional[float] = None
    gpu_idle_ms: Optional[float] = None
    kernels: int = 0
    attention_tflop: float = 0.0
    attention_tflops: Optional[float] = None
    max_abs_error: Optional[float] = None
    max_abs_lse_error: Optional[float] = None
    ok: Optional[bool] = None

    def as_dict(self) -> dict:
        return asdict(self)


def attention_flops(s: Schedule, x: PrefillInputs) -> float:
    """The attention part's useful work (the new tokens' step is a part of its own): 2 * (qk_head +
    v_head) FLOPs per visible (query, key) pair and head, not counting V's padding or masked pairs."""
    d = x.dims
    flops = 0.0
    for step in s.steps:
        width = d.latent + d.kv_lora if step.absorbed else d.qk_head + d.v_head  # absorbed: 576 + 512
        for a in ([] if step.new_tokens else step.attends):
            flops += roofline.call_flops(a.call, d.heads, width)
    return flops


def errors(out: torch.Tensor, lse: torch.Tensor, ref_out: torch.Tensor, ref_lse: torch.Tensor, tolerance):
    """(max |out - ref|, max |lse - ref| where the reference is finite, ok): ok where every element has
    |out - ref| <= tolerance * (1 + |ref|), torch.testing.assert_close's test with atol = rtol =
    tolerance, as vLLM's attention tests use it (1e-2 in bf16). tolerance: a number, or one per query
    row ([T, 1, 1], merge_tolerance). NaN is never ok."""
    diff = (out.float() - ref_out).abs()
    err = diff.max().item() if out.numel() else 0.0
    finite = torch.isfinite(ref_lse)
    lse_err = (lse.float() - ref_lse)[finite].abs().max().item() if finite.any() else 0.0
    ok = bool((diff <= tolerance * (1 + ref_out.abs())).all().item()) and not torch.isnan(out).any().item()
    return (float("nan") if torch.isnan(out).any().item() else err), lse_err, ok


# The unit roundoff of the running state's dtype: what one merge's rounding costs at most, relative.
UNIT_ROUNDOFF = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}
# The merge bound's constant: the measured error of bf16 merges per merge and unit roundoff, relative to
# 1 + |ref|, with a margin (docs/prefill.md, "Many merges", says how it was measured).
MERGE_C = 1e-2


def merge_tolerance(tolerance: float, merges_per_query, state: torch.dtype, device) -> torch.Tensor:
    """Per query row ([T, 1, 1]): tolerance + MERGE_C * merges * u(state), the error a row whose running
    state is rounded to `state` at each of its merges may carry beyond the attention's own."""
    m = torch.as_tensor(merges_per_query, dtype=torch.float32, device=device)
    return (tolerance + MERGE_C * UNIT_ROUNDOFF[state] * m)[:, None, None]


def run_one(x: PrefillInputs, s: Schedule, run: Run, reference=None, tolerance: float = 1e-2, reps: int = 10,
            warmup: int = 3, graph: bool = True, fused_merge: Optional[bool] = None,
            trace: Optional[str] = None, ranges: bool = False, kernel: str = "auto", parts: bool = True,
            settle_ms: float = 0.0, state=None, host_reps: int = 0, graph_first: bool = False,
            cpu_wait_s: float = 0.0, reheat_ms: float = 0.0, eager: bool = True, up_projection: str = "unfused",
            peak: Optional[roofline.Peak] = None, weights: str = "bf16") -> Run:
    """host_reps: on the GPU, also time the host's dispatch alone (host_ms, the median of that many
    layers) and count the layer's launches by kind (launches), what eager time is fitted on.
    cpu_wait_s: on the GPU, the eager runs and the host's dispatch wait up to that long for the host
    CPU's full speed (cpu_speed), and the probe's ms is kept (cpu_probe_ms). On the GPU the host's
    dispatch speed is probed before each timed eager run and after the last (dispatch_probe_ms, their median),
    and with host_reps the timed eager runs stamp their launches (host_launch_us, host_issue_ms);
    reheat_ms: the layer runs back to back that long after each probe (timing.time_eager_probed).
    eager=False: on the GPU, the graph replays alone are timed (timing.measure). up_projection: "fused"
    runs mlaplan's own loop, weights "fp8" an FP8 kv_b_proj (executor.prepare). Where parts are timed, each part's FLOPs and bytes are
    counted (roofline.part_work) and with peak (roofline.peak, measured once per command) its limit."""
    with phases.phase("inputs"):
        p = prepare(x, s, fused_merge, kernel, state, up_projection, weights)
    run.path, run.iterations, run.steps, run.merges, run.buffer_rows = s.path, s.iterations, len(s.steps), s.merges, s.buffer_rows
    run.merges_per_query_max, run.merges_per_query_p99 = merge_stats(s.merges_per_query(x.lengths.new_tokens))
    run.state = str(p.state).replace("torch.", "")
    cuda = x.device.type == "cuda"
    if reference is not None:
        out, lse = execute(p)
        run.max_abs_error, run.max_abs_lse_error, run.ok = errors(out, lse, *reference, tolerance)
        del out, lse
    if reps > 0:
        t: Timing = measure(lambda r: execute(p, r), cuda, reps, warmup, graph, trace, ranges, parts, settle_ms,
                            graph_first, cpu_wait_s, (lambda: dispatch_probe.probe_ms(p)) if cuda else None,
                            stamp_launches=cuda and host_reps > 0, reheat_ms=reheat_ms, eager=eager)
        run.cpu_probe_ms, run.dispatch_probe_ms = t.cpu_probe_ms, t.dispatch_probe_ms
        clock = gpu_clock.sample(x.device)
        run.sm_clock_mhz, run.power_w = clock.get("sm_clock_mhz"), clock.get("power_w")
        stamped = host_clock.per_launch_us(t.launch_stamps)
        if stamped is not None:
            run.host_launch_us, run.host_issue_ms = stamped["launch_us"], stamped["issue_ms"]
        run.eager_ms, run.eager_spread_ms, run.graph_ms, run.graph_error = t.eager_ms, t.eager_spread_ms, t.graph_ms, t.graph_error
        run.parts_ms = {k: round(v, 4) for k, v in t.parts_ms.items()}
        if run.parts_ms:
            work = roofline.part_work(s, x, up_projection, p.state, p.pad_v)
            run.parts_flops = {k: w.flops for k, w in work.items()}
            run.parts_bytes = {k: w.bytes for k, w in work.items()}
            if peak is not None:
                run.parts_roofline_ms = {k: float(f"{v:.4g}") for k, v in roofline.limits_ms(work, peak).items()}
        run.gpu_busy_ms = t.gpu_busy_ms
        run.gpu_idle_ms = None if t.gpu_span_ms is None else max(0.0, t.gpu_span_ms - t.gpu_busy_ms)
        run.kernels = t.kernels
        run.attention_tflop = attention_flops(s, x) / 1e12
        attn = t.parts_ms.get("attention", 0.0)
        if cuda and attn > 0:
            run.attention_tflops = run.attention_tflop / (attn / 1e3)
    if cuda and host_reps > 0:
        with phases.phase("host"):
            executor.launch_log = {}
            try:
                execute(p)
                run.launches = {k: executor.launch_log.get(k, 0) for k in executor.LAUNCH_KINDS}
            finally:
                executor.launch_log = None
        if cpu_wait_s > 0:
            cpu_speed.wait_for_full_speed(cpu_wait_s)
        with phases.phase("host"):
            host = time_host(lambda: execute(p), host_reps)
        run.host_ms = None if host is None else statistics.median(host)
    return run
