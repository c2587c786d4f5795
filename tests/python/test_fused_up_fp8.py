"""The fused up-projection with an FP8 kv_b_proj (mlaplan.prefill.fused_up, issue 64 item 1): the block
quantizers against hand-computed blocks; the float64 reference against a direct block-by-block
computation; the Triton kernel under Triton's interpreter (on the CPU, in a child process) against the
reference; the argument checks; and on a CUDA GPU the kernel against the reference and the unfused FP8
path at DeepSeek-V3 TP 8 shapes, and timed beside them and the bf16 kernel (gpu-check part fused-up)."""
import json
import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="the prefill executor needs torch (pip install .[torch])")

from mlaplan.prefill import fused_up as fu  # noqa: E402
from mlaplan.prefill.inputs import PrefillInputError  # noqa: E402
from mlaplan.prefill.model import MlaDims  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_fused_up as base  # noqa: E402  (case, compare and the GPU timing helpers)

SMALL = base.SMALL  # kv_lora 64: one group narrower than 128 columns
WIDE = MlaDims("three groups", heads=2, qk_nope=32, qk_rope=16, v_head=32, kv_lora=320)  # the last one of 64
# nope 24 and V 40 share no tile of 16: the bf16 kernel falls back; FP8's tile is the whole head, 64 wide.
UNEVEN = MlaDims("uneven", heads=2, qk_nope=24, qk_rope=8, v_head=40, kv_lora=128)
V3 = base.V3
E4M3 = torch.float8_e4m3fn


def fp8_case(dims, lengths, page_size, dtype=torch.bfloat16, device="cpu", seed=0):
    """(cache_flat, rows, kv_b_proj in e4m3, its scales, kv_b_proj in dtype)."""
    cache_flat, rows, w = base.case(dims, lengths, page_size, dtype, device, seed)
    return (cache_flat, rows, *fu.quantize_kv_b_proj(w), w)


# ---- (a) the quantizers -------------------------------------------------------------------------


def test_quantize_kv_b_proj_against_hand_computed_blocks():
    # 200 x 300: blocks of 128 x 128 with partial ones at both edges (2 x 3 scales).
    w = torch.zeros(200, 300, dtype=torch.bfloat16)
    w[:128, :128] = 0.5
    w[5, 7] = -3.5  # the block's amax: scale 3.5 / 448
    w[:128, 128:256] = torch.linspace(-1, 2, 128 * 128).view(128, 128).bfloat16()
    w[128:, 256:] = 448.0 * 2.0 ** -20  # the block's amax: its scale exactly 2^-20
    w[130, 260] = 1.0625 * 2.0 ** -20  # a tie between e4m3's 1.0 and 1.125 (rounds to even, 1.0)
    w[131, 260] = 1.1875 * 2.0 ** -20  # between 1.125 and 1.25: to 1.25
    w[132, 260] = 0.0009765625 * 2.0 ** -20  # 2^-10: half e4m3's least subnormal 2^-9, a tie to 0
    w[133, 260] = 0.00146484375 * 2.0 ** -20  # 1.5 * 2^-10: to 2^-9
    q, s = fu.quantize_kv_b_proj(w)
    assert q.dtype == E4M3 and q.shape == (200, 300) and s.dtype == torch.float32 and s.shape == (2, 3)
    amax = torch.tensor([[3.5, 2.0, 1e-10], [1e-10, 1e-10, 448 * 2.0 ** -20]], dtype=torch.float32)
    assert torch.equal(s, amax / 448), s  # amax / 448 in float32; an all-zero block 1e-10 / 448
    assert float(q[5, 7].float()) == -448.0 and float(q[0, 0].float()) == 64.0  # 0.5 / (3.5 / 448), exact
    assert not q[128:, :256].float().any()  # zero blocks stay zero
    assert q[130:134, 260].float().tolist() == [1.0, 1.25, 0.0, 0.001953125]
    assert float(q[128, 256].float()) == 448.0
    # Every value round-trips within e4m3's precision: half a step of 3 mantissa bits (2^-4 of the
    # value) for normals, half the subnormal step (2^-10 of the scale) below 2^-6.
    deq = fu.dequantize(q, s)
    err = (deq - w.double()).abs()
    bound = torch.maximum(w.double().abs() * 2.0 ** -4, fu._expand(s.double(), 128, q.shape) * 2.0 ** -10)
    assert (err <= bound).all()
    assert deq[:128, 128:256].sub(w[:128, 128:256].double()).abs().max() > 0  # the linspace block is rounded


