"""The up-projection fused with the gather and the attention's layout (issue 64 item 1, bf16).

The unfused path (executor._up_project, as vLLM and SGLang run it) gathers a chunk's latent rows into
a buffer, runs kv_b_proj as one GEMM into [rows, heads, qk_nope + v_head], splits that, and builds K
with torch.cat of the nope part and the rope part broadcast over the heads: a second pass that reads
and writes all of K again. fused_up_project is one Triton kernel instead: its prologue reads the rows
straight from the flat cache through their indices (no gathered buffer), it accumulates the product
with kv_b_proj^T in float32, and its epilogue stores K's nope part and V in their final tensors; the
program holding a head's first nope tile also copies the row's rope part into that head's
K[:, h, qk_nope:]. Program ids run over one row block's column tiles first, so the tiles reading one
block of gathered rows run together and find them in L2 (kv_b_proj, 4 MB at DeepSeek-V3 TP 8, stays
there throughout).

reference_up_project is the unfused path in plain torch: the tests' reference, and the fallback where
the kernel cannot run (why_reference says why).
"""
from __future__ import annotations

import os
from typing import Dict, Optional, Tuple

import torch

from .inputs import PrefillInputError
from .model import MlaDims

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: the reference serves
    triton = None

# Triton's interpreter (kernels run on the CPU) is chosen when the kernel is decorated, at import, from
# the environment then; the CPU path follows that same reading.
_INTERPRET = triton is not None and os.environ.get("TRITON_INTERPRET") == "1"
KERNEL_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
# Hopper defaults: a 128 x 128 tile is one head's nope part or V at DeepSeek-V3's dims; 64-wide K steps
# pipelined 3 deep take 96 KB of shared memory. Tiles passed to fused_up_project override these.
DEFAULT_TILES: Dict[str, int] = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}

if triton is not None:

    @triton.jit
    def _fused_up_kernel(
        cache_ptr, cache_s0, rows_ptr, n_rows, w_ptr, w_s0,
        k_ptr, k_s0, k_s1, v_ptr, v_s0, v_s1,
        KV_LORA: tl.constexpr, ROPE: tl.constexpr, ROPE_BLOCK: tl.constexpr, QK_NOPE: tl.constexpr,
        V_HEAD: tl.constexpr, HEADS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr, IEEE: tl.constexpr, UPCAST: tl.constexpr, RNE: tl.constexpr,
    ):
        K_TILES: tl.constexpr = QK_NOPE // BLOCK_N
        HEAD_TILES: tl.constexpr = (QK_NOPE + V_HEAD) // BLOCK_N
        pid = tl.program_id(0)
        # Column tiles fastest: a row block's HEADS * HEAD_TILES tiles are neighbours in launch order.
        pid_m = pid // (HEADS * HEAD_TILES)
        pid_n = pid % (HEADS * HEAD_TILES)
        h = pid_n // HEAD_TILES
        t = pid_n % HEAD_TILES  # K's nope tiles first, then V's, as kv_b_proj orders a head's rows
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        in_m = offs_m < n_rows
        # int64 offsets: a cache or a K of a million rows passes 2^31 elements.
        src = tl.load(rows_ptr + offs_m, mask=in_m, other=0).to(tl.int64) * cache_s0
        dst = offs_m.to(tl.int64)
        offs_k = tl.arange(0, BLOCK_K)
        offs_n = tl.arange(0, BLOCK_N)
        w_rows = (h * (QK_NOPE + V_HEAD) + t * BLOCK_N + offs_n).to(tl.int64) * w_s0
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, KV_LORA, BLOCK_K):
            a = tl.load(cache_ptr + src[:, None] + (k0 + offs_k)[None, :], mask=in_m[:, None], other=0.0)
            b = tl.load(w_ptr + w_rows[None, :] + (k0 + offs_k)[:, None])
            if UPCAST:  # the interpreter multiplies bf16's raw bits; the products are exact in float32 anyway
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            if IEEE:  # float32 operands: no TF32 rounding, as torch's linear on float32
                acc = tl.dot(a, b, acc, input_precision="ieee")
            else:
                acc = tl.dot(a, b, acc)
        if RNE:  # the interpreter truncates float32 to bf16; the GPU rounds to nearest even, as done here
            bits = acc.to(tl.uint32, bitcast=True)
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
            acc = bits.to(tl.float32, bitcast=True)
        out = acc.to(k_ptr.dtype.element_ty)
        if t < K_TILES:
            tl.store(k_ptr + dst[:, None] * k_s0 + h * k_s1 + t * BLOCK_N + offs_n[None, :], out, mask=in_m[:, None])
        else:
            tl.store(v_ptr + dst[:, None] * v_s0 + h * v_s1 + (t - K_TILES) * BLOCK_N + offs_n[None, :], out,
                     mask=in_m[:, None])
        if t == 0:  # the rope part, once per head, from the rows this program has just read (in L1/L2)
            offs_r = tl.arange(0, ROPE_BLOCK)
            keep = in_m[:, None] & (offs_r < ROPE)[None, :]
            rope = tl.load(cache_ptr + src[:, None] + KV_LORA + offs_r[None, :], mask=keep, other=0.0)
            tl.store(k_ptr + dst[:, None] * k_s0 + h * k_s1 + QK_NOPE + offs_r[None, :], rope, mask=keep)


