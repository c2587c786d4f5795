"""The prefill executor on CUDA in bf16: FlashAttention-2 through torch, the fused Triton merge, graph
replay and the profiler's parts. Skipped without a GPU. (FlashAttention-3: test_prefill_fa3.py.)"""
import os
import subprocess
import sys
import itertools
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the prefill executor needs torch (pip install .[torch])")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: the prefill executor's CUDA tests need one", allow_module_level=True)

import mlaplan.prefill as mp  # noqa: E402
from mlaplan.prefill import check, schedule, timing  # noqa: E402
from mlaplan.prefill.executor import execute, prepare  # noqa: E402
from mlaplan.prefill.merge import merge_into  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIMS = mp.model_dims("deepseek-v3", tp=8)


def test_every_engine_matches_one_shot_in_bf16():
    rng = np.random.default_rng(11)
    for i in range(6):
        b = check.random_batch(rng, max_batch=16, max_context=40000, max_total_context=120000, max_new=512,
                               max_total_new=2048)
        x = mp.random_inputs(b.cache, b.offsets, b.page_size, DIMS, torch.bfloat16, "cuda", i)
        for engine, path, err, lse_err, ok in check.check_batch(x, b.buffer_tokens, 1e-2, kernel="flash"):
            assert ok, (engine, path, err, b)
            if err is not None:
                assert lse_err < 1e-2, (engine, path, lse_err)


def test_fused_merge_equals_eager_merge():
    g = torch.Generator(device="cuda").manual_seed(3)
    heads, T, n = 16, 300, 120
    base_o = torch.randn(T, heads, 128, device="cuda", generator=g).bfloat16()
    base_lse = torch.randn(heads, T, device="cuda", generator=g)
    base_lse[:, :7] = float("-inf")  # rows that had no keys yet
    part = torch.randn(n, heads, 192, device="cuda", generator=g).bfloat16()  # padded V, as FA2 returns it
    part_lse = torch.randn(heads, n, device="cuda", generator=g)
    part_lse[:, 5:9] = float("inf")  # FA2's LSE for a sequence without keys
    part_lse[:, 20:22] = float("-inf")  # cuDNN's, with NaN in its output
    part[20:22] = float("nan")
    for rows, tiled in itertools.product((slice(3, 3 + n), torch.randperm(T, device="cuda", generator=g)[:n]), (False, True)):
        results = []
        for fused in (True, False):
            o, lse = base_o.clone(), base_lse.clone()
            merge_into(o, lse, part, part_lse, rows, fused=fused, tiled=tiled)
            results.append((o.float(), lse))
        assert torch.allclose(results[0][0], results[1][0], atol=1e-2)
        assert torch.allclose(results[0][1], results[1][1], atol=1e-5, equal_nan=False)
        assert not torch.isnan(results[0][0]).any() and not torch.isnan(results[0][1]).any()


def test_graph_replay_computes_what_eager_does():
    x = mp.random_inputs([5000, 0, 2000], [0, 100, 150, 180], 64, DIMS, torch.bfloat16, "cuda", 5)
    for engine in mp.POLICIES:
        s = schedule.build_schedule(engine, x.lengths, mp.host_page_table(x), 2048, None, x.device,
                                    sglang_path="chunked" if engine == "even-split/sglang" else "auto")
        p = prepare(x, s)
        eager = execute(p)[0].clone()
        box = {}
        graph_ms = timing.time_graph(lambda: box.__setitem__("out", execute(p)[0]), reps=2, warmup=1)
        assert len(graph_ms) == 2 and min(graph_ms) > 0
        assert torch.equal(box["out"], eager), engine


def test_the_dispatch_probe_issues_one_small_layer_of_the_same_setting():
    from mlaplan.prefill import dispatch_probe

    x = mp.random_inputs([5000, 0, 2000], [0, 100, 150, 180], 64, DIMS, torch.bfloat16, "cuda", 5)
    s = schedule.build_schedule("packed", x.lengths, mp.host_page_table(x), 2048, None, x.device)
    a, b = prepare(x, s, kernel="flash"), prepare(x, s, kernel="flash", state="fp32")
    assert dispatch_probe.probe_ms(a) > 0 and dispatch_probe.probe_ms(b) > 0
    layers = [layer for key, layer in dispatch_probe._layers.items() if key[0] == DIMS and key[3] == "flash"]
    assert len(layers) == 2  # one per running-state dtype: each probes the code its runs take
    assert {layer.state for layer in layers} == {torch.bfloat16, torch.float32}
    assert all(layer.x.lengths.batch_size == len(dispatch_probe.CACHE) and layer.schedule.iterations == 1 for layer in layers)
    # measure() keeps it beside the eager runs it brackets.
    t = timing.measure(lambda r: execute(a, r), True, reps=2, warmup=1, graph=False, parts=False,
                       dispatch_probe=lambda: dispatch_probe.probe_ms(a))
    assert t.dispatch_probe_ms > 0 and t.eager_ms > 0


def test_timing_settles_for_as_long_as_asked():
    # The sustained clock: warm-up goes on, back to back, until settle_ms of wall time have passed.
    import time
    a = torch.randn(2048, 2048, device="cuda")
    calls = []
    t0 = time.perf_counter()
    samples = timing.time_eager(lambda: calls.append(a @ a), cuda=True, reps=2, warmup=1, settle_ms=100)
    assert len(samples) == 2 and (time.perf_counter() - t0) >= 0.1 and len(calls) > 3
    graph_ms = timing.time_graph(lambda: a @ a, reps=2, warmup=1, settle_ms=50)
    assert len(graph_ms) == 2