def test_quantize_activation_is_per_row_groups():
    x = torch.randn(37, 320).bfloat16()
    x[3] = 0
    q, s = fu.quantize_activation(x)
    assert q.shape == (37, 320) and s.shape == (37, 3) and q.dtype == E4M3
    for g, cols in enumerate((slice(0, 128), slice(128, 256), slice(256, 320))):
        amax = x[:, cols].float().abs().amax(1).clamp(min=1e-10)
        assert torch.equal(s[:, g], amax / 448)
        assert torch.equal(q[:, cols].float(), (x[:, cols].float() / s[:, g, None]).to(E4M3).float())
    assert q.float().abs().amax(1)[[0, 1, 2]].eq(448).all() and not q[3].float().any()


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=base.needs_cuda)])
def test_scales_are_the_correctly_rounded_quotient_on_every_device(device):
    """s = amax / 448 rounded once, as the kernel divides (div_rn), on the GPU as on the CPU: torch on CUDA
    divides by a Python number as a multiply by its rounded reciprocal, an ulp off in about half the scales,
    which put the GPU's reference 0.9% RMS off the kernel."""
    x = torch.randn(4096, 512, generator=torch.Generator().manual_seed(3)).bfloat16()
    w = torch.randn(1024, 512, generator=torch.Generator().manual_seed(4)).bfloat16()
    for quantize, t, rows in ((fu.quantize_activation, x, 1), (fu.quantize_kv_b_proj, w, 128)):
        q, s = quantize(t.to(device))
        amax = t.double().abs().view(-1, rows, 4, 128).amax(dim=(1, 3))
        assert torch.equal(s.cpu(), (amax / 448).float())  # float64 then float32: no double-rounding error here
        assert torch.equal(q.cpu().view(torch.uint8), quantize(t)[0].view(torch.uint8))


# ---- (b) the reference --------------------------------------------------------------------------


def blockwise(cache_flat, rows, wq, ws, dims):
    """K's nope part and V in float64 as the block GEMM forms them: a sum over the 128-column groups of
    each group's e4m3 product times the row's and the block's scales."""
    latent = cache_flat[rows.long()]
    aq, sa = fu.quantize_activation(latent[:, : dims.kv_lora])
    out = 0
    for g in range(sa.shape[1]):
        cols = slice(128 * g, 128 * (g + 1))
        prod = aq[:, cols].double() @ wq[:, cols].double().t()
        out = out + prod * sa[:, g, None].double() * ws[:, g].double().repeat_interleave(128)[None, : wq.shape[0]]
    out = out.view(-1, dims.heads, dims.qk_nope + dims.v_head)
    return out[..., : dims.qk_nope], out[..., dims.qk_nope :], latent


@pytest.mark.parametrize("dims", [SMALL, WIDE], ids=["one group", "three groups"])
def test_reference_against_a_direct_blockwise_computation(dims):
    cache_flat, rows, wq, ws, w = fp8_case(dims, [70, 0, 133], 16)
    k, v = fu.reference_up_project_fp8(cache_flat, rows, wq, ws, dims)
    k_nope, v_want, latent = blockwise(cache_flat, rows, wq, ws, dims)
    assert k.shape == (203, dims.heads, dims.qk_head) and v.shape == (203, dims.heads, dims.v_head)
    # float64 sums of exact products in another order: the same value rounded once to bf16.
    assert torch.equal(k[..., : dims.qk_nope], k_nope.bfloat16()) and torch.equal(v, v_want.bfloat16())
    assert torch.equal(k[..., dims.qk_nope :], latent[:, None, dims.kv_lora :].expand(-1, dims.heads, -1))
    # FP8's own error against the bf16 path: e4m3 keeps 3 mantissa bits of both operands.
    k_bf16, v_bf16 = fu.reference_up_project(cache_flat, rows, w, dims)
    rel = (v.float() - v_bf16.float()).norm() / v_bf16.float().norm()
    assert 1e-3 < rel < 0.05, rel
    # The unfused FP8 path (float32 dequantized GEMM on the CPU) agrees within an ulp of its bf16 output.
    r = base.compare(*fu.unfused_up_project_fp8(cache_flat, rows, wq, ws, dims), k.float(), v.float(), dims)
    assert r["within"] and r["rope_exact"] and r["exact"] > 0.99, r
    # Into preallocated outputs.
    k_out, v_pad = torch.empty_like(k), torch.zeros(203, dims.heads, dims.qk_head, dtype=torch.bfloat16)
    k2, v2 = fu.reference_up_project_fp8(cache_flat, rows, wq, ws, dims, k_out=k_out, v_out=v_pad[..., : dims.v_head])
    assert k2.data_ptr() == k_out.data_ptr() and torch.equal(k2, k) and torch.equal(v2, v)


