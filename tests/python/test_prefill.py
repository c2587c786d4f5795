"""The prefill executor on the CPU in float32: every engine's decomposition against one-shot
attention, the merge's handling of rows without keys, a planted off-by-one, and hostile inputs."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the prefill executor needs torch (pip install .[torch])")

import mlaplan  # noqa: E402
import mlaplan.prefill as mp  # noqa: E402
from mlaplan.prefill import check, schedule  # noqa: E402
from mlaplan.prefill.executor import execute, prepare  # noqa: E402
from mlaplan.prefill.merge import merge_into  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Subprocesses import the package this process imported, not python/ of the source tree (no module there).
PACKAGE_ENV = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(mlaplan.__file__)))}
DIMS = mp.model_dims("deepseek-v2-lite", heads=2)
TOL = 1e-4

# (cache_lengths, new tokens, page size, buffer): zero contexts, zero new tokens, a page straddling
# two chunks, page size 1 and 256, a buffer far past the batch.
BATCHES = [
    ([500, 0, 100], [9, 200, 20], 128, 512),
    ([300, 0, 90, 17], [20, 25, 0, 15], 16, 100),
    ([1, 2, 3, 0, 40], [1, 1, 3, 2, 5], 1, 7),
    ([700, 33], [64, 1], 256, 300),
    ([0, 0], [5, 7], 16, 64),
    ([1000], [12], 64, 100000),
]


def inputs(cache, new, page, seed=0):
    return mp.random_inputs(cache, [0] + np.cumsum(new).tolist(), page, DIMS, torch.float32, "cpu", seed)


@pytest.mark.parametrize("engine,paths", check.fused(check.VARIANTS),
                         ids=[f"{e}-{'-'.join(p.values()) or 'auto'}" for e, p in check.fused(check.VARIANTS)])
@pytest.mark.parametrize("batch", range(len(BATCHES)))
def test_every_engine_matches_one_shot(engine, paths, batch):
    cache, new, page, buffer = BATCHES[batch]
    x = inputs(cache, new, page, seed=batch)
    ref_out, ref_lse = mp.one_shot(x)
    policy, up_projection = schedule.split_loop(engine)  # NAME+fused: mlaplan's own loop
    try:
        s = schedule.build_schedule(policy, x.lengths, mp.host_page_table(x), buffer, None, "cpu", **paths)
    except ValueError as e:
        assert policy == "even-split" and "vLLM asserts" in str(e)  # the one policy that refuses small buffers
        return
    out, lse = execute(prepare(x, s, up_projection=up_projection))
    assert out.shape == ref_out.shape and lse.shape == ref_lse.shape
    assert (out - ref_out).abs().max().item() <= TOL
    assert (lse - ref_lse).abs().max().item() <= TOL


def test_iterations_are_the_policys_chunks():
    cache, new = [500, 0, 100], [9, 200, 20]
    x = inputs(cache, new, 128)
    table = mp.host_page_table(x)
    for engine, policy in [("packed", "packed"), ("even-split", "even-split/vllm"), ("max", "max")]:
        s = schedule.build_schedule(engine, x.lengths, table, 256, None, "cpu")
        want = mlaplan.plan_policy(cache, [0, 9, 209, 229], 128, 256, 8, policy).chunks_used
        assert s.iterations == want
        assert sum(not st.new_tokens for st in s.steps) == want
    # vLLM's even split: the new tokens, then every chunk for every prefill, merged from the second on.
    s = schedule.build_schedule("even-split", x.lengths, table, 256, None, "cpu")
    assert [st.label for st in s.steps][:2] == ["new tokens", "chunk 0"] and s.final_merge
    assert s.steps[1].take and all(not st.take for st in s.steps[2:])
    assert all(st.attends[0].call.n_q == 229 for st in s.steps[1:])
    # vLLM's packed plan: only the chunk's own requests attend it.
    s = schedule.build_schedule("packed", x.lengths, table, 256, None, "cpu")
    assert [st.attends[0].call.n_q for st in s.steps[1:]] == [9, 9, 20]


def test_sglang_and_trtllm_paths():
    big = inputs([9000], [16], 64)
    small = inputs([100, 0], [16, 4], 64)
    table = mp.host_page_table
    assert schedule.build_schedule("even-split/sglang", big.lengths, table(big), 4096, None, "cpu").path == "chunked"
    assert schedule.build_schedule("even-split/sglang", big.lengths, table(big), 1 << 17, None, "cpu").path == "one-shot"
    # A prefix below SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD (8,192) takes absorbed MLA, whatever the capacity.
    assert schedule.build_schedule("even-split/sglang", small.lengths, table(small), 1 << 17, None, "cpu").path == "absorbed"
    cpu = schedule.build_schedule("packed/trtllm", big.lengths, table(big), 4096, None, "cpu")
    assert cpu.path == "sm100" and cpu.iterations == 3 and cpu.steps[-1].new_tokens
    sm90 = schedule.build_schedule("packed/trtllm", big.lengths, table(big), 4096, None, "cpu", trtllm_path="sm90")
    assert sm90.path == "sm90" and len(sm90.steps) == 1 and sm90.steps[0].n_rows == 9016


def test_max_splits_the_position_mask():
    # One sequence of 10 cached and 6 new tokens, page 1, chunks of 12: chunk 0 holds positions 0..11,
    # so queries 10 and 11 see part of it (causal) and 12..15 all of it; chunk 1 holds 12..15.
    x = inputs([10], [6], 1)
    s = schedule.build_schedule("max", x.lengths, mp.host_page_table(x), 12, None, "cpu")
    full, causal = s.steps[0].attends
    assert not full.call.causal and (full.q0, full.call.n_q, full.call.n_k) == (2, 4, 12)
    assert causal.call.causal and (causal.q0, causal.call.n_q, causal.call.n_k) == (0, 2, 12)
    (only,) = s.steps[1].attends
    assert only.call.causal and (only.q0, only.call.n_q, only.call.n_k) == (2, 4, 4)


def test_merge_reads_plus_inf_as_no_keys():
    heads, dim = 2, 4
    o = torch.randn(3, heads, dim)
    lse = torch.randn(heads, 3)
    before_o, before_lse = o.clone(), lse.clone()
    part = torch.randn(3, heads, dim + 2)  # padded V, as FlashAttention-2 returns it
    part_lse = torch.full((heads, 3), float("inf"))  # what FlashAttention gives a sequence without keys
    merge_into(o, lse, part, part_lse, slice(0, 3), fused=False)
    assert torch.equal(o, before_o) and torch.equal(lse, before_lse)
    # A part without keys adds nothing even where its output is NaN (cuDNN's rows without keys).
    part_lse = torch.full((heads, 3), float("-inf"))
    merge_into(o, lse, torch.full((3, heads, dim), float("nan")), part_lse, slice(0, 3), fused=False)
    assert torch.equal(o, before_o) and torch.equal(lse, before_lse)
    # Both sides without keys stay (0, -inf), not NaN.
    o = torch.zeros(1, heads, dim)
    lse = torch.full((heads, 1), float("-inf"))
    merge_into(o, lse, torch.randn(1, heads, dim), torch.full((heads, 1), float("inf")), torch.tensor([0]), fused=False)
    assert torch.equal(o, torch.zeros(1, heads, dim)) and torch.isneginf(lse).all()
    # The merge of two halves is attention over the whole.
    q, k, v = torch.randn(1, heads, 1, 8), torch.randn(1, heads, 6, 8), torch.randn(1, heads, 6, dim)
    full = torch.softmax(q @ k.transpose(-1, -2), -1) @ v
    halves = []
    for sl in (slice(0, 2), slice(2, 6)):
        s = q @ k[:, :, sl].transpose(-1, -2)
        halves.append(((torch.softmax(s, -1) @ v[:, :, sl])[0].transpose(0, 1), torch.logsumexp(s, -1)[0]))
    o, lse = halves[0][0].clone(), halves[0][1].clone()
    merge_into(o, lse, halves[1][0], halves[1][1], slice(0, 1), fused=False)
    assert torch.allclose(o, full[0].transpose(0, 1), atol=1e-6)


def test_cpu_attention_gives_plus_inf_without_keys():
    from mlaplan.prefill.attention import make_call, varlen_attention
    call = make_call([2, 3], [0, 4], False, "cpu")
    out, lse = varlen_attention(torch.randn(5, 2, 8), torch.randn(4, 2, 8), torch.randn(4, 2, 8), call, 0.3)
    assert torch.isposinf(lse[:, :2]).all() and torch.isfinite(lse[:, 2:]).all()


def test_a_planted_off_by_one_fails_the_check():
    x = check.planted_batch(DIMS, torch.float32, "cpu", 1)
    with check.planted_off_by_one():
        results = check.check_batch(x, 8, TOL, check.TABLE_VARIANTS)
    assert len(results) == len(check.TABLE_VARIANTS)
    assert all(err is not None and err > 10 * TOL and not ok for _, _, err, _, ok in results)
    # And the same batch passes with the real tables.
    assert all(ok for *_, ok in check.check_batch(x, 8, TOL, check.TABLE_VARIANTS))


def test_random_batches_pass():
    rng = np.random.default_rng(7)
    for i in range(4):
        b = check.random_batch(rng, max_batch=6, max_context=900, max_total_context=2000, max_new=32, max_total_new=64)
        x = mp.random_inputs(b.cache, b.offsets, b.page_size, DIMS, torch.float32, "cpu", i)
        for engine, path, err, _, ok in check.check_batch(x, b.buffer_tokens, TOL):
            assert ok, (engine, path, err, b)


def test_public_api_on_callers_tensors():
    x = inputs([40, 0, 9], [5, 6, 7], 16)
    y = mp.inputs_from(x.q, x.kv_cache, x.page_table, [40, 0, 9], [0, 5, 11, 18], x.kv_b_proj, DIMS)
    out, lse = mp.prefill_attention(y, policy="even-split/sglang", buffer_tokens=32, sglang_path="chunked")
    ref_out, ref_lse = mp.one_shot(y)
    assert out.shape == (18, 2, 128) and lse.shape == (18, 2) and out.is_contiguous()
    assert torch.allclose(out, ref_out, atol=TOL) and torch.allclose(lse, ref_lse.t(), atol=TOL)


@pytest.mark.parametrize("change,message", [
    (lambda x: setattr(x, "q", x.q[:, :1]), r"q: expected shape \[18, 2, 192\]"),
    (lambda x: setattr(x, "page_table", x.page_table[:, :1]), "page_table: sequence 0 holds 45 tokens"),
    (lambda x: x.page_table.__setitem__((2, 0), 999), "page_table: sequence 2 names page 999"),
    (lambda x: setattr(x, "kv_b_proj", x.kv_b_proj[:, :100]), "kv_b_proj: expected shape"),
    (lambda x: setattr(x, "kv_cache", x.kv_cache.double()), "expected one floating dtype"),
    (lambda x: setattr(x, "page_table", x.page_table.float()), "page_table: expected an int32 or int64"),
])
def test_hostile_inputs_name_the_argument(change, message):
    x = inputs([40, 0, 9], [5, 6, 7], 16)
    change(x)
    with pytest.raises(mp.PrefillInputError, match=message):
        mp.prefill_attention(x, policy="packed", buffer_tokens=64)


def test_engines_by_name_as_the_cli_takes_them():
    """vllm, sglang, trtllm and max name the policy each engine plans with, as `mlaplan run --policy`
    reads them (the C++ planner's tables are the same under either name); engines and variants are the
    CLI's groups; +fused and repeats go as for any name."""
    import numpy as np

    import mlaplan
    from mlaplan.prefill import schedule

    four = ["packed", "even-split/sglang", "packed/trtllm", "max"]
    assert schedule.parse_engines("vllm,SGLang,trtllm,max") == four
    assert schedule.parse_engines("engines") == four
    assert schedule.parse_engines("variants") == list(schedule.ENGINES)
    assert schedule.parse_engines("vllm,packed,packed/vllm") == ["packed"]
    assert schedule.parse_engines("engines+fused,vllm", loops=True) == [e + "+fused" for e in four] + ["packed"]
    lengths, offsets = np.array([500, 0, 100, 3000], np.uint32), np.array([0, 9, 209, 229, 400], np.uint32)

    def tables(name):
        t = mlaplan.plan_policy(lengths, offsets, 128, 2048, 64, name).tables
        return [np.asarray(getattr(t, f)) for f in ("buffer_row_offsets", "cache_offsets", "buffer_lengths")]

    def same(a, b):
        return all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(tables(a), tables(b)))

    for name, policy in zip(("vllm", "sglang", "trtllm", "max"), four):
        assert same(name, policy), name
    # The batch tells the engines' variants apart, so the names above could not pass by chance.
    assert not same("sglang", "even-split") and not same("trtllm", "packed")
    with pytest.raises(ValueError, match="--policy vlm: unknown policy; choose all, engines, variants or a comma list "
                                         "of vllm, sglang, trtllm, max, packed,"):
        schedule.parse_engines("vlm")


