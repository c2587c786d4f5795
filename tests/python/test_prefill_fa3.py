"""FlashAttention-3 in the prefill executor, on an SM90 GPU: every engine against one-shot attention,
V unpadded, its LSE read in the executor's layout, a sequence without keys, graph replay, and the
build named in the command's output. Skipped, saying why, without a GPU, on another GPU, or where no
FlashAttention-3 build imports (pip install fa3-fwd)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the prefill executor needs torch (pip install .[torch])")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: FlashAttention-3 needs an SM90 GPU", allow_module_level=True)
if torch.cuda.get_device_capability()[0] != 9:
    pytest.skip(f"FlashAttention-3 runs on SM90; this GPU is SM{torch.cuda.get_device_capability()[0]}0",
                allow_module_level=True)

from mlaplan.prefill import fa3  # noqa: E402

BUILD, WHY = fa3.find()
if BUILD is None:
    pytest.skip(WHY, allow_module_level=True)

import mlaplan.prefill as mp  # noqa: E402
from mlaplan.prefill import check, schedule, timing  # noqa: E402
from mlaplan.prefill.attention import make_call, resolve_kernel, varlen_attention  # noqa: E402
from mlaplan.prefill.executor import execute, prepare  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIMS = mp.model_dims("deepseek-v3", tp=8)


def test_auto_runs_fa3_on_sm90():
    assert resolve_kernel("auto", "cuda") == ("fa3", None)


def test_every_engine_matches_one_shot_with_fa3():
    rng = np.random.default_rng(21)
    for i in range(6):
        b = check.random_batch(rng, max_batch=16, max_context=40000, max_total_context=120000, max_new=512,
                               max_total_new=2048)
        x = mp.random_inputs(b.cache, b.offsets, b.page_size, DIMS, torch.bfloat16, "cuda", 60 + i)
        for engine, path, err, lse_err, ok in check.check_batch(x, b.buffer_tokens, 1e-2, kernel="fa3"):
            assert ok, (engine, path, err, b)
            if err is not None:
                assert lse_err < 1e-2, (engine, path, lse_err)


def test_fa3_takes_v_unpadded_and_matches_fa2():
    g = torch.Generator(device="cuda").manual_seed(4)
    c = make_call([3, 0, 200], [500, 40, 200], True, "cuda")
    q = torch.randn(c.n_q, 16, 192, device="cuda", generator=g).bfloat16()
    k = torch.randn(c.n_k, 16, 192, device="cuda", generator=g).bfloat16()
    v = torch.randn(c.n_k, 16, 128, device="cuda", generator=g).bfloat16()
    out, lse = varlen_attention(q, k, v, c, 0.07, "fa3")
    assert out.shape == (c.n_q, 16, 128) and lse.shape == (16, c.n_q) and lse.dtype == torch.float32
    ref, ref_lse = varlen_attention(q, k, torch.nn.functional.pad(v, [0, 64]), c, 0.07, "flash")
    assert (out.float() - ref[..., :128].float()).abs().max().item() < 2e-2
    assert (lse - ref_lse).abs().max().item() < 1e-3


def test_a_sequence_without_keys_reads_as_no_keys():
    c = make_call([4, 5], [0, 9], False, "cuda")
    q = torch.randn(c.n_q, 16, 192, device="cuda").bfloat16()
    k = torch.randn(c.n_k, 16, 192, device="cuda").bfloat16()
    v = torch.randn(c.n_k, 16, 128, device="cuda").bfloat16()
    out, lse = varlen_attention(q, k, v, c, 0.07, "fa3")
    # FlashAttention's value for no keys is +inf (the merge reads it as -inf); either infinity is "none".
    assert torch.isinf(lse[:, :4]).all() and torch.isfinite(lse[:, 4:]).all()
    assert not torch.isnan(out).any() and out[:4].abs().max().item() == 0


def test_graph_replay_computes_what_eager_does_with_fa3():
    x = mp.random_inputs([5000, 0, 2000], [0, 100, 150, 180], 64, DIMS, torch.bfloat16, "cuda", 5)
    for engine in mp.ENGINES:
        s = schedule.build_schedule(engine, x.lengths, mp.host_page_table(x), 2048, None, x.device,
                                    sglang_path="chunked" if engine == "even-split/sglang" else "auto")
        p = prepare(x, s, kernel="fa3")
        assert not p.pad_v
        eager = execute(p)[0].clone()
        box = {}
        graph_ms = timing.time_graph(lambda: box.__setitem__("out", execute(p)[0]), reps=2, warmup=1)
        assert len(graph_ms) == 2 and min(graph_ms) > 0
        assert torch.equal(box["out"], eager), engine


def test_command_names_the_build(tmp_path):
    out = tmp_path / "runs.json"
    r = subprocess.run([sys.executable, "-m", "mlaplan.prefill", os.path.join(ROOT, "scenarios", "worked-example.json"),
                        "--tp", "8", "--reps", "2", "--warmup", "1", "--format", "json", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "note:" not in r.stderr, r.stderr  # auto found FA3: no note
    doc = json.loads(out.read_text())
    assert doc["attention"].startswith("fa3 (FlashAttention-3, ") and BUILD.title in doc["attention"], doc["attention"]
    for run in doc["batches"][0]["runs"]:
        assert run["refused"] or run["ok"], run