def _fail(argument: str, message: str):
    raise PrefillInputError(f"{argument}: {message}")


def _pow2_divisor(want: int, *sizes: int) -> Optional[int]:
    """The largest power of two from want down to 16 (tl.dot's least) dividing every size."""
    b = 1 << (max(int(want), 1).bit_length() - 1)
    while b >= 16:
        if all(s % b == 0 for s in sizes):
            return b
        b //= 2
    return None


def _tiles(dims: MlaDims, tiles: Optional[Dict[str, int]], itemsize: int = 2) -> Tuple[Optional[Dict[str, int]], str]:
    # float32 operands take twice the shared memory a stage: half the K step, two stages (96 KB).
    t = {**DEFAULT_TILES, **({"BLOCK_K": 32, "num_stages": 2} if itemsize > 2 else {}), **(tiles or {})}
    # A column tile lies within one head's nope part or its V, so its stores are one contiguous run.
    bn = _pow2_divisor(t["BLOCK_N"], dims.qk_nope, dims.v_head)
    bk = _pow2_divisor(t["BLOCK_K"], dims.kv_lora)
    if bn is None or bk is None:
        return None, (f"qk_nope {dims.qk_nope}, v_head {dims.v_head} and kv_lora {dims.kv_lora} need a common "
                      "power-of-two tile of at least 16")
    t.update(BLOCK_N=bn, BLOCK_K=bk, BLOCK_M=max(16, 1 << (max(int(t["BLOCK_M"]), 1).bit_length() - 1)))
    return t, ""


def why_reference(cache_flat: torch.Tensor, dims: MlaDims) -> Optional[str]:
    """None where fused_up_project runs its Triton kernel on these tensors; else why it runs the reference."""
    if triton is None:
        return "Triton is not importable"
    if not cache_flat.is_cuda and not _INTERPRET:
        return "a CPU tensor without TRITON_INTERPRET=1 (set before Triton is imported)"
    if cache_flat.dtype not in KERNEL_DTYPES:
        return f"the kernel takes bf16, fp16 or fp32, not {cache_flat.dtype}"
    return _tiles(dims, None)[1] or None


def _check_out(name: str, t: Optional[torch.Tensor], shape: Tuple[int, ...], like: torch.Tensor) -> None:
    if t is None:
        return
    if not isinstance(t, torch.Tensor):
        _fail(name, f"expected a torch.Tensor or None, got {type(t).__name__}")
    if tuple(t.shape) != shape or t.dtype != like.dtype or t.device != like.device:
        _fail(name, f"expected a {like.dtype} tensor of shape {list(shape)} on {like.device} (rows, heads, width), "
                    f"got {t.dtype} {list(t.shape)} on {t.device}")
    if shape[0] and t.stride(-1) != 1:
        _fail(name, f"its last dimension must be contiguous (stride 1), got strides {list(t.stride())}; "
                    "pass a view whose head dimension is dense")


