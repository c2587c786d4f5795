"""Runs a schedule: per step, the gather, the up-projection, the attention and the merge, each in an
NVTX range (and a profiler range, so its kernels can be summed by part).

`Prepared` holds what an engine has ready before the step starts: the flat view of the cache, the
new tokens' own latent rows (the forward computed them), the gather buffer and the weight's views.
`execute` is then only GPU work and its dispatch, so it can be timed eagerly or captured in a graph.
With up_projection="fused" (mlaplan's own loop) each step's gather, up-projection and K concat are one
kernel (fused_up), writing K and V into buffers prepared once.
"""
from __future__ import annotations

import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

from .attention import latent_attention, pad_v, resolve_kernel, varlen_attention
from .fused_up import assemble_kv, fused_up_project, linear_fp8, quantize_kv_b_proj
from .inputs import PrefillInputs, flat_rows, host_page_table
from .merge import merge_into
from .schedule import Schedule, Step

PARTS = ("gather", "up-projection", "attention", "merge", "new tokens")
RANGE_PREFIX = "mlaplan.prefill/"


# Where annotate adds each part's host seconds (the CPU path's part times); None: not timing.
part_clock: Optional[Dict[str, float]] = None
# Where execute counts the kernels it launches, by kind (LAUNCH_KINDS: the kinds eager time prices,
# mlaplan.cost_launches); None: not counting.
launch_log: Optional[Dict[str, int]] = None
LAUNCH_KINDS = ("gather", "up_projection", "concat", "attention", "merge", "fill")
# Where execute stamps the host's clock just after it issues each launch, as (kind, launches,
# time.perf_counter_ns()), after a ("start", 0, ns) stamp on entry; None: not stamping. The time
# between two stamps is what the host spent issuing the later launch, which eager time's two clocks
# take as that launch's host cost (host_clock.py reads them). A stamp costs the host about 0.1 us.
launch_stamps: Optional[List[Tuple[str, int, int]]] = None


def _launched(kind: str, n: int = 1) -> None:
    """Called just after the host issues n launches of kind (0: none issued after all)."""
    if launch_log is not None:
        launch_log[kind] = launch_log.get(kind, 0) + n
    if launch_stamps is not None and n:
        launch_stamps.append((kind, n, time.perf_counter_ns()))


def annotate(name: str, ranges: bool, nvtx: bool):
    """With ranges: an NVTX range (nvtx: on CUDA, for Nsight Systems) and a profiler range named after
    the part, whose time part_clock collects where set. Without: nothing, so timed runs pay no host
    time for annotations an engine would not have."""
    return _annotated(name, nvtx) if ranges else nullcontext()


@contextmanager
def _annotated(name: str, nvtx: bool):
    part = name.rsplit(": ", 1)[-1]
    if nvtx:
        torch.cuda.nvtx.range_push(name)
    start = time.perf_counter()
    try:
        with torch.profiler.record_function(RANGE_PREFIX + part):
            yield
    finally:
        if part_clock is not None:
            part_clock[part] = part_clock.get(part, 0.0) + time.perf_counter() - start
        if nvtx:
            torch.cuda.nvtx.range_pop()


@dataclass
class Prepared:
    x: PrefillInputs
    schedule: Schedule
    cache_flat: torch.Tensor
    new_latent: torch.Tensor
    buffer: torch.Tensor
    fused_merge: Optional[bool]
    kernel: str  # the attention kernel on CUDA: fa3 or cudnn (V as it is), flash (FA2, V padded as vLLM pads it)
    state: torch.dtype = torch.bfloat16  # the running output's dtype across merges (state_dtype)
    # mlaplan's own loop (up_projection="fused"): the new tokens' flat rows, and K and V of a step's rows
    # (V padded where pad_v, its padding zero); None in the engines' loop.
    new_rows: Optional[torch.Tensor] = None
    k_buf: Optional[torch.Tensor] = None
    v_buf: Optional[torch.Tensor] = None
    # weights="fp8": kv_b_proj in e4m3 and its 128 x 128 block scales, as the FP8 checkpoint holds it.
    fp8: Optional[Tuple[torch.Tensor, torch.Tensor]] = None

    @property
    def pad_v(self) -> bool:
        return self.kernel == "flash" or not self.x.q.is_cuda


STATES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# How a step's K and V are made: as the engines do (a gather, a GEMM, a K concat), or fused into one kernel.
UP_PROJECTIONS = ("unfused", "fused")
# kv_b_proj as the model's checkpoint holds it: bf16, or e4m3 with 128 x 128 block scales (DeepSeek-V3's
# official FP8 checkpoint, which engines run as a block-scaled FP8 GEMM on activations quantized per
# token group: fused_up's docstring says where in vLLM).
WEIGHTS = ("bf16", "fp8")


