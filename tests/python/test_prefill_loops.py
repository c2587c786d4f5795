"""mlaplan's own loop (NAME+fused) and FP8 weights in the executor, on the CPU: the policy names, the
check's variants, and every loop against one-shot attention with K and V made as the loop makes them.
The fused kernel itself under Triton's interpreter: test_fused_up.py and test_fused_up_fp8.py."""
import pytest

torch = pytest.importorskip("torch", reason="the prefill executor needs torch (pip install .[torch])")

import mlaplan.prefill as mp  # noqa: E402
from mlaplan.prefill import check, schedule  # noqa: E402
from mlaplan.prefill.executor import execute, prepare  # noqa: E402
from mlaplan.prefill.fused_up import why_reference  # noqa: E402

TOL = 1e-4


def inputs(cache, new, page, seed=0):
    import numpy as np

    return mp.random_inputs(cache, [0] + np.cumsum(new).tolist(), page, mp.model_dims("deepseek-v2-lite", heads=2),
                            torch.float32, "cpu", seed)


def test_a_policy_runs_in_mlaplans_fused_loop_by_its_suffix():
    """NAME+fused (and all+fused) name mlaplan's own loop in the executor; validate, which prices
    plans, refuses it; the suffix alone names nothing."""
    assert schedule.parse_engines("packed,packed+fused,Packed/TRTLLM+fused", loops=True) == [
        "packed", "packed+fused", "packed/trtllm+fused"]
    assert schedule.parse_engines("all+fused", loops=True) == [e + "+fused" for e in schedule.POLICIES]
    assert schedule.split_loop("max+fused") == ("max", "fused") and schedule.split_loop("max") == ("max", "unfused")
    with pytest.raises(ValueError, match=r"--policy packed\+fused: \+fused is the executor's own loop"):
        schedule.parse_engines("packed+fused")
    with pytest.raises(ValueError, match="name the policy whose plan the fused loop runs"):
        schedule.parse_engines("+fused", loops=True)
    with pytest.raises(ValueError, match="unknown policy"):
        schedule.parse_engines("nope+fused", loops=True)
    with pytest.raises(ValueError, match="up_projection: 'fast'"):
        prepare(inputs([10], [3], 16), schedule.build_schedule("packed", inputs([10], [3], 16).lengths,
                                                               mp.host_page_table(inputs([10], [3], 16)), 64, None, "cpu"),
                up_projection="fast")


def test_the_check_runs_the_fused_loop_where_its_kernel_runs():
    """On a GPU (or under Triton's interpreter) the check runs every variant in mlaplan's loop too; on
    the CPU that loop is the engines' up-projection bit for bit, so the check leaves it out."""
    dims = mp.model_dims("deepseek-v2-lite", heads=2)
    kernel_runs = why_reference(torch.empty(0, dims.latent, dtype=torch.bfloat16), dims) is None  # TRITON_INTERPRET=1
    want = check.fused(check.VARIANTS) if kernel_runs else check.VARIANTS
    assert check.loops(check.VARIANTS, torch.device("cpu"), dims) == want
    both = check.fused(check.TABLE_VARIANTS)
    assert len(both) == 2 * len(check.TABLE_VARIANTS) and all(e.endswith("+fused") for e, _ in both[len(check.TABLE_VARIANTS):])
    assert ("even-split/sglang+fused", {"sglang_path": "absorbed"}) not in check.fused(check.VARIANTS)