def test_the_block_gemm_is_chosen_at_the_weights_own_shape(monkeypatch):
    """linear_fp8 asks block_gemm_backend about its own kv_b_proj's shape: cuBLAS's answer at one shape does
    not hold at another (on an H100 it was right at [4096, 512] and 45x off at [384, 256]). The values are
    the dequantized product's wherever the fallback runs."""
    asked = []
    real = fu.block_gemm_backend
    monkeypatch.setattr(fu, "block_gemm_backend", lambda device, *shape: asked.append(shape) or real(device, *shape))
    g = torch.Generator().manual_seed(3)
    w = torch.randn(WIDE.heads * (WIDE.qk_nope + WIDE.v_head), WIDE.kv_lora, generator=g)
    wq, ws = fu.quantize_kv_b_proj(w)
    x = torch.randn(5, WIDE.kv_lora, generator=g).to(torch.bfloat16)
    got = fu.linear_fp8(x, wq, ws)
    assert asked == [tuple(wq.shape)]
    assert torch.equal(got, fu._dequantized_mm(*fu.quantize_activation(x), wq, ws, torch.bfloat16))


def test_the_block_gemm_bound_allows_reduced_precision_sums_and_catches_a_misplaced_scale():
    """block_gemm_error_ok, the probe's judge: it accepts the dequantized product rounded to bf16 and each
    128-column block's sum truncated to 14 bits as Hopper's FP8 MMA sums before promoting, which an
    elementwise allclose(rtol 2e-2, atol 1e-2) refused on cuBLAS's output; it refuses the product with one
    weight block's scale taken from another block (the probe's blocks are 1/4 to 4 apart for this)."""
    x, w = fu._probe_operands(16, 384, 512, "cpu")
    q, s, wq, ws = *fu.quantize_activation(x), *fu.quantize_kv_b_proj(w)
    assert ws.max() / ws.min() > 8 and s.max() / s.min() > 2  # the probe's scales differ block to block
    a, b = fu.dequantize(q, s, torch.float32), fu.dequantize(wq, ws, torch.float32)
    assert fu.block_gemm_error_ok((a @ b.t()).to(torch.bfloat16), q, s, wq, ws)

    def truncated(t):  # float32 kept to 14 significant bits, rounded toward zero
        return (t.view(torch.int32) & ~((1 << 10) - 1)).view(torch.float32)
    blocks = [truncated(a[:, j:j + 128] @ b[:, j:j + 128].t()) for j in range(0, 512, 128)]
    assert fu.block_gemm_error_ok(sum(blocks).to(torch.bfloat16), q, s, wq, ws)
    assert not torch.allclose(sum(blocks), a @ b.t(), rtol=0, atol=1e-5)  # the truncation is felt
    wrong = ws.clone()
    wrong[0, 0] = ws[0, 1]  # block (0, 0) scaled as block (0, 1): 4x apart in the probe
    assert wrong[0, 0] != ws[0, 0]
    bad = (a @ fu.dequantize(wq, wrong, torch.float32).t()).to(torch.bfloat16)
    assert not fu.block_gemm_error_ok(bad, q, s, wq, ws)