def _check(cache_flat, rows, kv_b_proj, dims, k_out, v_out, check_rows: Optional[bool]) -> int:
    """Every argument the kernel relies on; PrefillInputError (a ValueError) naming the argument. -> rows."""
    if not isinstance(dims, MlaDims):
        _fail("dims", f"expected an MlaDims (mlaplan.prefill.model_dims), got {type(dims).__name__}")
    if not isinstance(cache_flat, torch.Tensor) or cache_flat.ndim != 2 or cache_flat.shape[1] != dims.latent:
        got = f"{list(cache_flat.shape)}" if isinstance(cache_flat, torch.Tensor) else type(cache_flat).__name__
        _fail("cache_flat", f"expected a tensor of shape [cache rows, kv_lora + qk_rope = {dims.latent}] "
                            f"(kv_cache.view(-1, {dims.latent})), got {got}")
    if not cache_flat.dtype.is_floating_point or cache_flat.stride(1) != 1:
        _fail("cache_flat", f"expected a floating tensor with contiguous rows, got {cache_flat.dtype} with strides "
                            f"{list(cache_flat.stride())}")
    if not isinstance(rows, torch.Tensor) or rows.ndim != 1 or rows.dtype not in (torch.int32, torch.int64):
        got = f"{rows.dtype} {list(rows.shape)}" if isinstance(rows, torch.Tensor) else type(rows).__name__
        _fail("rows", f"expected a 1-D int32 or int64 tensor of flat cache rows, got {got}")
    if rows.device != cache_flat.device:
        _fail("rows", f"on {rows.device}, but cache_flat is on {cache_flat.device}; put both on one device")
    want = (dims.heads * (dims.qk_nope + dims.v_head), dims.kv_lora)
    if not isinstance(kv_b_proj, torch.Tensor) or tuple(kv_b_proj.shape) != want:
        got = f"{list(kv_b_proj.shape)}" if isinstance(kv_b_proj, torch.Tensor) else type(kv_b_proj).__name__
        _fail("kv_b_proj", f"expected shape {list(want)} (heads * (qk_nope + v_head), kv_lora) for {dims.heads} "
                           f"heads, got {got}")
    if kv_b_proj.dtype != cache_flat.dtype or kv_b_proj.device != cache_flat.device or kv_b_proj.stride(1) != 1:
        _fail("kv_b_proj", f"expected {cache_flat.dtype} on {cache_flat.device} with contiguous rows (cache_flat's), "
                           f"got {kv_b_proj.dtype} on {kv_b_proj.device} with strides {list(kv_b_proj.stride())}")
    n = int(rows.shape[0])
    if check_rows is None:  # a capture cannot read the rows back (a host sync): its plan was checked
        check_rows = not (rows.is_cuda and torch.cuda.is_current_stream_capturing())
    if check_rows and n:  # one host sync on CUDA
        lo, hi = int(rows.min()), int(rows.max())
        if lo < 0 or hi >= cache_flat.shape[0]:
            bad = lo if lo < 0 else hi
            _fail("rows", f"row {bad} is outside cache_flat's {cache_flat.shape[0]} rows; give rows 0 to "
                          f"{cache_flat.shape[0] - 1}")
    _check_out("k_out", k_out, (n, dims.heads, dims.qk_head), cache_flat)
    _check_out("v_out", v_out, (n, dims.heads, dims.v_head), cache_flat)
    return n