def test_hostile_lengths_and_policy():
    x = inputs([40, 0, 9], [5, 6, 7], 16)
    with pytest.raises(ValueError, match="--policy bogus: unknown policy"):
        mp.prefill_attention(x, policy="bogus", buffer_tokens=64)
    with pytest.raises(mp.PrefillInputError, match="input_row_offsets: expected batch_size \\+ 1 = 4"):
        mp.inputs_from(x.q, x.kv_cache, x.page_table, [40, 0, 9], [0, 5, 11], x.kv_b_proj, DIMS)
    with pytest.raises(mp.PrefillInputError, match="input_row_offsets: must not decrease"):
        mp.inputs_from(x.q, x.kv_cache, x.page_table, [40, 0, 9], [0, 5, 4, 18], x.kv_b_proj, DIMS)
    with pytest.raises(mp.PrefillInputError, match="buffer_tokens: expected at least 1"):
        mp.prefill_attention(x, policy="packed", buffer_tokens=0)
    with pytest.raises(ValueError, match="--tp 3: DeepSeek-V3 has 128 attention heads"):
        mp.model_dims("deepseek-v3", tp=3)
    with pytest.raises(ValueError, match="--model bogus: unknown model"):
        mp.model_dims("bogus")


def cli(*args, cwd=None):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "mlaplan.prefill", *args], capture_output=True, text=True, cwd=cwd, env=env)