def test_without_the_kernel_the_fp8_call_is_the_reference():
    if fu._INTERPRET:
        pytest.skip("TRITON_INTERPRET=1 is set: the kernel runs on the CPU here (the interpreter's test covers it)")
    cache_flat, rows, wq, ws, _ = fp8_case(SMALL, [40, 9], 8, seed=1)
    assert fu.why_reference(cache_flat, SMALL, fp8=True) is not None
    k, v = fu.fused_up_project(cache_flat, rows, wq, SMALL, kv_b_proj_scale=ws)
    k_ref, v_ref = fu.reference_up_project_fp8(cache_flat, rows, wq, ws, SMALL)
    assert torch.equal(k, k_ref) and torch.equal(v, v_ref)


# ---- (c) the kernel under Triton's interpreter --------------------------------------------------


def tie_case():
    """Rows whose every 128-column group holds 448, so the scale is 1 and e4m3 sees the values as they
    are: midpoints between e4m3 values (ties to even) and subnormals, where the interpreter's own cast
    (half away from zero, subnormals flushed) differs from the GPU's; the kernel emulates the GPU's."""
    dims = MlaDims("ties", heads=1, qk_nope=16, qk_rope=16, v_head=16, kv_lora=128)
    g = torch.Generator().manual_seed(5)
    ties = torch.tensor([1.0625, 1.1875, -1.0625, 2.125, 0.0009765625, 0.00146484375, -0.0029296875, 0.0234375])
    lat = ties[torch.randint(0, len(ties), (64, dims.latent), generator=g)]
    lat[:, 0] = 448.0
    cache_flat = lat.bfloat16()
    w = torch.zeros(32, 128)
    w[torch.arange(32), torch.randint(1, 128, (32,), generator=g)] = 1.0  # each output picks one column
    w[:, 1:] += 0.125 * torch.randint(-2, 3, (32, 127), generator=g)
    return dims, cache_flat, torch.arange(64), *fu.quantize_kv_b_proj(w)


def interpreter_cases():
    """Run in a child process with TRITON_INTERPRET=1: the kernel against reference_up_project_fp8, per
    case. Row counts off the block sizes, pages in random order, partial groups, n = 0."""
    out = {}
    v3_two_heads = MlaDims("V3, 2 heads", heads=2, qk_nope=V3.qk_nope, qk_rope=V3.qk_rope, v_head=V3.v_head,
                           kv_lora=V3.kv_lora)
    small_tiles = {"BLOCK_M": 32, "BLOCK_N": 16}
    for name, dims, lengths, ps, dtype, tiles, int32 in (
        ("small bf16", SMALL, [70, 0, 133], 16, torch.bfloat16, None, False),
        ("three groups fp16, int32 rows", WIDE, [19, 50], 4, torch.float16, None, True),
        ("three groups fp32, small tiles", WIDE, [45, 3, 30], 8, torch.float32, small_tiles, False),
        ("V3 dims, 2 heads, bf16", v3_two_heads, [150, 31], 64, torch.bfloat16, None, False),
        ("uneven head, a whole head a tile", UNEVEN, [33, 60], 8, torch.bfloat16, None, False),
        ("two whole heads a tile", WIDE, [70, 9], 16, torch.bfloat16, {"BLOCK_N": 128, "BLOCK_M": 16}, False),
        ("no rows", SMALL, [0, 0], 16, torch.bfloat16, None, False),
    ):
        cache_flat, rows, wq, ws, _ = fp8_case(dims, lengths, ps, dtype, seed=len(out))
        rows = rows.to(torch.int32) if int32 else rows
        r = {"kernel": fu.why_reference(cache_flat, dims, fp8=True) or "triton"}
        k, v = fu.fused_up_project(cache_flat, rows, wq, dims, tiles=tiles, kv_b_proj_scale=ws)
        r["shapes"] = [list(k.shape), list(v.shape)]
        k_ref, v_ref = fu.reference_up_project_fp8(cache_flat, rows, wq, ws, dims)
        r.update(base.compare(k, v, k_ref.float(), v_ref.float(), dims))
        if dtype == torch.float32:  # the reference rounded once to float32: the kernel's float32 sums
            r["max_rel"] = float(((v - v_ref).abs().max() / v_ref.abs().max().clamp(min=1e-30)))
        if name == "small bf16":  # into views: V in FA2's padded buffer, whose padding stays zero
            k_out, v_pad = torch.empty_like(k), torch.zeros(k.shape, dtype=dtype)
            k2, v2 = fu.fused_up_project(cache_flat, rows, wq, dims, k_out=k_out, v_out=v_pad[..., : dims.v_head],
                                         kv_b_proj_scale=ws)
            r["views_equal"] = bool(torch.equal(k2, k) and torch.equal(v2, v) and k2.data_ptr() == k_out.data_ptr())
            r["padding_zero"] = not bool(v_pad[..., dims.v_head :].any())
        out[name] = r
    dims, cache_flat, rows, wq, ws = tie_case()
    k, v = fu.fused_up_project(cache_flat, rows, wq, dims, kv_b_proj_scale=ws)
    k_ref, v_ref = fu.reference_up_project_fp8(cache_flat, rows, wq, ws, dims)
    # Against the reference with the interpreter's rounding (half away, no subnormals): must differ.
    aq = cache_flat[:, :128].float()
    away = torch.sign(aq) * torch.where(aq.abs() < 2.0 ** -6, 0.0, (aq.abs() * (1 + 2.0 ** -5)).clamp(max=448))
    k_away = (away.to(E4M3).double() @ fu.dequantize(wq, ws).t()).bfloat16()
    out["ties"] = {"kernel": fu.why_reference(cache_flat, dims, fp8=True) or "triton",
                   "equal": bool(torch.equal(k, k_ref) and torch.equal(v, v_ref)),
                   "away_differs": not torch.equal(k_away[:, :16], k[:, 0, :16])}
    return out


