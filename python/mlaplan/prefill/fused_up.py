"""The up-projection fused with the gather and the attention's layout (issue 64 item 1, bf16 and FP8).

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

FP8 (kv_b_proj_scale given). DeepSeek-V3's official checkpoint stores kv_b_proj in float8_e4m3fn with
one float32 scale a 128 x 128 block (weight_scale_inv; quantization_config weight_block_size [128, 128],
dynamic activations). What vLLM runs on it in its MLA prefill, read from vLLM's source:
- vllm/model_executor/models/deepseek_v2.py builds kv_b_proj as a ColumnParallelLinear with the model's
  quant_config, so with the FP8 checkpoint its quant_method is Fp8LinearMethod
  (vllm/model_executor/layers/quantization/fp8.py: block_quant, weight e4m3 [N, K], weight_scale_inv
  [ceil(N / 128), ceil(K / 128)]).
- vllm/v1/attention/backends/mla/common.py, _compute_prefill_context: per context chunk,
  ops.gather_and_maybe_dequant_cache copies the chunk's latent rows into a workspace, then
  self.kv_b_proj(kv_c_normed) (the layer itself, in FP8), split into k_nope and v, and torch.cat with
  k_pe expanded over the heads. (Only the decode path's W_UK_T / W_UV are bf16 copies, dequantized once
  in process_weights_after_loading; the prefill's up-projection runs the FP8 layer.)
- Fp8LinearMethod.apply with block quantization calls W8A8BlockFp8LinearOp.apply
  (vllm/model_executor/layers/quantization/utils/fp8_utils.py): the bf16 input quantized per token in
  groups of 128 columns (per_token_group_quant_fp8 / QuantFP8: s = max(amax, 1e-10) / 448,
  q = clamp(x / s, -448, 448) cast to e4m3; power-of-two scales only where DeepGEMM's e8m0 format is
  used, on Blackwell), then a block-scaled GEMM with bf16 output: DeepGEMM's fp8_gemm_nt where DeepGEMM
  is installed and the shape allows (vllm/utils/deep_gemm.py should_use_deepgemm_for_fp8_linear: bf16
  out, N % 64 == 0, K % 128 == 0; V3 TP 8 is N 4096, K 512), else CUTLASS's cutlass_scaled_mm on Hopper,
  else the Triton w8a8_triton_block_scaled_mm. Each accumulates per 128-wide K block in float32,
  scaling the block's product by the row's and the weight block's scales.
So an engine's FP8 chunk runs four passes: the gather, the quantization into an e4m3 buffer, the block
GEMM, the concat. The FP8 kernel here is one: the gathered rows quantized in its prologue exactly as
vLLM's quantizer (the same scales; x / s correctly rounded; e4m3 rounded to nearest even), one e4m3
tl.dot a 128-column group into a float32 partial, scaled and accumulated, and the epilogue as in bf16.
quantize_kv_b_proj makes such a weight from a bf16 one; reference_up_project_fp8 is the kernel's values
in float64 (one rounding); unfused_up_project_fp8 is the engine's four passes in torch, for timing.
Each 128-column group is quantized by every column tile of its row block (a whole head a tile by
default: 16 at V3 TP 8): the price of no quantized buffer, paid in the prologue's arithmetic rather than
in memory traffic (FP8_DEFAULT_TILES says how much). A group's e4m3 products are summed by Triton's
tl.dot with its sm_90 default (the tensor core's own reduced-precision accumulation within the group,
promoted to float32 once a group), as DeepGEMM and CUTLASS's block GEMMs promote every 128.
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
# FP8 (kv_b_proj in float8_e4m3fn with 128 x 128 block scales): BLOCK_K is the scale group, 128. The
# prologue's quantization and the groups' scaling, not the e4m3 product, bound the kernel, so a tile is a
# whole head (BLOCK_N = qk_nope + v_head where a power of two, else as in bf16): each group quantized
# serves 256 columns at DeepSeek-V3's dims, not 128. In sm_90 code from Triton 3.9, a group's step takes
# 556 instructions a thread at 64 x 256 and 8 warps (232 registers, no spills), about twice its e4m3
# products' time; 908 at 128 x 128 for the same products; two heads a tile (BLOCK_N 512) need 16 warps
# to hold their accumulator and spill at their 128 registers. A stage holds a's 64 x 128 bf16 tile
# (16 KB) and b's 128 x 256 e4m3 tile (32 KB).
FP8_GROUP = 128
FP8_MAX = 448.0  # torch.finfo(torch.float8_e4m3fn).max
FP8_EPS = 1e-10  # vLLM's floor on a group's amax (an all-zero group)
FP8_DEFAULT_TILES: Dict[str, int] = {"BLOCK_M": 64, "BLOCK_K": FP8_GROUP, "num_warps": 8, "num_stages": 3}  # BLOCK_N: a whole head

if triton is not None:

    @triton.jit
    def _quantize_rows(a, EMULATE: tl.constexpr):
        """A [rows, GROUP] tile (the cache's dtype) quantized per row as vLLM's per_token_group_quant_fp8:
        s = max(amax, 1e-10) / 448, q = clamp(x / s, -448, 448) rounded to e4m3 (nearest, ties to even).
        -> (q: float8e4nv, or its exact float32 values under the interpreter; s: float32 [rows])."""
        x = a.to(tl.float32)
        if EMULATE:  # the interpreter's 16-bit floats are raw bits: their abs and max in float32
            amax = tl.max(tl.abs(x), axis=1)
        else:  # the max of 16-bit values is one of them: taken on them, before the cast
            amax = tl.max(tl.abs(a), axis=1).to(tl.float32)
        s = tl.math.div_rn(tl.maximum(amax, 1e-10), tl.full((x.shape[0],), 448.0, tl.float32))
        if EMULATE:  # numpy divides exactly
            q = x / s[:, None]
        else:
            # x / s correctly rounded as torch divides, at one multiply and two FMAs an element (Markstein:
            # r = RN(1/s), q0 = RN(x r) is within 1 ulp, the residual x - q0 s is exact, q0 + residual r is
            # RN(x / s)); a division an element would cost the prologue more than the tile's FP8 product.
            r = tl.math.div_rn(tl.full((x.shape[0],), 1.0, tl.float32), s)[:, None]
            q0 = x * r
            q = tl.math.fma(tl.math.fma(q0, -s[:, None], x), r, q0)
        if EMULATE:
            q = tl.minimum(tl.maximum(q, -448.0), 448.0)  # e4m3fn's largest finite value, FP8_MAX
            # The interpreter rounds float32 to e4m3 half away from zero and flushes subnormals; the GPU
            # (cvt.rn.satfinite) and torch round to nearest even, emulated here on float32: normal e4m3
            # values keep 3 of float32's 23 mantissa bits; below 2^-6 (subnormal) the step is 2^-9, where
            # adding and taking away 2^14 (whose float32 ulp is 2^-9) rounds to it.
            bits = q.to(tl.uint32, bitcast=True)
            normal = ((bits + 0x7FFFF + ((bits >> 20) & 1)) & 0xFFF00000).to(tl.float32, bitcast=True)
            sub = (tl.abs(q) + 16384.0) - 16384.0
            q = tl.where(tl.abs(q) < 0.015625, tl.where(q < 0, -sub, sub), normal)
        else:
            # No clamp: |x / s| <= 448 (1 + 2^-23), which rounds to 448 as the clamped value does
            # (cvt.rn.satfinite saturates in any case); two instructions an element saved.
            q = q.to(tl.float8e4nv, fp_downcast_rounding="rtne")
        return q, s

    @triton.jit
    def _fused_up_kernel(
        cache_ptr, cache_s0, rows_ptr, n_rows, count_ptr, w_ptr, w_s0,
        k_ptr, k_s0, k_s1, v_ptr, v_s0, v_s1, ws_ptr, ws_s0, ws_s1,
        KV_LORA: tl.constexpr, ROPE: tl.constexpr, ROPE_BLOCK: tl.constexpr, QK_NOPE: tl.constexpr,
        V_HEAD: tl.constexpr, HEADS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr, IEEE: tl.constexpr, UPCAST: tl.constexpr, RNE: tl.constexpr,
        FP8: tl.constexpr, EVEN_K: tl.constexpr, WHOLE_HEADS: tl.constexpr, COL_TILES: tl.constexpr,
        ROPE_HEADS: tl.constexpr, HAS_COUNT: tl.constexpr,
    ):
        # A column tile is part of one head's nope part or V (WHOLE_HEADS 0), or WHOLE_HEADS whole heads.
        K_TILES: tl.constexpr = QK_NOPE // BLOCK_N
        HEAD_TILES: tl.constexpr = (QK_NOPE + V_HEAD) // BLOCK_N
        pid = tl.program_id(0)
        # Column tiles fastest: a row block's COL_TILES tiles are neighbours in launch order.
        pid_m = pid // COL_TILES
        pid_n = pid % COL_TILES
        limit = n_rows
        if HAS_COUNT:  # the row count in device memory (any_batch.py: sizes the host never reads)
            limit = tl.minimum(tl.maximum(tl.load(count_ptr).to(tl.int32), 0), n_rows)
            if pid_m * BLOCK_M >= limit:  # a block past the count: nothing to read or write
                return
        if WHOLE_HEADS > 0:
            h = pid_n * WHOLE_HEADS  # the tile's first head
            t = pid_n * 0
        else:
            h = pid_n // HEAD_TILES
            t = pid_n % HEAD_TILES  # K's nope tiles first, then V's, as kv_b_proj orders a head's rows
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        in_m = offs_m < limit
        # int64 offsets: a cache or a K of a million rows passes 2^31 elements.
        src = tl.load(rows_ptr + offs_m, mask=in_m, other=0).to(tl.int64) * cache_s0
        dst = offs_m.to(tl.int64)
        offs_k = tl.arange(0, BLOCK_K)
        offs_n = tl.arange(0, BLOCK_N)
        w_row = h * (QK_NOPE + V_HEAD) + t * BLOCK_N + offs_n
        w_rows = w_row.to(tl.int64) * w_s0
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, KV_LORA, BLOCK_K):
            if FP8:  # BLOCK_K is the scale group: a's rows quantized here, one product a group, then scaled
                kk = k0 + offs_k
                if EVEN_K:
                    a = tl.load(cache_ptr + src[:, None] + kk[None, :], mask=in_m[:, None], other=0.0)
                    b = tl.load(w_ptr + w_rows[None, :] + kk[:, None])
                else:  # a last group narrower than 128 columns: zeros past kv_lora, as the quantizer pads
                    in_k = kk < KV_LORA
                    a = tl.load(cache_ptr + src[:, None] + kk[None, :], mask=in_m[:, None] & in_k[None, :], other=0.0)
                    b = tl.load(w_ptr + w_rows[None, :] + kk[:, None], mask=in_k[:, None], other=0.0)
                a_q, a_s = _quantize_rows(a, UPCAST)
                b_s = tl.load(ws_ptr + (w_row // BLOCK_K) * ws_s0 + (k0 // BLOCK_K) * ws_s1)
                if UPCAST:  # the interpreter multiplies e4m3's raw bits; the exact values in float32 instead
                    part = tl.dot(a_q, b.to(tl.float32), input_precision="ieee")
                else:
                    part = tl.dot(a_q, b)
                acc += part * a_s[:, None] * b_s[None, :]
            else:
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
        if WHOLE_HEADS > 0:  # whole heads: each head's first qk_nope columns to K, the rest to V
            hh = h + offs_n // (QK_NOPE + V_HEAD)
            col = offs_n % (QK_NOPE + V_HEAD)
            tl.store(k_ptr + dst[:, None] * k_s0 + (hh * k_s1 + col)[None, :], out,
                     mask=in_m[:, None] & (col < QK_NOPE)[None, :])
            tl.store(v_ptr + dst[:, None] * v_s0 + (hh * v_s1 + col - QK_NOPE)[None, :], out,
                     mask=in_m[:, None] & (col >= QK_NOPE)[None, :])
        elif t < K_TILES:
            tl.store(k_ptr + dst[:, None] * k_s0 + h * k_s1 + t * BLOCK_N + offs_n[None, :], out, mask=in_m[:, None])
        else:
            tl.store(v_ptr + dst[:, None] * v_s0 + h * v_s1 + (t - K_TILES) * BLOCK_N + offs_n[None, :], out,
                     mask=in_m[:, None])
        if t == 0:  # the rope part, once per head, from the rows this program has just read (in L1/L2)
            offs_r = tl.arange(0, ROPE_BLOCK)
            keep = in_m[:, None] & (offs_r < ROPE)[None, :]
            rope = tl.load(cache_ptr + src[:, None] + KV_LORA + offs_r[None, :], mask=keep, other=0.0)
            for j in tl.static_range(ROPE_HEADS):  # the tile's heads
                tl.store(k_ptr + dst[:, None] * k_s0 + (h + j) * k_s1 + QK_NOPE + offs_r[None, :], rope, mask=keep)


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


def _tiles(dims: MlaDims, tiles: Optional[Dict[str, int]], itemsize: int = 2,
           fp8: bool = False) -> Tuple[Optional[Dict[str, int]], str]:
    # float32 operands take twice the shared memory a stage: half the K step, two stages (96 KB).
    t = {**(FP8_DEFAULT_TILES if fp8 else DEFAULT_TILES), **({"BLOCK_K": 32, "num_stages": 2} if itemsize > 2 else {}),
         **(tiles or {})}
    # A column tile lies within one head's nope part or its V, so its stores are one contiguous run; or it
    # is a whole head (qk_nope + v_head columns, a power of two), stored as two runs: each row's
    # quantization (FP8) or load then serves twice the columns.
    whole = dims.qk_nope + dims.v_head
    if "BLOCK_N" not in t:  # FP8's default
        t["BLOCK_N"] = whole
    heads_a_tile = t["BLOCK_N"] // whole if t["BLOCK_N"] % whole == 0 else 0
    if heads_a_tile and t["BLOCK_N"] & (t["BLOCK_N"] - 1) == 0 and dims.heads % heads_a_tile == 0:
        bn = t["BLOCK_N"]  # whole heads, as many as divide the heads
    else:
        bn = whole if whole & (whole - 1) == 0 and t["BLOCK_N"] > whole else _pow2_divisor(t["BLOCK_N"], dims.qk_nope, dims.v_head)
    # FP8: a K step is one scale group whatever kv_lora is (a narrower last group is masked).
    bk = FP8_GROUP if fp8 else _pow2_divisor(t["BLOCK_K"], dims.kv_lora)
    if bn is None or bk is None:
        return None, (f"qk_nope {dims.qk_nope}, v_head {dims.v_head} and kv_lora {dims.kv_lora} need a common "
                      "power-of-two tile of at least 16")
    t.update(BLOCK_N=bn, BLOCK_K=bk, BLOCK_M=max(16, 1 << (max(int(t["BLOCK_M"]), 1).bit_length() - 1)))
    return t, ""


def why_reference(cache_flat: torch.Tensor, dims: MlaDims, fp8: bool = False) -> Optional[str]:
    """None where fused_up_project runs its Triton kernel on these tensors (fp8: with an FP8 kv_b_proj);
    else why it runs the reference."""
    if triton is None:
        return "Triton is not importable"
    if not cache_flat.is_cuda and not _INTERPRET:
        return "a CPU tensor without TRITON_INTERPRET=1 (set before Triton is imported)"
    if cache_flat.dtype not in KERNEL_DTYPES:
        return f"the kernel takes bf16, fp16 or fp32, not {cache_flat.dtype}"
    if fp8 and cache_flat.is_cuda and torch.cuda.get_device_capability(cache_flat.device) < (8, 9):
        return "e4m3 products need compute capability 8.9 or later (Ada, Hopper)"
    return _tiles(dims, None, fp8=fp8)[1] or None


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


def _check(cache_flat, rows, kv_b_proj, dims, k_out, v_out, check_rows: Optional[bool], kv_b_proj_scale=None,
           fp8: bool = False) -> int:
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
    w_dtype = torch.float8_e4m3fn if fp8 else cache_flat.dtype
    if kv_b_proj.dtype != w_dtype or kv_b_proj.device != cache_flat.device or kv_b_proj.stride(1) != 1:
        why = "with kv_b_proj_scale given" if fp8 else "cache_flat's"
        _fail("kv_b_proj", f"expected {w_dtype} ({why}) on {cache_flat.device} with contiguous rows, "
                           f"got {kv_b_proj.dtype} on {kv_b_proj.device} with strides {list(kv_b_proj.stride())}")
    if fp8:
        _check_scale(kv_b_proj_scale, kv_b_proj, cache_flat)
    elif kv_b_proj_scale is not None:
        _fail("kv_b_proj_scale", "given, but kv_b_proj is not float8_e4m3fn; pass None for an unquantized kv_b_proj, "
                                 "or the e4m3 weight that quantize_kv_b_proj returns with these scales")
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


def _check_scale(scale, w: torch.Tensor, cache_flat: torch.Tensor) -> None:
    want = tuple(-(-x // FP8_GROUP) for x in w.shape)
    if not isinstance(scale, torch.Tensor) or tuple(scale.shape) != want or scale.dtype != torch.float32:
        got = f"{scale.dtype} {list(scale.shape)}" if isinstance(scale, torch.Tensor) else type(scale).__name__
        _fail("kv_b_proj_scale", f"expected float32 of shape {list(want)} (one scale a 128 x 128 block of kv_b_proj "
                                 f"{list(w.shape)}, as quantize_kv_b_proj returns), got {got}")
    if scale.device != cache_flat.device:
        _fail("kv_b_proj_scale", f"on {scale.device}, but cache_flat is on {cache_flat.device}; put both on one device")


def _fp8_args(kv_b_proj: torch.Tensor, kv_b_proj_scale) -> bool:
    """Whether the call is FP8: kv_b_proj in e4m3, or scales given (then _check says what is wrong)."""
    fp8 = isinstance(kv_b_proj, torch.Tensor) and kv_b_proj.dtype == torch.float8_e4m3fn
    if fp8 and kv_b_proj_scale is None:
        _fail("kv_b_proj_scale", "missing: kv_b_proj is float8_e4m3fn, so its 128 x 128 block scales are needed "
                                 "(quantize_kv_b_proj returns them; the checkpoint's weight_scale_inv)")
    return fp8


def assemble_kv(latent: torch.Tensor, kv: torch.Tensor, dims: MlaDims, k_out=None,
                v_out=None) -> Tuple[torch.Tensor, torch.Tensor]:
    """The unfused path's tail (executor._up_project's, in either weight format): kv [n, heads * (qk_nope +
    v_head)] split, K the nope part and the rope part broadcast over the heads by torch.cat; copied into
    k_out, v_out if given."""
    k_nope, v = kv.view(-1, dims.heads, dims.qk_nope + dims.v_head).split([dims.qk_nope, dims.v_head], dim=-1)
    k = torch.cat((k_nope, latent[:, None, dims.kv_lora :].expand(-1, dims.heads, -1)), dim=-1)
    if k_out is not None:
        k = k_out.copy_(k)
    if v_out is not None:
        v = v_out.copy_(v)
    return k, v


def reference_up_project(cache_flat: torch.Tensor, rows: torch.Tensor, kv_b_proj: torch.Tensor, dims: MlaDims,
                         k_out: Optional[torch.Tensor] = None, v_out: Optional[torch.Tensor] = None,
                         check_rows: Optional[bool] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """The unfused path, op for op as executor._up_project runs it after the gather: (K [n, heads,
    qk_head] contiguous, V [n, heads, v_head], a strided view of the GEMM's output unless v_out is
    given). With k_out or v_out the results are copied into them and they are returned."""
    _check(cache_flat, rows, kv_b_proj, dims, k_out, v_out, check_rows)
    latent = cache_flat.index_select(0, rows)
    return assemble_kv(latent, torch.nn.functional.linear(latent[:, : dims.kv_lora], kv_b_proj), dims, k_out, v_out)


def fused_up_project(cache_flat: torch.Tensor, rows: torch.Tensor, kv_b_proj: torch.Tensor, dims: MlaDims,
                     k_out: Optional[torch.Tensor] = None, v_out: Optional[torch.Tensor] = None,
                     check_rows: Optional[bool] = None, tiles: Optional[Dict[str, int]] = None,
                     kv_b_proj_scale: Optional[torch.Tensor] = None,
                     row_count: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """K [n, heads, qk_head] and V [n, heads, v_head] of the latent rows cache_flat[rows], in one kernel.

    cache_flat: [cache rows, kv_lora + qk_rope] (kv_cache.view(-1, latent)); rows: [n] int32 or int64
    flat row numbers, read in the kernel's prologue; kv_b_proj: [heads * (qk_nope + v_head), kv_lora],
    cache_flat's dtype (torch.nn.Linear's layout). K[:, h] = [latent[:kv_lora] @ W_k[h]^T, latent[kv_lora:]],
    V[:, h] = latent[:kv_lora] @ W_v[h]^T, accumulated in float32 and stored in cache_flat's dtype.
    k_out, v_out: preallocated outputs (views of those shapes with a dense last dimension, such as the
    first v_head columns of FA2's padded V buffer); else new contiguous tensors. check_rows: check every
    row is in cache_flat (one host sync on CUDA); None (the default): unless a CUDA graph is being
    captured, where reading the rows back cannot be done (the caller's plan vouches for them). tiles: overrides of
    DEFAULT_TILES (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), for tuning; BLOCK_N a power of two
    dividing qk_nope and v_head (part of a head's nope part or V), or a power-of-two multiple of
    qk_nope + v_head dividing the heads (whole heads, each row's load or quantization serving them all).

    FP8: kv_b_proj in float8_e4m3fn with kv_b_proj_scale, float32 [ceil(N / 128), ceil(kv_lora / 128)],
    one scale a 128 x 128 block (the checkpoint's weight_scale_inv; quantize_kv_b_proj makes them). The
    kernel then runs the block GEMM an engine runs (module docstring): each row's 128-column groups of
    latent[:kv_lora] quantized to e4m3 in the prologue (FP8_DEFAULT_TILES; BLOCK_K is the group), one e4m3
    product a group, scaled by the row's and the block's scales and summed in float32; the rope part is
    copied as it is. reference_up_project_fp8 computes the same values in float64.

    row_count: an integer tensor of one element on cache_flat's device, read by the kernel: only the
    first min(row_count, n) rows are made (none below 0), and only their row numbers are read; the other
    rows of k_out and v_out are left as they were (new outputs' are unspecified). The kernel's programs whose row block
    starts at or past the count return at once, so a launch sized for a bucket's largest chunk costs
    little for a smaller one, and the host never reads the count (any_batch.py's loop in a CUDA graph).

    Runs the Triton kernel on CUDA tensors, and on CPU tensors under Triton's interpreter
    (TRITON_INTERPRET=1 before Triton is imported); anywhere else (a CPU tensor without it, no Triton,
    dims without a tile of 16 dividing them, FP8 before compute capability 8.9) it runs
    reference_up_project (or reference_up_project_fp8), so one call serves every device (why_reference
    says which). Bad arguments raise PrefillInputError (a ValueError) naming the argument."""
    fp8 = _fp8_args(kv_b_proj, kv_b_proj_scale)
    n = _check(cache_flat, rows, kv_b_proj, dims, k_out, v_out, check_rows, kv_b_proj_scale, fp8)
    if tiles is not None and (not isinstance(tiles, dict) or not set(tiles) <= set(DEFAULT_TILES) or any(
            type(x) is not int or x < 1 for x in tiles.values())):
        _fail("tiles", f"expected a dict of positive ints with keys from {', '.join(DEFAULT_TILES)}, got {tiles!r}")
    _check_count(row_count, cache_flat)
    if why_reference(cache_flat, dims, fp8) is not None:
        if row_count is not None:
            return _counted_reference(cache_flat, rows, kv_b_proj, kv_b_proj_scale, dims, k_out, v_out, row_count)
        if fp8:
            return reference_up_project_fp8(cache_flat, rows, kv_b_proj, kv_b_proj_scale, dims, k_out, v_out, False)
        return reference_up_project(cache_flat, rows, kv_b_proj, dims, k_out, v_out, check_rows=False)
    t, _ = _tiles(dims, tiles, cache_flat.element_size(), fp8)
    k = k_out if k_out is not None else cache_flat.new_empty((n, dims.heads, dims.qk_head))
    v = v_out if v_out is not None else cache_flat.new_empty((n, dims.heads, dims.v_head))
    if n == 0:
        return k, v
    ws = kv_b_proj_scale if fp8 else kv_b_proj  # unread without FP8
    whole = dims.qk_nope + dims.v_head
    heads_a_tile = t["BLOCK_N"] // whole if t["BLOCK_N"] % whole == 0 else 0
    col_tiles = dims.heads // heads_a_tile if heads_a_tile else dims.heads * (whole // t["BLOCK_N"])
    grid = (triton.cdiv(n, t["BLOCK_M"]) * col_tiles,)
    _fused_up_kernel[grid](
        cache_flat, cache_flat.stride(0), rows, n, rows if row_count is None else row_count, kv_b_proj, kv_b_proj.stride(0),
        k, k.stride(0), k.stride(1), v, v.stride(0), v.stride(1), ws, ws.stride(0), ws.stride(1),
        KV_LORA=dims.kv_lora, ROPE=dims.qk_rope, ROPE_BLOCK=triton.next_power_of_2(max(dims.qk_rope, 1)),
        QK_NOPE=dims.qk_nope, V_HEAD=dims.v_head, HEADS=dims.heads,
        BLOCK_M=t["BLOCK_M"], BLOCK_N=t["BLOCK_N"], BLOCK_K=t["BLOCK_K"], IEEE=cache_flat.dtype == torch.float32 or not cache_flat.is_cuda,
        UPCAST=not cache_flat.is_cuda, RNE=not cache_flat.is_cuda and cache_flat.dtype == torch.bfloat16,
        FP8=fp8, EVEN_K=dims.kv_lora % t["BLOCK_K"] == 0, WHOLE_HEADS=heads_a_tile, COL_TILES=col_tiles,
        ROPE_HEADS=max(heads_a_tile, 1), HAS_COUNT=row_count is not None,
        num_warps=t["num_warps"], num_stages=t["num_stages"],
    )
    return k, v


def _check_count(row_count, cache_flat: torch.Tensor) -> None:
    if row_count is None:
        return
    if not isinstance(row_count, torch.Tensor) or row_count.numel() != 1 or row_count.dtype not in (torch.int32, torch.int64):
        got = f"{row_count.dtype} {list(row_count.shape)}" if isinstance(row_count, torch.Tensor) else type(row_count).__name__
        _fail("row_count", f"expected an int32 or int64 tensor of one element (the rows to make), got {got}")
    if row_count.device != cache_flat.device:
        _fail("row_count", f"on {row_count.device}, but cache_flat is on {cache_flat.device}; put both on one device")


def _counted_reference(cache_flat, rows, kv_b_proj, kv_b_proj_scale, dims, k_out, v_out, row_count):
    """The reference with a device row count: every row computed, the first row_count stored, by
    torch.where on the device (no host read of the count, as the kernel). Rows past the count read row 0:
    the kernel never reads their numbers, which may be anything."""
    keep = torch.arange(rows.shape[0], device=rows.device) < row_count.reshape(())
    rows = torch.where(keep, rows, torch.zeros_like(rows))
    if kv_b_proj_scale is not None:
        k, v = reference_up_project_fp8(cache_flat, rows, kv_b_proj, kv_b_proj_scale, dims, check_rows=False)
    else:
        k, v = reference_up_project(cache_flat, rows, kv_b_proj, dims, check_rows=False)
    keep = keep[:, None, None]
    k_out = torch.zeros_like(k) if k_out is None else k_out
    v_out = torch.zeros_like(v) if v_out is None else v_out
    k_out.copy_(torch.where(keep, k, k_out))
    v_out.copy_(torch.where(keep, v, v_out))
    return k_out, v_out


# ---- FP8: the quantizers, the reference and the unfused path ---------------------------------------


def _groups(x: torch.Tensor, rows_a_group: int) -> torch.Tensor:
    """x [R, C] zero-padded to multiples of (rows_a_group, 128) and viewed as [R', rows_a_group, C', 128]."""
    r, c = x.shape
    x = torch.nn.functional.pad(x, (0, (-c) % FP8_GROUP, 0, (-r) % rows_a_group))
    return x.view(x.shape[0] // rows_a_group, rows_a_group, x.shape[1] // FP8_GROUP, FP8_GROUP)


def _quantize(x: torch.Tensor, rows_a_group: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """e4m3 values and float32 scales of x's (rows_a_group x 128) blocks: s = max(amax, 1e-10) / 448,
    q = clamp(x / s, -448, 448) rounded to nearest even (torch's cast)."""
    g = _groups(x.float(), rows_a_group)
    amax = g.abs().amax(dim=(1, 3)).clamp(min=FP8_EPS)
    # Divided by a tensor, not the number: torch on CUDA divides by a Python scalar as a multiply by its
    # rounded reciprocal, off by an ulp in about half the scales (an H100, c4bf7f2), so the reference on
    # the GPU quantized otherwise than on the CPU and than the kernel, which divides correctly rounded.
    s = amax / torch.full_like(amax, FP8_MAX)
    q = (g / s[:, None, :, None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.view(g.shape[0] * rows_a_group, g.shape[2] * FP8_GROUP)[: x.shape[0], : x.shape[1]].contiguous(), s


def quantize_activation(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """x [n, K] per row in groups of 128 columns, as vLLM's per_token_group_quant_fp8 (its float32 scales,
    not DeepGEMM's power-of-two ones): (e4m3 [n, K], float32 scales [n, ceil(K / 128)]). The kernel's
    prologue quantizes so, bit for bit."""
    return _quantize(x, 1)


def quantize_kv_b_proj(w: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """kv_b_proj [N, K] (bf16 or any float) to (e4m3 [N, K], float32 scales [ceil(N / 128), ceil(K / 128)]),
    one scale a 128 x 128 block as DeepSeek-V3's FP8 checkpoint stores it (weight_scale_inv: the weight is
    e4m3 times it): s = max(amax, 1e-10) / 448 (1e-10: an all-zero block gets a finite scale)."""
    if not isinstance(w, torch.Tensor) or w.ndim != 2 or not w.dtype.is_floating_point:
        got = f"{w.dtype} {list(w.shape)}" if isinstance(w, torch.Tensor) else type(w).__name__
        _fail("w", f"expected a 2-D floating tensor [heads * (qk_nope + v_head), kv_lora], got {got}")
    return _quantize(w, FP8_GROUP)


def _expand(scale: torch.Tensor, rows_a_group: int, shape) -> torch.Tensor:
    return scale.repeat_interleave(rows_a_group, 0).repeat_interleave(FP8_GROUP, 1)[: shape[0], : shape[1]]


def dequantize(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """q [R, C] e4m3 times its scales, per row group ([R, ceil(C / 128)], an activation's) or per 128 x 128
    block ([ceil(R / 128), ceil(C / 128)], kv_b_proj's), in dtype (float64: exact)."""
    rows_a_group = 1 if scale.shape[0] == q.shape[0] else FP8_GROUP
    return q.to(dtype) * _expand(scale.to(dtype), rows_a_group, q.shape)


def reference_up_project_fp8(cache_flat: torch.Tensor, rows: torch.Tensor, kv_b_proj: torch.Tensor,
                             kv_b_proj_scale: torch.Tensor, dims: MlaDims, k_out: Optional[torch.Tensor] = None,
                             v_out: Optional[torch.Tensor] = None, check_rows: Optional[bool] = None,
                             ) -> Tuple[torch.Tensor, torch.Tensor]:
    """What the FP8 kernel computes, exactly: the rows quantized by quantize_activation, both operands
    dequantized and multiplied in float64 (every product and scale exact) and rounded once to
    cache_flat's dtype; K's rope part copied. The kernel differs from it only in float32 summation
    order and rounding, so its outputs are within one output ulp of these. Arguments as fused_up_project's."""
    _fp8_args(kv_b_proj, kv_b_proj_scale)
    _check(cache_flat, rows, kv_b_proj, dims, k_out, v_out, check_rows, kv_b_proj_scale, fp8=True)
    latent = cache_flat.index_select(0, rows)
    a = dequantize(*quantize_activation(latent[:, : dims.kv_lora]))
    kv = (a @ dequantize(kv_b_proj, kv_b_proj_scale).t()).to(cache_flat.dtype)
    return assemble_kv(latent, kv, dims, k_out, v_out)


_SCALED_MM: Dict[Tuple[str, int, int], bool] = {}


def block_gemm_backend(device, n_cols: int = 4096, k: int = 512) -> str:
    """The block GEMM unfused_up_project_fp8 runs on device for a kv_b_proj of [n_cols, k] (default
    DeepSeek-V3 TP 8's): "torch._scaled_mm" (cuBLAS's 1x128 by 128x128 block-scaled FP8 GEMM, as vLLM's
    CUTLASS or DeepGEMM path on Hopper) where this torch and GPU run it and it is within
    block_gemm_error_ok's bound of the dequantized product on a probe of that shape; else "float32
    dequantized" (torch matmul of the dequantized operands: the same values, not an engine's speed). The
    probe's blocks have scales 16x apart, so a scale applied to the wrong block fails it; the bound allows
    for the tensor core's reduced-precision sums within a block, which an elementwise tolerance on
    random data does not. On an H100 (torch 2.11) cuBLAS is within 1.4e-3 of the magnitudes at V3's
    shape, where allclose(rtol 2e-2, atol 1e-2) refused it, and off by 20x or more at K 256 (_scaled_mm
    says why)."""
    device = torch.device(device)
    if device.type != "cuda" or not hasattr(torch, "_scaled_mm"):
        return "float32 dequantized"
    key = (str(device), int(n_cols), int(k))
    if key not in _SCALED_MM:
        x, w = _probe_operands(64, n_cols, k, device)
        try:
            operands = (*quantize_activation(x), *quantize_kv_b_proj(w))
            _SCALED_MM[key] = block_gemm_error_ok(_scaled_mm(*operands, torch.bfloat16), *operands)
        except (RuntimeError, TypeError, ValueError):  # this torch or GPU lacks blockwise scaling
            _SCALED_MM[key] = False
    return "torch._scaled_mm" if _SCALED_MM[key] else "float32 dequantized"


def _probe_operands(n: int, n_cols: int, k: int, device) -> Tuple[torch.Tensor, torch.Tensor]:
    """x [n, k] and w [n_cols, k], normal values times a power of two per 128-column group of x (1/2 to
    2) and per 128 x 128 block of w (1/4 to 4), so the blocks' scales differ by up to 16x."""
    g = torch.Generator(device=device).manual_seed(0)
    groups = torch.arange(-(-k // FP8_GROUP), device=device)
    x = torch.randn(n, k, device=device, generator=g) * _expand(torch.exp2(groups % 3 - 1.0)[None, :], 1, (n, k))
    blocks = torch.arange(-(-n_cols // FP8_GROUP), device=device)[:, None] + 2 * groups[None, :]
    w = torch.randn(n_cols, k, device=device, generator=g) * _expand(torch.exp2(blocks % 5 - 2.0), FP8_GROUP, (n_cols, k))
    return x, w


def block_gemm_error_ok(got: torch.Tensor, q, s, w, ws) -> bool:
    """Whether a block GEMM's output got [n, N] is the product of the quantized operands (q, s: the
    activation's; w, ws: kv_b_proj's) up to its sums' precision: within 2^-6 of the sum of the products'
    magnitudes (Hopper's FP8 MMA sums a block's products at reduced precision before the float32
    promotion, as DeepGEMM, CUTLASS and this module's kernel do) plus one rounding of the output (2^-8)."""
    a, b = dequantize(q, s, torch.float32), dequantize(w, ws, torch.float32)
    want = a @ b.t()
    mag = a.abs() @ b.abs().t()
    return bool(((got.float() - want).abs() <= mag * 2.0 ** -6 + want.abs() * 2.0 ** -8).all())


def _scaled_mm(q, s, w, ws, out_dtype):
    # cuBLAS's block-scaled layouts: the activation's scales outer-dim-major [n, K/128], the weight's as
    # [K/128, N/128] for w^T (a transposed view of the checkpoint's [N/128, K/128]). cuBLAS wants K/128 a
    # multiple of 4 in memory; torch 2.11 refuses a padded view, and unpadded the output is garbage (an H100
    # at K 256), so such a K fails the probe and takes the fallback.
    return torch._scaled_mm(q, w.t(), scale_a=s.t().contiguous().t(), scale_b=ws.t(), out_dtype=out_dtype)


def _block_gemm(q, s, w, ws, out_dtype):
    """block_gemm_backend's GEMM; a row count cuBLAS refuses (on the H100, any not a multiple of 4) is
    padded to a multiple of 16 (vLLM pads its CUTLASS call to 4 rows likewise), the padding's rows dropped."""
    if block_gemm_backend(q.device, *w.shape) != "torch._scaled_mm":
        return _dequantized_mm(q, s, w, ws, out_dtype)
    try:
        return _scaled_mm(q, s, w, ws, out_dtype)
    except RuntimeError:
        pad = (-q.shape[0]) % 16
        if not pad:
            raise
        qp = torch.cat((q, q.new_zeros(pad, q.shape[1])))
        return _scaled_mm(qp, torch.cat((s, s.new_ones(pad, s.shape[1]))), w, ws, out_dtype)[: q.shape[0]]


def _dequantized_mm(q, s, w, ws, out_dtype):
    return (dequantize(q, s, torch.float32) @ dequantize(w, ws, torch.float32).t()).to(out_dtype)


def unfused_up_project_fp8(cache_flat: torch.Tensor, rows: torch.Tensor, kv_b_proj: torch.Tensor,
                           kv_b_proj_scale: torch.Tensor, dims: MlaDims) -> Tuple[torch.Tensor, torch.Tensor]:
    """The FP8 up-projection as an engine's chunk loop runs it (vLLM's _compute_prefill_context with the
    FP8 checkpoint): the rows gathered into a buffer, latent[:kv_lora] quantized per token group into an
    e4m3 buffer and its scales, the block GEMM (block_gemm_backend says which) into [n, N] in cache_flat's
    dtype, then split and torch.cat with the rope part. The baseline the fused FP8 kernel is timed against."""
    _fp8_args(kv_b_proj, kv_b_proj_scale)
    _check(cache_flat, rows, kv_b_proj, dims, None, None, None, kv_b_proj_scale, fp8=True)
    latent = cache_flat.index_select(0, rows)
    return assemble_kv(latent, linear_fp8(latent[:, : dims.kv_lora], kv_b_proj, kv_b_proj_scale), dims)


def linear_fp8(x: torch.Tensor, kv_b_proj: torch.Tensor, kv_b_proj_scale: torch.Tensor) -> torch.Tensor:
    """x @ kv_b_proj^T as an engine runs it with an FP8 kv_b_proj: x quantized per token group, then the
    block GEMM (block_gemm_backend) into x's dtype (executor._up_project's FP8 GEMM; its arguments are
    prepare's, checked there)."""
    return _block_gemm(*quantize_activation(x), kv_b_proj, kv_b_proj_scale, x.dtype)


def up_projection_work(n: int, dims: MlaDims, itemsize: int = 2) -> Tuple[float, float]:
    """(FLOPs, bytes) of the up-projection of n rows: the GEMM's multiply-adds, and the latent rows read,
    K and V written and kv_b_proj read once (its roofline: the larger of FLOPs at the GPU's measured GEMM
    peak and bytes at its measured copy bandwidth)."""
    cols = dims.heads * (dims.qk_nope + dims.v_head)
    flops = 2.0 * n * dims.kv_lora * cols
    moved = n * (dims.latent + dims.heads * (dims.qk_head + dims.v_head)) + cols * dims.kv_lora
    return flops, float(moved * itemsize)