def test_command_json_on_the_worked_example(tmp_path):
    out = tmp_path / "runs.json"
    r = cli(os.path.join(ROOT, "scenarios", "worked-example.json"), "--model", "deepseek-v2-lite", "--heads", "2",
            "--device", "cpu", "--reps", "1", "--warmup", "0", "--buffer-tokens", "256,512", "--format", "json",
            "-o", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    runs = doc["batches"][0]["runs"]
    assert [(x["buffer_tokens"], x["policy"]) for x in runs] == [(b, e) for b in (256, 512) for e in mp.POLICIES]
    for x in runs:
        assert x["refused"] or (x["ok"] and x["max_abs_error"] <= 1e-4 and x["eager_ms"] > 0), x
        if not x["refused"]:
            assert set(x["parts_ms"]) == set(mp.PARTS) and x["parts_ms"]["attention"] > 0
    assert doc["device"].startswith("CPU") and doc["dtype"] == "float32"


def test_command_text_names_the_fastest():
    r = cli(os.path.join(ROOT, "scenarios", "worked-example.json"), "--model", "deepseek-v2-lite", "--heads", "2",
            "--device", "cpu", "--reps", "1", "--warmup", "0", "--policy", "packed,max")
    assert r.returncode == 0, r.stderr
    assert "fastest: " in r.stdout and "max|err|" in r.stdout and "FAIL" not in r.stdout


@pytest.mark.parametrize("args,message", [
    (["missing.json"], "missing.json"),
    (["{s}", "--policy", "bogus"], "--policy bogus: unknown policy"),
    (["{s}", "--tp", "3"], "--tp 3: DeepSeek-V3 has 128 attention heads"),
    (["{s}", "--tp", "0"], "--tp: "),
    (["{s}", "--model", "nope"], "--model nope: unknown model"),
    (["{s}", "--buffer-tokens", "0"], "--buffer-tokens"),
    (["{s}", "--buffer-tokens", "8k"], "--buffer-tokens"),
    (["{s}", "--reps", "-1"], "--reps"),
    (["{s}", "--tolerance", "nan"], "--tolerance"),
    (["{s}", "--device", "tpu"], "--device tpu"),
    (["{s}", "--sglang-path", "fast"], "--sglang-path"),
    (["{s}", "-o", "/nonexistent/folder/out.json"], "/nonexistent/folder/out.json: cannot write the output file; check that its folder exists"),
    (["{s}", "--trace", "t.json"], "--trace: trace one run"),
    (["{s}", "--bogus"], "unrecognized arguments: --bogus"),
    (["{s}", "--attention", "fa3"], "--attention fa3: FlashAttention-3 runs on SM90 GPUs"),
    ([], "the following arguments are required"),
])
def test_command_bad_input_is_one_line_exit_2(tmp_path, monkeypatch, capsys, args, message):
    # In this process (the command's entry point, as `python -m` calls it), for speed.
    from mlaplan.prefill.__main__ import entry
    scenario = os.path.join(ROOT, "scenarios", "worked-example.json")
    args = [a.replace("{s}", scenario) for a in args]
    monkeypatch.chdir(tmp_path)
    code = entry(args + ([] if "--device" in args else ["--device", "cpu"]))
    captured = capsys.readouterr()
    assert code == 2, (code, captured.err)
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlaplan: error: ") and message in lines[0], captured.err
    assert captured.out == "" and list(tmp_path.iterdir()) == []  # a failed command leaves nothing behind


def test_command_bad_input_from_the_shell():
    r = cli("missing.json", "--device", "cpu")
    assert r.returncode == 2 and r.stderr.startswith("mlaplan: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "missing.json" in r.stderr and r.stdout == ""


def test_check_bad_attention_is_one_line_exit_2():
    r = subprocess.run([sys.executable, "-m", "mlaplan.prefill.check", "--device", "cpu", "--small", "--attention", "fa3"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("mlaplan: error: --attention fa3: ") and r.stderr.count("\n") == 1, r.stderr
    assert r.stdout == ""


def test_command_scenario_errors_name_the_field(tmp_path, capsys):
    from mlaplan.prefill.__main__ import entry
    bad = tmp_path / "bad.json"
    bad.write_text('{"page_size": 0, "buffer_token_size": 8, "max_chunks": 1, "cache_lengths": [1], "input_row_offsets": [0, 1]}')
    assert entry([str(bad), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.json" in err and "page_size" in err


def test_latent_attention_math_matches_the_cpu_kernel():
    # The absorbed path's CUDA form (plain float32 math), against ATen's CPU flash kernel.
    from mlaplan.prefill.attention import latent_attention, latent_attention_math, make_call
    c = make_call([3, 0, 5], [7, 2, 5], True, "cpu")
    q, latent = torch.randn(8, 4, 576), torch.randn(14, 576)
    out, lse = latent_attention(q, latent, c, 0.07, 512)
    out2, lse2 = latent_attention_math(q, latent, c, 0.07, 512)
    assert torch.allclose(out, out2, atol=1e-5) and torch.allclose(lse, lse2, atol=1e-5)


def test_causal_alignment_is_known_per_call():
    # cuDNN aligns causal masks top-left: it serves a causal call only where that is bottom-right too.
    from mlaplan.prefill.attention import make_call
    assert make_call([2, 3], [2, 3], True, "cpu").aligned
    assert not make_call([2, 3], [4, 3], True, "cpu").aligned
    assert make_call([2, 3], [4, 9], False, "cpu").aligned


def test_settling_runs_the_gpu_only():
    # On the CPU there is no clock to settle: exactly warm-up + timed runs, however long settle_ms is.
    from mlaplan.prefill import timing
    calls = []
    samples = timing.time_eager(lambda: calls.append(1), cuda=False, reps=3, warmup=2, settle_ms=10_000)
    assert len(samples) == 3 and len(calls) == 5


# --- merges per query, the merge bound and the fp32 running state ("Numerics of many merges")

def _counted_merges(x, s):
    """Each query row's merges as execute really runs them: merge_into wrapped to count the rows it writes."""
    from mlaplan.prefill import executor

    counts = np.zeros(x.lengths.new_tokens, dtype=np.int64)
    real = executor.merge_into

    def counting(o, lse, part_o, part_lse, rows, fused=None):
        idx = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows.cpu().numpy()
        np.add.at(counts, idx, 1)
        return real(o, lse, part_o, part_lse, rows, fused)

    executor.merge_into = counting
    try:
        execute(prepare(x, s))
    finally:
        executor.merge_into = real
    return counts


@pytest.mark.parametrize("engine,paths", check.VARIANTS, ids=[f"{e}-{'-'.join(p.values()) or 'auto'}" for e, p in check.VARIANTS])
def test_merges_per_query_are_the_merges_execute_runs(engine, paths):
    for batch, (cache, new, page, buffer) in enumerate(BATCHES):
        x = inputs(cache, new, page, seed=batch)
        try:
            s = schedule.build_schedule(engine, x.lengths, mp.host_page_table(x), buffer, None, "cpu", **paths)
        except ValueError:
            continue
        counted = _counted_merges(x, s)
        assert np.array_equal(s.merges_per_query(x.lengths.new_tokens), counted), (engine, paths, batch)


def test_merge_stats_are_max_and_nearest_rank_p99():
    assert schedule.merge_stats([]) == (0, 0)
    assert schedule.merge_stats([3] * 99 + [50]) == (50, 3)      # rank ceil(0.99 * 100) = 99
    assert schedule.merge_stats([3] * 98 + [40, 50]) == (50, 40)


def test_merges_per_query_equal_the_cli_count_on_random_batches():
    """The C++ count (run/sweep's column, from the plan tables) equals the executor's schedule's, row
    for row, for every engine's loop on random batches, small buffers included."""
    rng = np.random.default_rng(11)
    engines = [("max", "max", {}), ("packed", "packed", {}), ("even-split", "even-split/vllm", {}),
               ("even-split/sglang", "even-split/sglang", {"sglang_path": "chunked"}),
               ("packed/trtllm", "packed/trtllm", {"trtllm_path": "sm100"})]
    compared = 0
    for i in range(40):
        b = (check.small_buffer_batch(rng, 400, max_batch=6, max_context=600, max_total_context=1500, max_new=20,
                                      max_total_new=60) if i % 2 else
             check.random_batch(rng, max_batch=6, max_context=900, max_total_context=2000, max_new=32, max_total_new=64))
        lengths = mp.inputs.Lengths(np.array(b.cache), np.array(b.new), np.array(b.offsets), b.page_size)
        table = np.zeros((len(b.cache), max(1, max(-(-(c + n) // b.page_size) for c, n in zip(b.cache, b.new)))), dtype=np.int64)
        for engine, policy, paths in engines:
            try:
                s = schedule.build_schedule(engine, lengths, table, b.buffer_tokens, None, "cpu", **paths)
            except ValueError:
                continue
            mine = s.merges_per_query(lengths.new_tokens)
            values, rows = np.unique(mine, return_counts=True)
            cli = mlaplan.merges_per_query(b.cache, b.offsets, b.page_size, b.buffer_tokens, policy)
            assert cli["histogram"] == [(int(v), int(r)) for v, r in zip(values, rows)], (engine, b)
            assert (cli["max"], cli["p99"]) == schedule.merge_stats(mine)
            compared += 1
    assert compared > 100


def test_fp32_state_keeps_many_merges_within_the_flat_tolerance():
    """One key per chunk, 6,000 merges, bf16 inputs on the CPU: the bf16 running state (the engines')
    drifts past 1e-2 (1 + |ref|), float32 state stays within it; both within the merge bound."""
    from mlaplan.prefill.measure import errors, merge_tolerance

    dims = mp.model_dims("deepseek-v3", heads=1)
    x = mp.random_inputs([6000], [0, 8], 1, dims, torch.bfloat16, "cpu", 1)
    ref = mp.one_shot(x)
    s = schedule.build_schedule("packed/trtllm", x.lengths, mp.host_page_table(x), 1, None, "cpu")
    merges = s.merges_per_query(x.lengths.new_tokens)
    assert merges.min() == 6001  # every chunk and the new tokens' step
    got = {}
    for state in (None, "fp32"):
        out, lse = execute(prepare(x, s, state=state))
        assert out.dtype == torch.bfloat16  # the result in q's dtype either way
        err, _, flat_ok = errors(out, lse, *ref, 1e-2)
        bound_ok = errors(out, lse, *ref, merge_tolerance(1e-2, merges, prepare(x, s, state=state).state, "cpu"))[2]
        got[state] = (err, flat_ok, bound_ok)
    assert not got[None][1] and got[None][2], got
    assert got["fp32"][1] and got["fp32"][0] < 1e-3, got


def test_bf16_state_on_fp32_inputs_rounds_at_every_merge():
    x = inputs([300, 40], [6, 5], 1)
    s = schedule.build_schedule("even-split/sglang", x.lengths, mp.host_page_table(x), 8, None, "cpu", sglang_path="chunked")
    ref_out, _ = mp.one_shot(x)
    exact = (execute(prepare(x, s))[0] - ref_out).abs().max().item()
    rounded = (execute(prepare(x, s, state="bf16"))[0] - ref_out).abs().max().item()
    assert exact <= TOL < rounded
    with pytest.raises(ValueError, match="state"):
        mp.prefill_attention(x, policy="packed", buffer_tokens=64, state="fp8")


def test_the_check_draws_small_buffers_and_still_catches_the_planted_defect():
    rng = np.random.default_rng(3)
    for _ in range(20):
        b = check.small_buffer_batch(rng, 500, max_batch=8, max_context=2000, max_total_context=6000, max_new=64,
                                     max_total_new=128)
        assert check.SMALL_BUFFERS[0] <= b.buffer_tokens <= check.SMALL_BUFFERS[1] and b.page_size <= b.buffer_tokens
        assert check.estimated_steps(b.cache, b.new, b.page_size, b.buffer_tokens) <= 500 or sum(b.cache) == 0
    # The planted off-by-one, in bf16 and judged by the merge bound, fails every engine that reads tables.
    x = check.planted_batch(DIMS, torch.bfloat16, "cpu", 1)
    with check.planted_off_by_one():
        judged = check.judge_batch(x, 8, 1e-2, check.TABLE_VARIANTS)
    assert all(j.err is not None and not j.ok and j.merges_max <= 8 for j in judged), judged


def test_check_reports_merge_bound_runs():
    r = subprocess.run([sys.executable, "-m", "mlaplan.prefill.check", "--device", "cpu", "--small", "--batches", "8",
                        "--tp", "64", "--dtype", "bf16"], capture_output=True, text=True, cwd="/tmp",
                       env=PACKAGE_ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "runs at small buffers (16-384 rows" in r.stdout and "runs judged by it" in r.stdout
    assert f"caught in {len(check.TABLE_VARIANTS)} of {len(check.TABLE_VARIANTS)} runs" in r.stdout
    # The verdict in one last line, every line within 120 columns.
    lines = r.stdout.splitlines()
    assert re.fullmatch(rf"check: PASS: (\d+) of \1 runs within the merge bound of one-shot attention; the planted "
                        rf"off-by-one caught in {len(check.TABLE_VARIANTS)} of {len(check.TABLE_VARIANTS)}", lines[-1]), lines[-1]
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)


def test_report_shows_merges_per_query_and_the_state():
    path = os.path.join(ROOT, "scenarios", "worked-example.json")
    r = subprocess.run([sys.executable, "-m", "mlaplan.prefill", path, "--model", "deepseek-v2-lite", "--heads", "2",
                        "--device", "cpu", "--reps", "0", "--buffer-tokens", "64", "--policy", "packed/trtllm",
                        "--state", "bf16", "--format", "json"], capture_output=True, text=True, cwd="/tmp",
                       env=PACKAGE_ENV)
    assert r.returncode == 1, r.stderr  # bf16 state on fp32 inputs misses the fp32 tolerance
    doc = json.loads(r.stdout)
    assert doc["state"] == "bfloat16"
    run = doc["batches"][0]["runs"][0]
    assert run["merges_per_query_max"] == run["iterations"] + 1 and run["merges_per_query_p99"] == run["merges_per_query_max"]
    assert run["state"] == "bfloat16"


def test_text_report_where_every_run_is_refused():
    # packed refuses a buffer below vLLM's split alignment; a table of refusals alone still prints.
    path = os.path.join(ROOT, "scenarios", "worked-example.json")
    r = subprocess.run([sys.executable, "-m", "mlaplan.prefill", path, "--model", "deepseek-v2-lite", "--heads", "2",
                        "--device", "cpu", "--reps", "0", "--buffer-tokens", "64", "--policy", "packed"],
                       capture_output=True, text=True, cwd="/tmp", env=PACKAGE_ENV)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "refused: packed: buffer_token_size 64 is below the split alignment" in r.stdout