def test_kernel_under_the_interpreter_matches_the_reference():
    res = base.under_interpreter("test_fused_up_fp8", "interpreter_cases")
    assert len(res) == 8
    ties = res.pop("ties")  # round to nearest even and subnormals as the GPU, not as the interpreter's cast
    assert ties == {"kernel": "triton", "equal": True, "away_differs": True}, ties
    for name, r in res.items():
        assert r["kernel"] == "triton", (name, r)  # the kernel ran, not the fallback
        assert r["rope_exact"], (name, r)
        if "max_rel" in r:
            assert r["max_rel"] < 1e-5, (name, r)
        else:  # the float64 reference rounded once; the kernel's float32 sums a boundary apart at most
            assert r["within"] and r["exact"] >= 0.99, (name, r)
    assert res["no rows"]["shapes"] == [[0, 3, 48], [0, 3, 32]]
    assert res["small bf16"]["shapes"] == [[203, 3, 48], [203, 3, 32]]
    assert res["small bf16"]["views_equal"] and res["small bf16"]["padding_zero"]


# ---- (d) bad arguments --------------------------------------------------------------------------


def test_bad_fp8_arguments_raise_naming_the_argument():
    cache_flat, rows, wq, ws, w = fp8_case(SMALL, [30, 20], 8)
    good = dict(cache_flat=cache_flat, rows=rows, kv_b_proj=wq, dims=SMALL, kv_b_proj_scale=ws)
    bad = [
        ("kv_b_proj_scale", dict(kv_b_proj_scale=None)),  # e4m3 weight without its scales
        ("kv_b_proj_scale", dict(kv_b_proj_scale=ws.double())),
        ("kv_b_proj_scale", dict(kv_b_proj_scale=ws.t())),  # [1, 2], not [2, 1]
        ("kv_b_proj_scale", dict(kv_b_proj_scale=ws[:1])),
        ("kv_b_proj_scale", dict(kv_b_proj_scale=ws.tolist())),
        ("kv_b_proj_scale", dict(kv_b_proj=w)),  # scales with a bf16 weight
        ("kv_b_proj", dict(kv_b_proj=wq[:-1])),
        ("kv_b_proj", dict(kv_b_proj=wq.t().contiguous().t())),
        ("rows", dict(rows=torch.tensor([0, cache_flat.shape[0]]))),
        ("cache_flat", dict(cache_flat=cache_flat[:, :64])),
        ("k_out", dict(k_out=torch.empty(rows.shape[0], 3, 48, dtype=torch.float16))),
    ]
    for fn in (fu.fused_up_project, fu.reference_up_project_fp8, fu.unfused_up_project_fp8):
        for argument, change in bad:
            kw = dict(good, **change)
            if fn is not fu.fused_up_project:
                if "k_out" in kw:
                    if fn is fu.unfused_up_project_fp8:
                        continue  # it makes its own outputs
                if argument == "kv_b_proj_scale" and change.get("kv_b_proj") is w:
                    argument = "kv_b_proj"  # the FP8 functions take e4m3 only: the weight is what is wrong
            with pytest.raises(ValueError) as e:
                fn(**kw)
            assert isinstance(e.value, PrefillInputError)
            assert str(e.value).startswith(argument + ":"), (fn.__name__, argument, str(e.value))
    with pytest.raises(PrefillInputError, match="^w: "):
        fu.quantize_kv_b_proj(w[0])
    if torch.cuda.is_available():
        with pytest.raises(PrefillInputError, match="^kv_b_proj_scale: on cuda"):
            fu.fused_up_project(**dict(good, kv_b_proj_scale=ws.cuda()))