def state_dtype(state, q_dtype: torch.dtype) -> torch.dtype:
    """The running output's dtype: None keeps it in the attention's output dtype (q's), as the engines'
    merges do (bf16 on the GPU); "fp32" keeps it in float32 across merges and rounds once at the end;
    "bf16" on float32 inputs rounds it to bf16 at every merge, as the engines do (the CPU's emulation)."""
    if state is None:
        return q_dtype
    if isinstance(state, torch.dtype) and state in STATES.values():
        return state
    if state not in STATES:
        raise ValueError(f"state: {state!r}; choose one of {', '.join(STATES)} (or None: the output's dtype)")
    return STATES[state]


def prepare(x: PrefillInputs, schedule: Schedule, fused_merge: Optional[bool] = None, kernel: str = "auto",
            state=None, up_projection: str = "unfused", weights: str = "bf16") -> Prepared:
    """What the step needs ready; kernel: an --attention name, auto resolved for the device
    (attention.resolve_kernel; ValueError where it cannot run); state: the running output's dtype
    (state_dtype); up_projection: one of UP_PROJECTIONS; weights: one of WEIGHTS (kv_b_proj quantized
    here once, as a checkpoint would hold it)."""
    if up_projection not in UP_PROJECTIONS:
        raise ValueError(f"up_projection: {up_projection!r}; choose one of {', '.join(UP_PROJECTIONS)}")
    if weights not in WEIGHTS:
        raise ValueError(f"weights: {weights!r}; choose one of {', '.join(WEIGHTS)}")
    if weights == "fp8" and any(st.absorbed for st in schedule.steps):
        raise ValueError("weights: fp8: SGLang's absorbed path takes kv_b_proj's bf16 halves into the queries; give "
                         "weights bf16, or another SGLang path")
    state = state_dtype(state, x.q.dtype)
    kernel, _ = resolve_kernel(kernel, x.device)
    n, d = x.lengths, x.dims
    cache_flat = x.kv_cache.view(-1, d.latent)
    table = host_page_table(x)
    parts = [flat_rows(table, n.page_size, b, int(n.cache[b]), int(n.new[b])) for b in range(n.batch_size)]
    rows = torch.as_tensor(np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64), device=x.device)
    new_latent = cache_flat.index_select(0, rows)
    buffer = torch.empty((max(schedule.buffer_rows, 1), d.latent), dtype=x.q.dtype, device=x.device)
    p = Prepared(x, schedule, cache_flat, new_latent, buffer, fused_merge, kernel, state)
    if weights == "fp8":
        p.fp8 = quantize_kv_b_proj(x.kv_b_proj)
    if up_projection == "fused":
        # K and V of the largest step, once: the engines' loop allocates them each step (from torch's cache).
        n = max(schedule.buffer_rows, int(rows.shape[0]), 1)
        p.new_rows = rows
        p.k_buf = torch.empty((n, d.heads, d.qk_head), dtype=x.q.dtype, device=x.device)
        p.v_buf = torch.zeros((n, d.heads, d.qk_head if p.pad_v else d.v_head), dtype=x.q.dtype, device=x.device)
    return p


def _up_project(p: Prepared, latent: torch.Tensor):
    d = p.x.dims
    if p.fp8 is not None:  # the activation quantized, then the block GEMM
        kv = linear_fp8(latent[:, : d.kv_lora], *p.fp8)
        _launched("up_projection", 2)
    else:
        kv = torch.nn.functional.linear(latent[:, : d.kv_lora], p.x.kv_b_proj)
        _launched("up_projection")
    k, v = assemble_kv(latent, kv, d)
    _launched("concat")
    padded = pad_v(v, d.qk_head) if p.pad_v else v
    _launched("concat", int(padded is not v))
    return k, padded


def _queries(q: torch.Tensor, a) -> torch.Tensor:
    if a.q_rows is None:
        return q[a.q0 : a.q0 + a.call.n_q]
    rows = q.index_select(0, a.q_rows)
    _launched("gather")
    return rows


def _absorbed(p: Prepared, latent: torch.Tensor, step: Step, ranges: bool, nvtx: bool):
    """MLA over the latent rows (SGLang's absorbed path): q_nope is taken into the latent space by
    W_UK, the latent rows are the keys (kv_c | k_pe) and values (kv_c), and W_UV brings the output back."""
    d, x = p.x.dims, p.x
    w = x.kv_b_proj.view(d.heads, d.qk_nope + d.v_head, d.kv_lora)
    with annotate(f"{step.label}: up-projection", ranges, nvtx):
        q_lat = torch.einsum("thn,hnl->thl", x.q[..., : d.qk_nope], w[:, : d.qk_nope])
        q_abs = torch.cat((q_lat, x.q[..., d.qk_nope :]), dim=-1)
    with annotate(f"{step.label}: attention", ranges, nvtx):
        out_lat, lse = latent_attention(q_abs, latent, step.attends[0].call, d.scale, d.kv_lora)
    with annotate(f"{step.label}: up-projection", ranges, nvtx):
        out = torch.einsum("thl,hvl->thv", out_lat, w[:, d.qk_nope :])
    return out, lse


