"""One CUDA graph for any batch of a bucket (mlaplan.prefill.any_batch, issue 64 item 5).

On the CPU: one AnyBatchLoop serves many random batches (load + step), each against one-shot attention;
planted defects in its tables are caught; a batch past the bucket, wrong types and an infeasible plan are
refused naming the argument; the fused kernel's device row count, in the reference and (in a child
process with TRITON_INTERPRET=1) in the Triton kernel; seqused_k in the attention. On a CUDA GPU: the
step captured once and replayed for 24 random batches, each against one-shot attention and bit for bit
against the eager step."""
import os
import subprocess
import sys
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the prefill executor needs torch (pip install .[torch])")

import mlaplan  # noqa: E402
import mlaplan.prefill as mp  # noqa: E402
from mlaplan.prefill import any_batch, fa3  # noqa: E402
from mlaplan.prefill import fused_up as fu  # noqa: E402
from mlaplan.prefill.any_batch import AnyBatchLoop, min_max_chunks  # noqa: E402
from mlaplan.prefill.attention import make_call, pad_v, varlen_attention  # noqa: E402
from mlaplan.prefill.measure import errors, merge_tolerance  # noqa: E402
from mlaplan.prefill.model import MlaDims  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_fused_up import under_interpreter  # noqa: E402
# Small enough for the CPU, with power-of-two widths so the Triton kernel runs under the interpreter.
SMALL = MlaDims("small", heads=2, qk_nope=32, qk_rope=16, v_head=32, kv_lora=64)
TOL = 1e-4  # float32 on the CPU, as the executor's check (check.py) judges it there