# ---- on a CUDA GPU ------------------------------------------------------------------------------


def gpu_compare(k, v, k_ref, v_ref, absdot):
    """k, v against a reference where e4m3 products are summed as Hopper's tensor cores sum them: within
    an MMA in reduced precision (about 13 mantissa bits, aligned to the largest term), promoted to
    float32 once a 128-column group, as DeepGEMM, CUTLASS's block GEMM and this kernel do. The bound:
    one output ulp plus 2^-9 of the sum of the products' magnitudes (absdot), every value; the share
    exactly equal; the RMS error against the RMS value (bf16's rounding alone is about 2^-10)."""
    d = V3.qk_nope
    got = torch.cat((k[..., :d].reshape(-1), v.reshape(-1))).float()
    want = torch.cat((k_ref[..., :d].reshape(-1), v_ref.reshape(-1))).float()
    mag = absdot.view(-1, V3.heads, d + V3.v_head)
    mag = torch.cat((mag[..., :d].reshape(-1), mag[..., d:].reshape(-1)))
    err = (got - want).abs()
    ulp = torch.ldexp(torch.ones_like(want), torch.frexp(want)[1] - 8)
    return {"within": bool((err <= ulp + mag * 2.0 ** -9).all()), "exact": float((err == 0).float().mean()),
            "rms_rel": float(err.square().mean().sqrt() / want.square().mean().sqrt().clamp(min=1e-30)),
            "rope_exact": bool(torch.equal(k[..., d:], k_ref[..., d:]))}


@base.needs_cuda
def test_gpu_block_gemm_is_cublas_at_the_models_shape_and_right_at_every_row_count():
    """The engines' FP8 GEMM (linear_fp8): at DeepSeek-V3 TP 8's kv_b_proj, cuBLAS's block-scaled GEMM where
    this torch has it (a probe of another shape, [384, 256], once sent every FP8 loop to the float32
    fallback on an H100), and within block_gemm_error_ok's bound of the dequantized product at every row
    count from 1 to 40 (cuBLAS refuses counts that are not a multiple of 4: those are padded)."""
    g = torch.Generator(device="cuda").manual_seed(5)
    w = torch.randn(V3.heads * (V3.qk_nope + V3.v_head), V3.kv_lora, device="cuda", generator=g) * 0.05
    wq, ws = fu.quantize_kv_b_proj(w)
    backend = fu.block_gemm_backend("cuda", *wq.shape)
    if hasattr(torch, "_scaled_mm") and torch.cuda.get_device_capability() == (9, 0):
        assert backend == "torch._scaled_mm", "cuBLAS's block GEMM is wrong or missing at DeepSeek-V3's shape"
    for n in range(1, 41):
        x = torch.randn(n, V3.kv_lora, device="cuda", generator=g).to(torch.bfloat16)
        assert fu.block_gemm_error_ok(fu.linear_fp8(x, wq, ws), *fu.quantize_activation(x), wq, ws), (n, backend)


