"""Each part of the executor's breakdown against its limit (issue 64 item 3).

`peak` measures what this GPU (or CPU) does in this run: a dense GEMM in the run's dtype and a device
copy, each timed after warm-up runs, the median of several timings. `part_work` counts each part's
FLOPs and bytes as executor.execute runs them, and `roofline_ms` turns them into the time the part
would take at those peaks: the larger of its FLOPs at the GEMM's rate and its bytes at the copy's.
A part's measured time over that limit says how far it is from its roofline (the issue measured
vLLM's up-projection at 3.3x its limit per 64K-row chunk on an H100).

The limit is taken over a part's total work, not kernel by kernel: the part's kernels run one after
another, each at most at peak, so their sum is at least the limit of their total. It is a bound, not
a prediction: a dense GEMM is the fastest a matrix product runs here, and a copy the fastest bytes move.
"""
from __future__ import annotations

import statistics
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import Dict, Optional

import torch

from . import timing
from .attention import VarlenCall
from .executor import PARTS, state_dtype
from .fused_up import up_projection_work
from .inputs import PrefillInputs
from .schedule import Schedule, Step

# The probe's sizes: on the GPU a GEMM large enough to reach cuBLAS's peak (8192^3, 1.1 TFLOP) and a
# copy of 1 GiB (far past any L2); on the CPU small ones, so the path is exercised in well under a second.
GPU_GEMM, GPU_COPY_BYTES = 8192, 1 << 30
CPU_GEMM, CPU_COPY_BYTES = 256, 16 << 20
WARMUP, REPS = 3, 10
DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}