def random_batch(rng, loop, max_context=400, full=False):
    """A batch that fits the loop's bucket: 1..max_batch sequences, contexts (one in four empty) and new
    tokens (one in five none) at random, contexts scaled down until the plan fits max_chunks. full: every
    slot, each with context and new tokens."""
    b = loop.max_batch if full else int(rng.integers(1, loop.max_batch + 1))
    cache = np.where(rng.random(b) < (0 if full else 0.25), 0, rng.integers(1, max_context, b))
    new = np.where(rng.random(b) < (0 if full else 0.2), 0, rng.integers(1, 20, b))
    while new.sum() > loop.max_new:
        new //= 2
    pages = lambda c: -(-(c + new) // loop.page_size)  # noqa: E731
    while min_max_chunks(cache, loop.page_size, loop.buffer_rows) > loop.max_chunks or pages(cache).max() > loop.max_pages:
        cache = cache * 3 // 4
    return cache, new


def inputs(loop, cache, new, seed):
    x = mp.random_inputs(list(cache), [0] + np.cumsum(new).tolist(), loop.page_size, loop.dims, loop.dtype, loop.device, seed)
    x.kv_b_proj = loop.kv_b_proj  # one model's weight for every batch
    return x


def make_loop(page_size, buffer_rows, max_chunks, max_batch=6, max_new=64, max_pages=None, dims=SMALL, seed=0,
              dtype=torch.float32, device="cpu", **kw):
    g = torch.Generator(device=device).manual_seed(seed)
    w = ((torch.rand((dims.heads * (dims.qk_nope + dims.v_head), dims.kv_lora), generator=g, device=device) * 2 - 1)
         * dims.kv_lora**-0.5).to(dtype)
    pages = max_pages or (max_chunks * buffer_rows) // page_size + 4
    cache = torch.zeros((max_batch * pages + 8, page_size, dims.latent), dtype=dtype, device=device)
    return AnyBatchLoop(dims, w, cache, max_batch, max_new, pages, buffer_rows, max_chunks, **kw)


def run(loop, x):
    loop.load(x)
    loop.step()
    loop.status()
    return loop.result()


def check(loop, x, tol=TOL):
    out, lse = run(loop, x)
    ref_out, ref_lse = mp.one_shot(x)
    err, lse_err, ok = errors(out, lse, ref_out, ref_lse, tol)
    return err, lse_err, ok and lse_err <= tol


# ---- on the CPU ---------------------------------------------------------------------------------


@pytest.mark.parametrize("page_size, buffer_rows, max_chunks", [(16, 64, 12), (1, 200, 4), (64, 100, 9)])
def test_one_loop_serves_random_batches(page_size, buffer_rows, max_chunks):
    """Page sizes 16, 1 and 64 (the planner binds the page size, so each is a loop of its own), buffers
    shorter and longer than a sequence, a page straddling two chunks (100 rows of 64-token pages): ten
    batches through the same loop, larger and smaller after each other, each within the tolerance."""
    loop = make_loop(page_size, buffer_rows, max_chunks)
    rng = np.random.default_rng(page_size)
    seen = {"unused chunk": 0, "split sequence": 0, "empty context": 0, "no new tokens": 0}
    for i in range(10):
        cache, new = random_batch(rng, loop, full=i % 4 == 0)  # every slot, then fewer: stale slots must not leak
        x = inputs(loop, cache, new, seed=i)
        err, lse_err, ok = check(loop, x)
        assert ok, (i, cache, new, err, lse_err)
        lens = loop.lengths.numpy()
        seen["unused chunk"] += int((lens < 0).any())
        seen["split sequence"] += int(((loop.seqused_k.numpy() > 0).sum(axis=0) > 1).any())
        seen["empty context"] += int((cache == 0).any())
        seen["no new tokens"] += int((new == 0).any())
    assert all(seen.values()), seen


def test_a_batch_without_new_tokens_and_a_full_bucket():
    loop = make_loop(16, 64, 6, max_batch=3, max_new=8)
    out, lse = run(loop, inputs(loop, [100, 0, 50], [0, 0, 0], 1))
    assert out.shape == (0, SMALL.heads, SMALL.v_head) and lse.shape == (SMALL.heads, 0)
    # Every slot and chunk used: 3 sequences of 128 padded rows in 6 chunks of 64.
    x = inputs(loop, [128, 120, 113], [3, 0, 5], 2)
    assert check(loop, x)[2] and (loop.lengths.numpy() == 64).all()


def test_fp8_weights_match_their_one_shot():
    """weights="fp8": kv_b_proj quantized once as the FP8 checkpoint holds it; the loop matches one-shot
    attention with K and V made alike (and misses the bf16 one, so the weights really changed)."""
    loop = make_loop(16, 64, 8, weights="fp8")
    x = inputs(loop, [130, 0, 61], [4, 3, 6], 7)
    out, lse = run(loop, x)
    ref_out, ref_lse = mp.one_shot(x, weights="fp8")
    assert errors(out, lse, ref_out, ref_lse, TOL)[2]
    assert not errors(out, lse, *mp.one_shot(x), TOL)[2]
    with pytest.raises(ValueError, match="weights: 'fp4'"):
        make_loop(16, 64, 8, weights="fp4")


class OffByOneKeys(AnyBatchLoop):
    """seqused_k one short where a sequence has keys: each such chunk drops its last key."""

    def _tables(self):
        super()._tables()
        self.seqused_k.sub_((self.seqused_k > 0).to(torch.int32))


class ShiftedRows(AnyBatchLoop):
    """Every real row reads the token one position later (the tables' position off by one)."""

    def _tables(self):
        super()._tables()
        self.chunk_rows.copy_(torch.where(self.chunk_rows > 0, self.chunk_rows + 1, self.chunk_rows))


@pytest.mark.parametrize("defect", [OffByOneKeys, ShiftedRows])
def test_a_planted_defect_is_caught(defect):
    """The check that passes the loop fails a loop with one key too few or rows one token off."""
    x_args = dict(cache=[37, 0, 70], new=[3, 4, 5])
    good = make_loop(16, 32, 8)
    assert check(good, inputs(good, **x_args, seed=3))[2]
    bad = make_loop(16, 32, 8)
    bad.__class__ = defect
    err, _, ok = check(bad, inputs(bad, **x_args, seed=3))
    assert not ok and err > 10 * TOL, err


def test_a_batch_past_the_bucket_is_refused_naming_what_is_too_large():
    loop = make_loop(16, 64, 4, max_batch=2, max_new=10, max_pages=8)
    for cache, new, name in (([10, 10, 10], [1, 1, 1], "batch_size: 3 is past the bucket's 2"),
                             ([10, 10], [6, 5], "new_tokens: 11 is past the bucket's 10"),
                             ([200, 0], [1, 1], "page_table: 13 pages a sequence uses is past the bucket's 8")):
        with pytest.raises(ValueError, match=name):
            loop.load(inputs(loop, cache, new, 0))
    wide = inputs(loop, [100, 3], [2, 1], 1)  # a wider table than the bucket's, past the pages used: served
    wide.page_table = torch.nn.functional.pad(wide.page_table, (0, 6))
    assert wide.page_table.shape[1] == 13 and check(loop, wide)[2]
    other = mp.random_inputs([10], [0, 2], 16, SMALL, torch.float32, "cpu", 0)
    with pytest.raises(ValueError, match="kv_b_proj: not the loop's weight"):
        loop.load(other)
    paged8 = mp.random_inputs([10], [0, 2], 8, SMALL, torch.float32, "cpu", 0)
    paged8.kv_b_proj = loop.kv_b_proj
    with pytest.raises(ValueError, match="page_size: 8; the bucket's cache has pages of 16"):
        loop.load(paged8)
    with pytest.raises(ValueError, match="x: expected PrefillInputs"):
        loop.load({"q": None})


def test_wrong_types_are_refused_naming_the_argument():
    loop = make_loop(16, 64, 4)
    x = inputs(loop, [10], [2], 0)
    x64 = mp.random_inputs([10], [0, 2], 16, SMALL, torch.float64, "cpu", 0)
    x64.kv_b_proj = loop.kv_b_proj.double()
    with pytest.raises(ValueError, match="q: torch.float64"):
        loop.load(x64)
    w, cache = loop.kv_b_proj, loop.kv_cache
    for kwargs, name in ((dict(kv_b_proj=w.double()), "kv_b_proj: expected torch.float32"),
                         (dict(kv_cache=cache[..., :10]), "kv_cache: expected a floating tensor"),
                         (dict(kv_cache=cache.long()), "kv_cache: expected a floating tensor"),
                         (dict(max_chunks=0), "max_chunks: expected a whole number >= 1"),
                         (dict(max_batch=2.5), "max_batch: expected a whole number"),
                         (dict(buffer_rows=True), "buffer_rows: expected a whole number"),
                         (dict(kernel="cudnn"), "kernel: 'cudnn'"),
                         (dict(dims="small"), "dims: expected an MlaDims")):
        args = dict(dims=SMALL, kv_b_proj=w, kv_cache=cache, max_batch=2, max_new=8, max_pages=4, buffer_rows=64,
                    max_chunks=2)
        args.update(kwargs)
        with pytest.raises(ValueError, match=name):
            AnyBatchLoop(**args)
    with pytest.raises(ValueError, match="replay: nothing captured"):
        loop.replay()
    with pytest.raises(ValueError, match="a CUDA graph needs CUDA tensors"):
        loop.capture()
    loop.load(x)  # still serves after the refusals
    assert loop.new_tokens == 2


def test_an_infeasible_plan_is_reported_with_the_smallest_max_chunks():
    """More context than M x N: status() raises InfeasibleBatch naming max_chunks and the planner's own
    minimum; no chunk runs, so the output is the new tokens' attention over themselves alone. A context
    of exactly M x N rows with an empty slot after it needs one chunk more (the planner's rule: that
    slot would start past the last chunk)."""
    loop = make_loop(16, 64, 3, max_batch=3)
    x = inputs(loop, [100, 150], [4, 2], 5)
    loop.load(x)
    loop.step()
    with pytest.raises(mlaplan.InfeasibleBatch, match="max_chunks: infeasible batch: 272 padded tokens") as e:
        loop.status()
    assert e.value.min_max_chunks == 5 and "at least 5" in str(e.value)
    assert (loop.lengths.numpy() == -1).all() and not loop.seqused_k.any()
    out, _ = loop.result()
    # The new tokens over themselves alone: their K and V, one causal call.
    flat = loop.kv_cache.view(-1, SMALL.latent)
    k, v = fu.reference_up_project(flat, loop.new_rows[:6], loop.kv_b_proj, SMALL)
    want, _ = varlen_attention(x.q, k, pad_v(v, SMALL.qk_head), make_call([4, 2], [4, 2], True, "cpu"), SMALL.scale)
    assert torch.allclose(out, want[..., : SMALL.v_head], atol=1e-6)
    loop.load(inputs(loop, [192], [0], 0))  # 3 x 64 rows exactly, slots 1 and 2 empty after it
    loop.step()
    with pytest.raises(mlaplan.InfeasibleBatch) as e:
        loop.status()
    with pytest.raises(mlaplan.InfeasibleBatch) as want:
        mlaplan.plan(np.array([192, 0, 0]), np.zeros(4, dtype=np.int64), 16, 64, 3)
    assert e.value.min_max_chunks == want.value.min_max_chunks == 4 == min_max_chunks(np.array([192, 0, 0]), 16, 64)


def test_the_row_count_in_device_memory_is_honoured_by_the_reference():
    """fused_up_project(row_count=): the first count rows made, the others of k_out and v_out left as
    they were, rows past the count never read (here out of range); a bad count refused by name."""
    if fu._INTERPRET:
        pytest.skip("TRITON_INTERPRET=1 is set: the kernel runs here, not the reference (the interpreter's test covers it)")
    x = mp.random_inputs([40], [0, 0], 8, SMALL, torch.float32, "cpu", 1)
    flat = x.kv_cache.view(-1, SMALL.latent)
    rows = torch.arange(30, dtype=torch.int64)
    rows[20:] = 10**9  # past the cache: the count keeps them unread
    k_out = torch.full((30, SMALL.heads, SMALL.qk_head), 7.0)
    v_out = torch.full((30, SMALL.heads, SMALL.v_head), 7.0)
    k, v = fu.fused_up_project(flat, rows, x.kv_b_proj, SMALL, k_out=k_out, v_out=v_out, check_rows=False,
                               row_count=torch.tensor([20], dtype=torch.int32))
    k_ref, v_ref = fu.reference_up_project(flat, rows[:20], x.kv_b_proj, SMALL)
    assert k is k_out and torch.equal(k[:20], k_ref) and torch.equal(v[:20], v_ref)
    assert (k[20:] == 7).all() and (v[20:] == 7).all()
    k0, _ = fu.fused_up_project(flat, rows[:20], x.kv_b_proj, SMALL, row_count=torch.zeros(1, dtype=torch.int64))
    assert not k0.any()
    for count, why in ((torch.tensor([1.0]), "row_count: expected an int32 or int64 tensor of one element"),
                       (torch.tensor([1, 2]), "row_count: expected an int32 or int64 tensor of one element"),
                       (5, "row_count: expected")):
        with pytest.raises(ValueError, match=why):
            fu.fused_up_project(flat, rows[:20], x.kv_b_proj, SMALL, row_count=count)


def test_seqused_k_limits_each_sequences_keys():
    """varlen_attention(seqused_k=) on the CPU equals the call whose key ranges stop there; 0 keys reads
    as no keys (LSE +inf, as FlashAttention gives)."""
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(7, 2, 16, generator=g), torch.randn(20, 2, 16, generator=g), torch.randn(20, 2, 16, generator=g)
    c = make_call([3, 4], [12, 8], False, "cpu")
    out, lse = varlen_attention(q, k, v, c, 0.25, seqused_k=torch.tensor([5, 0], dtype=torch.int32))
    want, want_lse = varlen_attention(q[:3], k[:5], v[:5], make_call([3], [5], False, "cpu"), 0.25)
    assert torch.equal(out[:3], want) and torch.equal(lse[:, :3], want_lse)
    assert (lse[:, 3:] == float("inf")).all() and not out[3:].any()


def test_fa3_gets_seqused_k_only_where_given(monkeypatch):
    """Each build's call passes seqused_k on where given, and leaves it out otherwise (as before)."""
    calls = []

    def varlen(q, k, v, *args, **kw):
        calls.append(sorted(kw))
        return torch.zeros(q.shape[0], q.shape[1], v.shape[-1]), torch.zeros(q.shape[1], q.shape[0])
    fake = types.SimpleNamespace(flash_attn_varlen_func=varlen, is_fa_version_supported=lambda v: True)
    monkeypatch.setattr(fa3.importlib, "import_module", lambda name: fake)
    monkeypatch.setitem(sys.modules, "flash_attn_config", None)  # fa3-fwd's alias, set by _fa3_fwd
    q, k = torch.zeros(5, 2, 24), torch.zeros(3, 2, 24)
    for make in (fa3._flash_attn_interface, fa3._fa3_fwd, fa3._vllm, fa3._sgl_kernel):
        build = make()
        fa3.attention(build, q, k, k[..., :16], None, None, 5, 3, 0.1, False)
        fa3.attention(build, q, k, k[..., :16], None, None, 5, 3, 0.1, False, torch.zeros(1, dtype=torch.int32))
        assert "seqused_k" not in calls[-2] and "seqused_k" in calls[-1], (make.__name__, calls[-2:])


def interpreter_case():
    """Run with TRITON_INTERPRET=1 (a child process): two batches through one loop whose up-projections are
    the Triton kernel reading the device row count, against one-shot attention."""
    loop = make_loop(8, 32, 6, max_batch=3, max_new=12)
    calls, real = [], any_batch.fused_up_project
    any_batch.fused_up_project = lambda *a, **kw: calls.append(fu.why_reference(a[0], SMALL) or "triton") or real(*a, **kw)
    try:
        res = [check(loop, inputs(loop, cache, new, i))
               for i, (cache, new) in enumerate((([50, 0, 21], [3, 4, 2]), ([9], [5])))]
    finally:
        any_batch.fused_up_project = real
    return {"calls": sorted(set(calls)), "steps": len(calls), "errors": [r[0] for r in res], "ok": [r[2] for r in res]}


def test_the_loop_under_the_interpreter_runs_the_kernel_with_its_device_counts():
    r = under_interpreter("test_any_batch", "interpreter_case", timeout=600)
    assert r["calls"] == ["triton"] and r["steps"] == 2 * (1 + 6), r  # the new tokens and 6 chunks, twice
    assert all(r["ok"]), r


def test_the_timing_table_runs_its_steps_on_the_cpu(monkeypatch):
    """compare (the gpu-check part's table), its timers and the graph stood in for by eager runs on the
    CPU: every column filled, the loop's error within the tolerance, M the plan's chunks."""
    from mlaplan.prefill import timing

    monkeypatch.setattr(AnyBatchLoop, "capture", lambda self, warmup=2: None)
    monkeypatch.setattr(AnyBatchLoop, "replay", AnyBatchLoop.step)
    monkeypatch.setattr(timing, "time_eager", lambda fn, cuda, reps, warmup, settle_ms=0.0: [fn() or 1.0])
    monkeypatch.setattr(timing, "time_graph", lambda fn, reps, warmup, settle_ms=0.0: [fn() or 2.0])
    x = mp.random_inputs([300, 40, 0, 170], [0, 5, 9, 9, 20], 16, SMALL, torch.float32, "cpu", 4)
    rows = any_batch.compare(x, [64, 1024], "flash", reps=1, warmup=0)
    assert [r[:2] for r in rows] == [(64, 9), (1024, 1)]  # 528 padded rows
    assert all(len(r) == len(any_batch.COLUMNS) and r[5] < TOL for r in rows), rows
    p = subprocess.run([sys.executable, "-m", "mlaplan.prefill.any_batch", "none.json"], capture_output=True, text=True,
                       env=dict(os.environ, CUDA_VISIBLE_DEVICES=""), timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("mlaplan: error: ") and len(p.stderr.splitlines()) == 1, p.stderr


# ---- on a CUDA GPU ------------------------------------------------------------------------------

GPU = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU or not mlaplan.cuda_available(), reason=(
    "no CUDA GPU: the captured loop needs one" if not GPU else
    "this mlaplan was built without CUDA: the loop plans on the device (build with MLAPLAN_ENABLE_CUDA=ON)"))


@needs_gpu
def test_one_graph_replays_any_batch_of_its_bucket():
    """DeepSeek-V3 TP 8 in bf16, FlashAttention-3 where a build imports (else FA2): one capture, 24 random
    batches replayed, each within the executor's tolerance of one-shot attention (1e-2 plus the merge
    allowance of its chunks) and bit for bit what the eager step gives (the same kernels in the same order)."""
    dims = mp.model_dims("deepseek-v3", tp=8)
    build, _ = fa3.find()
    kernel = "fa3" if build is not None and torch.cuda.get_device_capability()[0] == 9 else "flash"
    if kernel == "flash" and not any_batch.varlen_takes_seqused_k():
        pytest.skip("no FlashAttention-3 build imports here and this torch's varlen_attn takes no seqused_k: "
                    "pip install fa3-fwd (scripts/gpu-check/any-batch.sh installs it from .whl/)")
    loop = make_loop(64, 4096, 10, max_batch=12, max_new=1024, max_pages=400, dims=dims, dtype=torch.bfloat16,
                     device="cuda", kernel=kernel)
    rng = np.random.default_rng(5)
    cache, new = random_batch(rng, loop, max_context=20000)
    loop.load(inputs(loop, cache, new, 0))
    loop.capture()
    used = set()
    for i in range(24):
        cache, new = random_batch(rng, loop, max_context=20000)
        x = inputs(loop, cache, new, i)
        loop.load(x)
        loop.replay()
        loop.status()
        out, lse = loop.result()
        loop.step()
        eager_out, eager_lse = loop.result()
        assert torch.equal(out, eager_out) and torch.equal(lse, eager_lse), i
        chunks = int((loop.lengths > 0).sum())
        used.add(chunks)
        ref = mp.one_shot(x)
        bound = merge_tolerance(1e-2, np.full(x.lengths.new_tokens, chunks), torch.bfloat16, "cuda")
        err, lse_err, ok = errors(out, lse, *ref, bound)
        assert ok and lse_err < 1e-2, (i, kernel, cache, new, err, lse_err)
    assert len(used) > 3, used  # batches of few chunks and of many replayed the same graph