@base.needs_cuda
def test_gpu_kernel_matches_the_reference_and_the_unfused_path():
    for n_rows in (1, 1000, 65536 + 37):
        lengths = [n_rows] if n_rows < 1000 else [n_rows - 700, 0, 700]
        cache_flat, rows, wq, ws, _ = fp8_case(V3, lengths, 64, torch.bfloat16, "cuda", seed=n_rows)
        assert fu.why_reference(cache_flat, V3, fp8=True) is None
        k, v = fu.fused_up_project(cache_flat, rows, wq, V3, kv_b_proj_scale=ws)
        a = fu.dequantize(*fu.quantize_activation(cache_flat.index_select(0, rows)[:, : V3.kv_lora]), torch.float32)
        absdot = a.abs() @ fu.dequantize(wq, ws, torch.float32).abs().t()
        del a
        k_ref, v_ref = fu.reference_up_project_fp8(cache_flat, rows, wq, ws, V3)
        against_ref = gpu_compare(k, v, k_ref, v_ref, absdot)
        del k_ref, v_ref
        k_un, v_un = fu.unfused_up_project_fp8(cache_flat, rows, wq, ws, V3)
        assert k.shape == k_un.shape and v.shape == v_un.shape
        against_unfused = gpu_compare(k, v, k_un, v_un, absdot)
        print(f"FP8 {n_rows} rows: against the float64 reference {against_ref}, against the unfused path "
              f"({fu.block_gemm_backend('cuda')}) {against_unfused}")
        for r in (against_ref, against_unfused):
            assert r["rope_exact"] and r["within"] and r["exact"] >= 0.8 and r["rms_rel"] < 2.0 ** -8, r
        del k_un, v_un, absdot
        torch.cuda.empty_cache()


def _fp8_gemm_ms(n, reps):
    """A dense tensorwise-scaled e4m3 GEMM of the up-projection's shape (torch._scaled_mm), or None."""
    cols = V3.heads * (V3.qk_nope + V3.v_head)
    a = torch.randn(n, V3.kv_lora, device="cuda").to(E4M3)
    b = torch.randn(cols, V3.kv_lora, device="cuda").to(E4M3).t()
    one = torch.ones((), device="cuda")
    try:
        return base._time_ms(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16), reps)
    except (RuntimeError, TypeError):
        return None


# The default (64 x a whole head: 232 registers a thread, no spills, in sm_90 code from Triton 3.9), fewer
# stages, and half-head tiles as the bf16 kernel's (each group quantized for 128 columns, not 256).
# (64 x a whole head at 4 warps spills.)
FP8_TUNING = [dict(fu.FP8_DEFAULT_TILES), dict(fu.FP8_DEFAULT_TILES, num_stages=2),
              dict(fu.FP8_DEFAULT_TILES, BLOCK_N=128), dict(fu.FP8_DEFAULT_TILES, BLOCK_M=128, BLOCK_N=128)]


def _fp8_paths_ms(n, reps):
    """The unfused FP8 path, its block GEMM alone, the FP8 kernel at each FP8_TUNING tile (None where a
    tile does not compile) and the bf16 kernel, in ms, on n rows of one sequence."""
    cache_flat, rows, wq, ws, w = fp8_case(V3, [n], 64, torch.bfloat16, "cuda", seed=7)
    r = {"unfused_ms": base._time_ms(lambda: fu.unfused_up_project_fp8(cache_flat, rows, wq, ws, V3), reps)}
    # Its parts: the quantization here is torch's several passes, where vLLM runs one CUDA kernel
    # (reading the rows, writing a byte an element): an engine's path is about gather + GEMM + concat
    # plus that one pass.
    latent = cache_flat.index_select(0, rows)
    q, s = fu.quantize_activation(latent[:, : V3.kv_lora])
    kv = fu._block_gemm(q, s, wq, ws, torch.bfloat16)
    r["unfused_parts_ms"] = {
        "gather": base._time_ms(lambda: cache_flat.index_select(0, rows), reps),
        "quantize (torch)": base._time_ms(lambda: fu.quantize_activation(latent[:, : V3.kv_lora]), reps),
        "block GEMM": base._time_ms(lambda: fu._block_gemm(q, s, wq, ws, torch.bfloat16), reps),
        "split + cat": base._time_ms(lambda: fu.assemble_kv(latent, kv, V3), reps)}
    r["unfused_gemm_ms"] = r["unfused_parts_ms"]["block GEMM"]
    del latent, q, s, kv
    k = torch.empty(n, V3.heads, V3.qk_head, device="cuda", dtype=torch.bfloat16)
    v = torch.empty(n, V3.heads, V3.v_head, device="cuda", dtype=torch.bfloat16)
    r["fused_ms"] = []
    for t in FP8_TUNING:
        try:
            r["fused_ms"].append(base._time_ms(lambda: fu.fused_up_project(
                cache_flat, rows, wq, V3, k, v, check_rows=False, tiles=t, kv_b_proj_scale=ws), reps))
        except Exception as e:  # noqa: BLE001  (out of shared memory at this tile: recorded, not fatal)
            print(f"  FP8 tile {t}: {type(e).__name__}: {str(e)[:200]}")
            r["fused_ms"].append(None)
    r["fused_bf16_ms"] = base._time_ms(lambda: fu.fused_up_project(cache_flat, rows, w, V3, k, v, check_rows=False), reps)
    return r