@dataclass
class Peak:
    """What this device did in this run: a dense GEMM's TFLOP/s and a copy's GB/s (bytes read plus
    bytes written per second, as part_work counts a part's bytes)."""

    gemm_tflops: float
    copy_gbs: float
    dtype: str            # the GEMM's operands (the run's dtype): bf16, fp16 or fp32
    device: str           # cuda or cpu
    gemm_size: int        # the GEMM is gemm_size^3
    copy_bytes: int       # bytes read (and as many written) by the copy
    gemm_ms: float
    copy_ms: float

    def as_dict(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        """peak: dense bf16 GEMM 762 TFLOP/s, copy 2.9 TB/s, measured in this run"""
        where = "" if self.device == "cuda" else " (the CPU)"
        return f"peak: dense {self.dtype} GEMM {_rate(self.gemm_tflops * 1e3, 'FLOP/s')}, copy " \
               f"{_rate(self.copy_gbs, 'B/s')}, measured in this run{where}"


def _rate(giga: float, unit: str) -> str:
    """A rate given in G<unit>, in T<unit> from 1000 up (762 TFLOP/s, 2.9 TB/s, 52 GFLOP/s)."""
    if giga >= 1000:
        t = giga / 1000
        return f"{t:.0f} T{unit}" if t >= 100 else f"{t:.1f} T{unit}"
    return f"{giga:.0f} G{unit}" if giga >= 10 else f"{giga:.2f} G{unit}"


def _median_ms(fn, cuda: bool, settle_ms: float) -> float:
    # timing's own warm-up (settle_ms back to back on the GPU, the sustained clock the runs see) and timers.
    timing._warm(fn, cuda, WARMUP, settle_ms)
    samples = timing._events_ms(fn, REPS) if cuda else timing._wall_ms(fn, REPS)
    return max(statistics.median(samples), 1e-6)  # a clock that saw nothing pass: no division by zero


def _gemm_ms(n: int, dtype: torch.dtype, device: torch.device, settle_ms: float) -> float:
    """An n x n x n product of N(0, 1) operands (zeros would draw less power, and clock higher)."""
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn((n, n), generator=gen, device=device, dtype=torch.float32).to(dtype)
    b = torch.randn((n, n), generator=gen, device=device, dtype=torch.float32).to(dtype)
    c = torch.empty((n, n), device=device, dtype=dtype)
    return _median_ms(lambda: torch.matmul(a, b, out=c), device.type == "cuda", settle_ms)


def _copy_ms(n_bytes: int, device: torch.device, settle_ms: float) -> float:
    src = torch.empty(n_bytes // 2, device=device, dtype=torch.int16)
    dst = torch.empty_like(src)
    return _median_ms(lambda: dst.copy_(src), device.type == "cuda", settle_ms)


def peak(device, dtype: torch.dtype = torch.bfloat16, settle_ms: float = 0.0) -> Peak:
    """A dense dtype GEMM (8192^3 on the GPU) and a copy of 1 GiB (on the GPU; at most a quarter of
    its free memory) on `device`, each the median of REPS timings after warm-up runs (CUDA events on
    the GPU, wall time on the CPU, where the sizes are small: it takes well under a second). settle_ms:
    on the GPU each runs back to back that long first, as the executor's timings do. The tensors are
    freed (and on the GPU returned to the driver) before it returns."""
    device = torch.device(device)
    cuda = device.type == "cuda"
    if dtype not in DTYPE_NAMES:
        raise ValueError(f"dtype: {dtype}; choose one of torch.bfloat16, torch.float16, torch.float32")
    n, copy_bytes = (GPU_GEMM, GPU_COPY_BYTES) if cuda else (CPU_GEMM, CPU_COPY_BYTES)
    if cuda:
        copy_bytes = max(1, min(copy_bytes, torch.cuda.mem_get_info(device)[0] // 4) >> 20) << 20  # whole MiB
    with torch.cuda.device(device) if cuda else nullcontext():
        gemm_ms = _gemm_ms(n, dtype, device, settle_ms)
        copy_ms = _copy_ms(copy_bytes, device, settle_ms)
        if cuda:  # the probe's gigabytes back to the driver, for the runs
            torch.cuda.empty_cache()
    return Peak(gemm_tflops=2.0 * n**3 / gemm_ms / 1e9, copy_gbs=2.0 * copy_bytes / copy_ms / 1e6,
                dtype=DTYPE_NAMES[dtype], device=device.type, gemm_size=n, copy_bytes=int(copy_bytes),
                gemm_ms=gemm_ms, copy_ms=copy_ms)


@dataclass(frozen=True)
class Work:
    """A part's (or an op's) FLOPs and bytes moved (read plus written)."""

    flops: float
    bytes: float

    def __add__(self, other: "Work") -> "Work":
        return Work(self.flops + other.flops, self.bytes + other.bytes)


NONE = Work(0.0, 0.0)


def roofline_ms(work: Work, p: Peak) -> float:
    """The least time `work` takes at the peaks: the larger of its FLOPs at the GEMM's rate and its
    bytes at the copy's."""
    return max(work.flops / (p.gemm_tflops * 1e9), work.bytes / (p.copy_gbs * 1e6))


def call_flops(c: VarlenCall, heads: int, width: int) -> float:
    """The useful FLOPs of one varlen launch: 2 * width per visible (query, key) pair and head (width:
    qk_head + v_head, QK^T's and PV's multiply-adds), masked pairs and V's padding not counted."""
    flops = 0.0
    for i in range(len(c.cu_q_host) - 1):
        nq, nk = c.cu_q_host[i + 1] - c.cu_q_host[i], c.cu_k_host[i + 1] - c.cu_k_host[i]
        flops += 2.0 * (nq * nk - (nq * (nq - 1) // 2 if c.causal else 0)) * heads * width
    return flops


def _attention(step: Step, x: PrefillInputs, v_width: int, s: int) -> Work:
    """The step's launches: their useful FLOPs (call_flops), and Q, K and V read, O and the float32 LSE
    written, once each (plus Q's gather where a launch's queries are not one run of rows). A launch
    without queries launches nothing."""
    d = x.dims
    w = NONE
    for a in step.attends:
        c = a.call
        if c.n_q == 0:
            continue
        q_bytes = c.n_q * d.heads * d.qk_head * s
        moved = q_bytes + c.n_k * d.heads * (d.qk_head + v_width) * s + c.n_q * d.heads * (v_width * s + 4)
        if a.q_rows is not None:
            moved += 2 * q_bytes
        w = w + Work(call_flops(c, d.heads, d.qk_head + d.v_head), float(moved))
    return w


def _merge(step: Step, x: PrefillInputs, s: int, ss: int) -> Work:
    """The step's merges: a take converts the output to the state's dtype (nothing where it is the
    same); a merge of n rows reads the state's rows and the part's (output and LSE) and writes the
    state's, 3 FLOPs per output value (two weighted values summed; the LSE's exps are not counted)."""
    d = x.dims
    if step.take:
        n = step.attends[0].call.n_q
        return NONE if s == ss else Work(0.0, float(n * d.heads * d.v_head * (s + ss)))
    w = NONE
    for a in step.attends:
        n = a.call.n_q
        w = w + Work(3.0 * n * d.heads * d.v_head, float(n * d.heads * (d.v_head * (2 * ss + s) + 3 * 4)))
    return w


def _absorbed(step: Step, x: PrefillInputs, s: int) -> Dict[str, Work]:
    """SGLang's absorbed step (executor._absorbed): q_nope taken into the latent space by W_UK and joined
    to q's rope part, MLA over the latent rows (read once, every head's keys and values), and W_UV."""
    d = x.dims
    c = step.attends[0].call
    t = c.n_q
    q_in = Work(2.0 * t * d.heads * d.qk_nope * d.kv_lora,
                float((t * d.heads * d.qk_nope + d.heads * d.qk_nope * d.kv_lora + t * d.heads * d.kv_lora) * s))
    q_cat = Work(0.0, float(t * d.heads * (d.kv_lora + d.qk_rope + d.latent) * s))
    out = Work(2.0 * t * d.heads * d.kv_lora * d.v_head,
               float((t * d.heads * d.kv_lora + d.heads * d.v_head * d.kv_lora + t * d.heads * d.v_head) * s))
    attn = Work(call_flops(c, d.heads, d.latent + d.kv_lora),
                float((t * d.heads * d.latent + c.n_k * d.latent + t * d.heads * d.kv_lora) * s + t * d.heads * 4))
    return {"up-projection": q_in + q_cat + out, "attention": attn}


def part_work(schedule: Schedule, x: PrefillInputs, up_projection: str = "unfused", state=None,
              pad_v: Optional[bool] = None) -> Dict[str, Work]:
    """Each part's (FLOPs, bytes) as executor.execute runs `schedule` on x (executor.PARTS):

    - gather: each step's rows, latent wide, read from the cache and written to the buffer (no FLOPs);
      none in the fused loop, whose kernel reads the rows itself;
    - up-projection: what making K and V of the rows takes, in either loop (fused_up.up_projection_work:
      2 * rows * kv_lora * heads * (qk_nope + v_head) FLOPs, the latent rows and kv_b_proj read, K and V
      written once). The unfused loop's K concat and V's pad are not in its limit: they are passes that
      loop chooses, and the distance they add is what the table shows (the issue's probe: vLLM's GEMM,
      split and torch.cat at 2.4x this limit);
    - attention: each launch's useful FLOPs and its Q, K, V read and O, LSE written (_attention);
    - merge: the empty states' fills, each merge's state and part read and state written, the final
      merge (_merge);
    - new tokens: that step's own up-projection (no gather: the forward made its latent rows), causal
      attention and merge or take, counted as above.

    up_projection: "unfused" or "fused" (the executor's loop); state: the running state's dtype
    (executor.state_dtype; None: q's); pad_v: V padded to qk_head before attention (FlashAttention-2 and
    the CPU kernel; None: on the CPU). Bytes are the least each op must move (the row indices and
    cu_seqlens are left out: a few bytes a row); no op's reads are assumed to hit in cache."""
    if up_projection not in ("unfused", "fused"):
        raise ValueError(f"up_projection: {up_projection!r}; choose unfused or fused")
    d = x.dims
    s = x.q.element_size()
    ss = torch.empty((), dtype=state_dtype(state, x.q.dtype)).element_size()
    if pad_v is None:
        pad_v = not x.q.is_cuda
    fused = up_projection == "fused"
    v_width = d.qk_head if pad_v else d.v_head
    T = x.lengths.new_tokens
    parts = {p: NONE for p in PARTS}
    parts["merge"] = Work(0.0, float(len(schedule.empty_targets) * T * d.heads * (d.v_head * ss + 4)))
    for step in schedule.steps:
        n = step.n_rows
        if step.absorbed:
            parts["gather"] += Work(0.0, float(2 * n * d.latent * s))
            for k, w in _absorbed(step, x, s).items():
                parts[k] += w
            continue
        up = Work(*up_projection_work(n, d, s))
        if not fused and not step.new_tokens:
            parts["gather"] += Work(0.0, float(2 * n * d.latent * s))
        attn, merge = _attention(step, x, v_width, s), _merge(step, x, s, ss)
        if step.new_tokens:
            parts["new tokens"] += up + attn + merge
        else:
            parts["up-projection"] += up
            parts["attention"] += attn
            parts["merge"] += merge
    if schedule.final_merge:
        parts["merge"] += Work(3.0 * T * d.heads * d.v_head, float(3 * T * d.heads * (d.v_head * ss + 4)))
    return parts


def limits_ms(parts: Dict[str, Work], p: Peak) -> Dict[str, float]:
    """Each part's roofline_ms at the peaks p."""
    return {k: roofline_ms(w, p) for k, w in parts.items()}