def test_probed_timing_reheats_after_each_probe_for_as_long_as_asked():
    # After each probe the work runs back to back for reheat_ms, then one timed run; none without it.
    import time
    a = torch.randn(2048, 2048, device="cuda")
    calls, probes = [], []

    def probe():
        probes.append(len(calls))
        return 1.0

    timing.time_eager_probed(lambda: calls.append(a @ a), reps=3, warmup=1, settle_ms=0, probe=probe)
    assert len(calls) == 1 + 3 and probes == [1, 2, 3, 4]
    calls.clear()
    probes.clear()
    t0 = time.perf_counter()
    timing.time_eager_probed(lambda: calls.append(a @ a), reps=3, warmup=1, settle_ms=0, probe=probe, reheat_ms=30)
    assert time.perf_counter() - t0 >= 0.09 and len(probes) == 4
    assert all(after - before > 2 for before, after in zip(probes, probes[1:])), probes  # reheat runs and the timed one


def test_parts_add_up_and_the_gpu_idles_less_in_a_graph():
    x = mp.random_inputs([20000, 3000], [0, 256, 320], 64, DIMS, torch.bfloat16, "cuda", 6)
    s = schedule.build_schedule("packed", x.lengths, mp.host_page_table(x), 4096, None, x.device)
    p = prepare(x, s)
    t = timing.measure(lambda r: execute(p, r), cuda=True, reps=5, warmup=2)
    assert all(t.parts_ms[k] > 0 for k in ("gather", "up-projection", "attention", "merge", "new tokens"))
    assert t.gpu_busy_ms <= t.gpu_span_ms + 1e-6 and t.kernels > 4 * s.iterations
    assert sum(t.parts_ms.values()) <= t.gpu_busy_ms * 1.05 + 0.05  # kernels' time, each counted once
    assert t.graph_ms is not None and t.graph_ms <= t.eager_ms * 1.2
    # The fused merge is a Triton kernel, launched through the driver rather than by a torch op; its
    # time must still land in the merge part (vLLM's even split merges every chunk after the first).
    s = schedule.build_schedule("even-split", x.lengths, mp.host_page_table(x), 4096, None, x.device)
    p = prepare(x, s)
    parts, *_ = timing.profile_parts(lambda: execute(p, True), cuda=True)
    assert s.merges > 2 and parts["merge"] > 0.001 * s.merges


def test_command_on_the_gpu(tmp_path):
    out = tmp_path / "runs.json"
    r = subprocess.run([sys.executable, "-m", "mlaplan.prefill", os.path.join(ROOT, "scenarios", "worked-example.json"),
                        "--tp", "8", "--reps", "2", "--warmup", "1", "--format", "json", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["dtype"] == "bfloat16" and "H" in doc["device"] or doc["device"]
    for run in doc["batches"][0]["runs"]:
        assert run["refused"] or (run["ok"] and run["graph_ms"] > 0 and run["eager_ms"] > 0), run
        # The eager runs waited for the host CPU's full speed (--cpu-wait-s, on by default) and say so.
        assert run["refused"] or run["cpu_probe_ms"] > 0, run
        # And the host's dispatch speed around them (dispatch_probe), which every eager run on a GPU records.
        assert run["refused"] or run["dispatch_probe_ms"] > 0, run
    assert "host CPU's full speed" in doc["timing"]


def test_cudnn_attention_matches_one_shot():
    rng = np.random.default_rng(12)
    for i in range(3):
        b = check.random_batch(rng, max_batch=12, max_context=30000, max_total_context=80000, max_new=256,
                               max_total_new=1024)
        x = mp.random_inputs(b.cache, b.offsets, b.page_size, DIMS, torch.bfloat16, "cuda", 40 + i)
        for engine, path, err, lse_err, ok in check.check_batch(x, b.buffer_tokens, 1e-2, kernel="cudnn"):
            assert ok, (engine, path, err, b)


def test_calibration_point_is_timed_eager_and_replayed():
    """A calibration point measured as `python -m mlaplan.calibrate` measures it: bf16, graph replay,
    the fused merge; every engine's iterations are its terms' own, and the replayed loop is no slower
    than the eager one (it drops the host's dispatch) by more than noise; the timed eager runs stamp
    each launch the layer issues."""
    pytest.importorskip("scipy", reason="the calibration fits with scipy (pip install .[calibrate])")
    from mlaplan.calibrate.grid import Point, features, record_sm
    from mlaplan.calibrate.measure import measure_point

    for engine in schedule.POLICIES:
        p = Point([40000, 0, 9000], [1500, 700, 300], 64, 8192, engine)
        rec = measure_point(p, DIMS, torch.bfloat16, torch.device("cuda"), reps=3, warmup=1, kernel="flash", seed=5)
        assert "refused" not in rec, rec
        assert rec["iterations"] == features(p, DIMS.heads, sm=record_sm(rec))["per_iteration_us"], engine
        assert rec["graph_ms"] > 0 and rec["graph_ms"] <= 1.2 * rec["eager_ms"], rec
        # The timed eager runs stamped their launches: a host cost for every kind the layer launches,
        # whose issue time the eager time (host and device) cannot be shorter than by much.
        assert set(rec["host_launch_us"]) == {k for k, n in rec["launches"].items() if n}, rec
        assert all(v > 0 for v in rec["host_launch_us"].values()) and 0 < rec["host_issue_ms"] <= 1.1 * rec["eager_ms"], rec