def _fused_up_project(p: Prepared, step: Step):
    """K and V of the step's rows in one kernel, read from the cache through their row numbers."""
    d = p.x.dims
    rows = p.new_rows if step.new_tokens else step.rows
    n = int(rows.shape[0])
    # check_rows=False: the plan made the rows, and checking them is a host sync a step.
    w, scale = p.fp8 if p.fp8 is not None else (p.x.kv_b_proj, None)
    k, v = fused_up_project(p.cache_flat, rows, w, d, k_out=p.k_buf[:n], v_out=p.v_buf[:n, :, : d.v_head],
                            check_rows=False, kv_b_proj_scale=scale)
    _launched("up_projection")
    return k, (p.v_buf[:n] if p.pad_v else v)


def execute(p: Prepared, ranges: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """(out [T, heads, v_head] in q's dtype, lse [heads, T] float32) of the layer's prefill attention;
    ranges: each step and part in an NVTX range (on CUDA) and a profiler range. The running output is
    kept in p.state between merges: a take converts the attention's output to it, each merge rounds
    to it, and the result is converted back to q's dtype once."""
    x, s, d = p.x, p.schedule, p.x.dims
    nvtx = ranges and x.q.is_cuda
    T = x.lengths.new_tokens
    if launch_stamps is not None:
        launch_stamps.append(("start", 0, time.perf_counter_ns()))
    states: Dict[str, list] = {}
    for name in s.empty_targets:
        with annotate(f"{name}: merge", ranges, nvtx):
            o = x.q.new_zeros((T, d.heads, d.v_head), dtype=p.state)
            _launched("fill")
            states[name] = [o, torch.full((d.heads, T), float("-inf"), dtype=torch.float32, device=x.device)]
            _launched("fill")
    for step in s.steps:
        part = "new tokens" if step.new_tokens else None
        if nvtx:  # the step's own range, around its parts'
            torch.cuda.nvtx.range_push(step.label)
        fused = p.k_buf is not None and not step.absorbed
        if not fused:  # the fused kernel reads the rows itself
            with annotate(f"{step.label}: {part or 'gather'}", ranges, nvtx):
                if step.new_tokens:
                    latent = p.new_latent
                else:
                    latent = p.buffer[: step.n_rows]
                    torch.index_select(p.cache_flat, 0, step.rows, out=latent)
                    _launched("gather")
        if step.absorbed:
            out, lse = _absorbed(p, latent, step, ranges, nvtx)
            states[step.target] = [out.to(p.state), lse]
        else:
            with annotate(f"{step.label}: {part or 'up-projection'}", ranges, nvtx):
                k, v = _fused_up_project(p, step) if fused else _up_project(p, latent)
            results = []
            with annotate(f"{step.label}: {part or 'attention'}", ranges, nvtx):
                for a in step.attends:
                    qa = _queries(x.q, a)
                    results.append(varlen_attention(qa, k[a.k0 : a.k0 + a.call.n_k], v[a.k0 : a.k0 + a.call.n_k],
                                                    a.call, d.scale, p.kernel))
                    _launched("attention", int(a.call.n_q > 0))  # varlen_attention launches none without queries
            with annotate(f"{step.label}: {part or 'merge'}", ranges, nvtx):
                if step.take:
                    out, lse = results[0]
                    states[step.target] = [out[..., : d.v_head].to(p.state), lse]
                else:
                    o, l = states[step.target]
                    for a, (out, lse) in zip(step.attends, results):
                        merge_into(o, l, out, lse, a.rows, p.fused_merge)
                        _launched("merge", int(a.call.n_q > 0))  # the fused merge launches none for no rows
        if nvtx:
            torch.cuda.nvtx.range_pop()
    if s.final_merge:
        with annotate("final: merge", ranges, nvtx):
            o, l = states["out"]
            c_o, c_l = states["context"]
            merge_into(o, l, c_o, c_l, slice(0, T), p.fused_merge)
            _launched("merge", int(T > 0))
    if s.result not in states:  # a batch without new tokens: nothing attends
        return x.q.new_zeros((T, d.heads, d.v_head)), torch.full((d.heads, T), float("-inf"), device=x.device)
    o, l = states[s.result]
    return o.to(x.q.dtype), l