def reference_up_project(cache_flat: torch.Tensor, rows: torch.Tensor, kv_b_proj: torch.Tensor, dims: MlaDims,
                         k_out: Optional[torch.Tensor] = None, v_out: Optional[torch.Tensor] = None,
                         check_rows: Optional[bool] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """The unfused path, op for op as executor._up_project runs it after the gather: (K [n, heads,
    qk_head] contiguous, V [n, heads, v_head], a strided view of the GEMM's output unless v_out is
    given). With k_out or v_out the results are copied into them and they are returned."""
    _check(cache_flat, rows, kv_b_proj, dims, k_out, v_out, check_rows)
    latent = cache_flat.index_select(0, rows)
    kv = torch.nn.functional.linear(latent[:, : dims.kv_lora], kv_b_proj).view(-1, dims.heads, dims.qk_nope + dims.v_head)
    k_nope, v = kv.split([dims.qk_nope, dims.v_head], dim=-1)
    k = torch.cat((k_nope, latent[:, None, dims.kv_lora :].expand(-1, dims.heads, -1)), dim=-1)
    if k_out is not None:
        k = k_out.copy_(k)
    if v_out is not None:
        v = v_out.copy_(v)
    return k, v


def fused_up_project(cache_flat: torch.Tensor, rows: torch.Tensor, kv_b_proj: torch.Tensor, dims: MlaDims,
                     k_out: Optional[torch.Tensor] = None, v_out: Optional[torch.Tensor] = None,
                     check_rows: Optional[bool] = None, tiles: Optional[Dict[str, int]] = None,
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
    """K [n, heads, qk_head] and V [n, heads, v_head] of the latent rows cache_flat[rows], in one kernel.

    cache_flat: [cache rows, kv_lora + qk_rope] (kv_cache.view(-1, latent)); rows: [n] int32 or int64
    flat row numbers, read in the kernel's prologue; kv_b_proj: [heads * (qk_nope + v_head), kv_lora],
    cache_flat's dtype (torch.nn.Linear's layout). K[:, h] = [latent[:kv_lora] @ W_k[h]^T, latent[kv_lora:]],
    V[:, h] = latent[:kv_lora] @ W_v[h]^T, accumulated in float32 and stored in cache_flat's dtype.
    k_out, v_out: preallocated outputs (views of those shapes with a dense last dimension, such as the
    first v_head columns of FA2's padded V buffer); else new contiguous tensors. check_rows: check every
    row is in cache_flat (one host sync on CUDA); None (the default): unless a CUDA graph is being
    captured, where reading the rows back cannot be done (the caller's plan vouches for them). tiles: overrides of
    DEFAULT_TILES (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), for tuning.

    Runs the Triton kernel on CUDA tensors, and on CPU tensors under Triton's interpreter
    (TRITON_INTERPRET=1 before Triton is imported); anywhere else (a CPU tensor without it, no Triton,
    dims without a tile of 16 dividing them) it runs reference_up_project, the unfused torch path, so
    one call serves every device (why_reference says which). Bad arguments raise PrefillInputError (a
    ValueError) naming the argument."""
    n = _check(cache_flat, rows, kv_b_proj, dims, k_out, v_out, check_rows)
    if tiles is not None and (not isinstance(tiles, dict) or not set(tiles) <= set(DEFAULT_TILES) or any(
            type(x) is not int or x < 1 for x in tiles.values())):
        _fail("tiles", f"expected a dict of positive ints with keys from {', '.join(DEFAULT_TILES)}, got {tiles!r}")
    if why_reference(cache_flat, dims) is not None:
        return reference_up_project(cache_flat, rows, kv_b_proj, dims, k_out, v_out, check_rows=False)
    t, _ = _tiles(dims, tiles, cache_flat.element_size())
    k = k_out if k_out is not None else cache_flat.new_empty((n, dims.heads, dims.qk_head))
    v = v_out if v_out is not None else cache_flat.new_empty((n, dims.heads, dims.v_head))
    if n == 0:
        return k, v
    head_tiles = (dims.qk_nope + dims.v_head) // t["BLOCK_N"]
    grid = (triton.cdiv(n, t["BLOCK_M"]) * dims.heads * head_tiles,)
    _fused_up_kernel[grid](
        cache_flat, cache_flat.stride(0), rows, n, kv_b_proj, kv_b_proj.stride(0),
        k, k.stride(0), k.stride(1), v, v.stride(0), v.stride(1),
        KV_LORA=dims.kv_lora, ROPE=dims.qk_rope, ROPE_BLOCK=triton.next_power_of_2(max(dims.qk_rope, 1)),
        QK_NOPE=dims.qk_nope, V_HEAD=dims.v_head, HEADS=dims.heads,
        BLOCK_M=t["BLOCK_M"], BLOCK_N=t["BLOCK_N"], BLOCK_K=t["BLOCK_K"], IEEE=cache_flat.dtype == torch.float32 or not cache_flat.is_cuda,
        UPCAST=not cache_flat.is_cuda, RNE=not cache_flat.is_cuda and cache_flat.dtype == torch.bfloat16,
        num_warps=t["num_warps"], num_stages=t["num_stages"],
    )
    return k, v


def up_projection_work(n: int, dims: MlaDims, itemsize: int = 2) -> Tuple[float, float]:
    """(FLOPs, bytes) of the up-projection of n rows: the GEMM's multiply-adds, and the latent rows read,
    K and V written and kv_b_proj read once (its roofline: the larger of FLOPs at the GPU's measured GEMM
    peak and bytes at its measured copy bandwidth)."""
    cols = dims.heads * (dims.qk_nope + dims.v_head)
    flops = 2.0 * n * dims.kv_lora * cols
    moved = n * (dims.latent + dims.heads * (dims.qk_head + dims.v_head)) + cols * dims.kv_lora
    return flops, float(moved * itemsize)