def test_fp8_weights_in_both_loops_match_their_one_shot():
    """kv_b_proj in e4m3 with 128 x 128 block scales (DeepSeek-V3's FP8 checkpoint): every policy, in the
    engines' loop and in mlaplan's, matches one-shot attention whose K and V are made alike; the bf16
    one-shot is another answer (the quantization moves the output), so the reference must follow."""
    dims = mp.model_dims("deepseek-v2-lite", heads=2)  # kv_lora 512: four 128-column groups a row
    x = mp.random_inputs([300, 0, 90], [0, 20, 45, 60], 16, dims, torch.float32, "cpu", 5)
    ref = mp.one_shot(x, weights="fp8")
    assert (ref[0] - mp.one_shot(x)[0]).abs().max().item() > 1e-3
    for engine in ("packed", "max", "even-split", "packed+fused", "max+fused", "packed/trtllm+fused"):
        policy, up = schedule.split_loop(engine)
        s = schedule.build_schedule(policy, x.lengths, mp.host_page_table(x), 64, None, "cpu")
        out, lse = execute(prepare(x, s, up_projection=up, weights="fp8"))
        assert (out - ref[0]).abs().max().item() <= TOL and (lse - ref[1]).abs().max().item() <= TOL, engine
    absorbed = schedule.build_schedule("even-split/sglang", x.lengths, mp.host_page_table(x), 64, None, "cpu",
                                       sglang_path="absorbed")
    with pytest.raises(ValueError, match="weights: fp8: SGLang's absorbed path"):
        prepare(x, absorbed, weights="fp8")
    with pytest.raises(ValueError, match="weights: 'fp4'"):
        prepare(x, absorbed, weights="fp4")
    with pytest.raises(ValueError, match="weights: 'fp4'"):
        mp.one_shot(x, weights="fp4")


def test_an_engines_fp8_loop_is_judged_against_its_own_block_gemm(monkeypatch, tmp_path):
    """Where the engines' block GEMM is cuBLAS's (on an H100), its sums within a block are at the tensor
    core's precision, so its K and V are not the exact product's: the check and the command judge the
    engines' loops against one-shot attention with K and V from that same GEMM (loop_references), and
    mlaplan's fused loop against the exact product. A GEMM 3% off stands in for cuBLAS here: judged against
    the exact product its loops fail; against their own GEMM they pass, as the fused loop does."""
    import json

    import mlaplan.prefill.executor as ex
    import mlaplan.prefill.fused_up as fu
    from mlaplan.prefill.__main__ import entry
    from mlaplan.prefill.reference import loop_references

    off = lambda x, w, s: (fu._dequantized_mm(*fu.quantize_activation(x), w, s, torch.float32) * 1.03).to(x.dtype)  # noqa: E731
    monkeypatch.setattr(fu, "linear_fp8", off)
    monkeypatch.setattr(ex, "linear_fp8", off)
    dims = mp.model_dims("deepseek-v2-lite", heads=2)
    x = mp.random_inputs([300, 0, 90], [0, 20, 45, 60], 16, dims, torch.float32, "cpu", 5)
    variants = [("packed", {}), ("even-split", {}), ("packed+fused", {})]
    scenario = tmp_path / "b.json"
    scenario.write_text(json.dumps({"page_size": 16, "buffer_token_size": 64, "max_chunks": 8,
                                    "cache_lengths": [300, 0, 90], "input_row_offsets": [0, 20, 45, 60]}))
    command = [str(scenario), "--device", "cpu", "--model", "deepseek-v2-lite", "--heads", "2", "--weights", "fp8", "--policy",
               "packed,even-split,packed+fused", "--reps", "1", "--warmup", "0", "--no-graph", "--format", "json",
               "-o", str(tmp_path / "out.json")]
    for backend, want in (("torch._scaled_mm", [True, True, True]), ("float32 dequantized", [False, False, True])):
        monkeypatch.setattr(fu, "block_gemm_backend", lambda device, *shape: backend)
        refs = loop_references(x, "fp8")
        assert (refs["unfused"] is refs["fused"]) == (backend == "float32 dequantized")
        judged = check.judge_batch(x, 64, TOL, variants, weights="fp8")
        assert [j.engine for j in judged] == ["packed", "even-split", "packed+fused"]
        assert [j.ok for j in judged] == want, (backend, judged)
    # The command's own check (its exit status) follows the same rule.
    for backend, code in (("torch._scaled_mm", 0), ("float32 dequantized", 1)):
        monkeypatch.setattr(fu, "block_gemm_backend", lambda device, *shape: backend)
        assert entry(command) == code, backend