@base.needs_cuda
def test_gpu_fp8_timing():
    """DeepSeek-V3 TP 8 at 64K and 1M rows: the FP8 kernel (FP8_DEFAULT_TILES and a few others), the unfused
    FP8 path (gather, quantize, block GEMM, split, cat) and its GEMM alone, the bf16 kernel, a dense e4m3
    GEMM of the same shape and a copy of the same bytes. Printed; written to $FUSED_UP_FP8_JSON where set."""
    results = []
    for n in (65536, 1 << 20):
        reps = 20 if n < (1 << 20) else 8
        flops, moved = fu.up_projection_work(n, V3)  # bf16 rows in and K, V out; the e4m3 weight is 4 MB of it
        _, copy_ms = base._peaks_ms(n, moved, reps)
        fp8_gemm_ms = _fp8_gemm_ms(n, reps)
        torch.cuda.empty_cache()
        roof_ms = max(fp8_gemm_ms or 0.0, copy_ms)
        p = _fp8_paths_ms(n, reps)
        torch.cuda.empty_cache()
        tf = lambda ms: flops / ms / 1e9 if ms else None  # noqa: E731
        r = {"rows": n, "gpu": torch.cuda.get_device_name(), "flops": flops, "bytes": moved, "copy_ms": copy_ms,
             "copy_tbs": moved / copy_ms / 1e9, "fp8_gemm_ms": fp8_gemm_ms, "fp8_gemm_tflops": tf(fp8_gemm_ms),
             "roofline_ms": roof_ms, "block_gemm": fu.block_gemm_backend("cuda"), **p,
             "fused": [{"tiles": fu._tiles(V3, t, 2, fp8=True)[0], "ms": ms, "tflops": tf(ms), "x_roofline": ms / roof_ms if ms else None}
                       for t, ms in zip(FP8_TUNING, p["fused_ms"])]}
        results.append(r)
        print(f"\n{r['gpu']}, DeepSeek-V3 TP 8, FP8 kv_b_proj, {n} rows: {flops / 1e12:.2f} TFLOP, {moved / 1e9:.2f} GB; "
              f"dense e4m3 GEMM {fp8_gemm_ms} ms ({tf(fp8_gemm_ms)} TFLOP/s), copy {copy_ms:.3f} ms, roofline {roof_ms:.3f} ms")
        print(f"  unfused FP8 (gather, quantize, {r['block_gemm']}, split, cat): {p['unfused_ms']:.3f} ms, "
              f"{tf(p['unfused_ms']):.0f} TFLOP/s; its block GEMM alone {p['unfused_gemm_ms']:.3f} ms, "
              f"{tf(p['unfused_gemm_ms']):.0f} TFLOP/s; parts (ms) {p['unfused_parts_ms']}")
        print(f"  fused bf16 (default tiles): {p['fused_bf16_ms']:.3f} ms, {tf(p['fused_bf16_ms']):.0f} TFLOP/s")
        for f in r["fused"]:
            if f["ms"]:
                print(f"  fused FP8 {f['tiles']}: {f['ms']:.3f} ms, {f['tflops']:.0f} TFLOP/s, {f['x_roofline']:.2f}x "
                      f"the roofline, {p['unfused_ms'] / f['ms']:.2f}x faster than unfused FP8, "
                      f"{p['fused_bf16_ms'] / f['ms']:.2f}x faster than fused bf16")
    if os.environ.get("FUSED_UP_FP8_JSON"):
        with open(os.environ["FUSED_UP_FP8_JSON"], "w") as f:
            json.dump(results, f, indent=1)
    for r in results:  # what is asked of it: faster than the engine's unfused FP8 path
        assert r["fused"][0]["ms"] and r["fused"][0]["ms"] < r["unfused_ms"], r

