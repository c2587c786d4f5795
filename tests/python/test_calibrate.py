"""The cost model's Python side: its terms are the executor's own counts, the fit recovers known
coefficients and names the terms it cannot pin down, the CLIs refuse bad input in one line, the
validation's figures, and sweep(cost=...)."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import mlaplan

pytest.importorskip("scipy", reason="the calibration fits with scipy (pip install .[calibrate])")

from mlaplan.calibrate import fit  # noqa: E402
from mlaplan.calibrate.grid import features, make_grid  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "tests", "data", "cost", "deepseek-v3-tp8-example.json")
TRUE = {"per_batch_us": 40, "per_fixed_step_us": 20, "per_iteration_us": 100, "per_row_us": 0.02, "per_query_us": 0.01,
        "per_merged_query_us": 0.005, "per_mpair_us": 50, "per_idle_mpair_us": 40, "per_block_us": 0.05,
        "per_empty_block_us": 0.003, "per_sequence_us": 0.5,
        "per_causal_block_us": 0,  # the grid scheduler's fit does not offer it (fit.SCHEDULER_TERMS)
        "per_small_gemm_row_us": 0}  # every GEMM alike: the fit must not take the term up


def synthetic(points, noise, seed=0, heads=16, timing="graph_ms", **grid):
    """Measurements made up from TRUE: each point's terms priced, times (1 + noise x N(0, 1))."""
    rng = np.random.default_rng(seed)
    out = []
    for p in make_grid(points, seed + 1, heads, **grid):
        f = features(p, heads)
        d = p.as_dict()
        d[timing] = sum(TRUE[k] * v for k, v in f.items()) * (1 + noise * rng.standard_normal()) / 1e3
        out.append(d)
    return out


def test_terms_are_named_in_file_order():
    names = [n for n, _ in mlaplan.cost_terms()]
    assert names[:3] == ["per_batch_us", "per_fixed_step_us", "per_iteration_us"]
    assert len(names) == len(set(names)) == 13 and all(n.endswith("_us") for n in names)


def test_features_by_hand():
    # vLLM packed, 1,000 cached + 100 new, buffer 400: tests/cost_test.cpp works the same case out.
    f = mlaplan.cost_features([1000], [0, 100], 1, 400, "packed", heads=16)
    assert f["per_iteration_us"] == 3 and f["per_row_us"] == 1100 and f["per_query_us"] == 400
    assert f["per_merged_query_us"] == 300 and f["per_fixed_step_us"] == 2
    assert f["per_mpair_us"] == pytest.approx(128 * 1100 / 1e6)  # whole tiles of 128 rows
    unbounded = mlaplan.cost_features([1000], [0, 100], 1, 400, "packed", heads=16, unbounded=True)
    assert unbounded["per_iteration_us"] == 1 and unbounded["per_merged_query_us"] == 100


def test_features_refuse_what_the_policy_refuses():
    with pytest.raises(ValueError, match="even-split/vllm"):
        mlaplan.cost_features([100, 100, 100], [0, 1, 2, 3], 64, 64, "even-split", heads=16)
    with pytest.raises(mlaplan.InfeasibleBatch):
        mlaplan.cost_features([1000], [0, 10], 1, 100, "max", heads=16, max_chunks=2)


def _expect_schedule_counts(f, s, n, where):
    """The C++ terms `f` are the counts of the executor's schedule `s`: iterations, rows, attention
    queries, merged queries, the attention grids' blocks and the idle pair-times of their dispatch."""
    assert f["per_iteration_us"] == s.iterations, where
    assert f["per_row_us"] == sum(st.n_rows for st in s.steps), where
    assert f["per_query_us"] == sum(a.call.n_q for st in s.steps for a in st.attends), where
    merged = sum(a.call.n_q for st in s.steps if not st.take for a in st.attends) + (n.new_tokens if s.final_merge else 0)
    assert f["per_merged_query_us"] == merged, where
    # FlashAttention-2's varlen grid: ceil(most queries / 128) tiles for every sequence of the call.
    blocks = empty = working = causal = 0
    for a in (a for st in s.steps for a in st.attends):
        q, k = np.diff(a.call.cu_q), np.diff(a.call.cu_k)
        tiles = (q + 127) // 128
        blocks += 16 * int(np.sum(tiles * (k > 0)))
        causal += 16 * int(np.sum(tiles * (k > 0))) if a.call.causal else 0
        working += int(np.sum((q > 0) & (k > 0)))
        empty += 16 * (len(q) * int(tiles.max(initial=0)) - int(tiles.sum()))
    assert f["per_block_us"] == blocks, where
    assert f["per_empty_block_us"] == empty, where
    assert f["per_sequence_us"] == working, where
    assert f["per_causal_block_us"] == causal, where  # the causal launches' (tile, head) blocks
    idle = sum(_dispatch_idle(a.call, 16, 132) for st in s.steps for a in st.attends)
    assert f["per_idle_mpair_us"] == pytest.approx(idle, rel=1e-9, abs=1e-9), where


def _schedule(p, n, **paths):
    from mlaplan.prefill.schedule import build_schedule
    import torch

    pages = max((c + k + p.page_size - 1) // p.page_size for c, k in zip(p.cache, p.new))
    return build_schedule(p.policy, n, np.zeros((len(p.cache), max(pages, 1)), dtype=np.int64), p.buffer_tokens, None,
                          torch.device("cpu"), **paths)


def _terms(p, sm=0):
    return mlaplan.cost_features(np.asarray(p.cache, dtype=np.uint32), np.asarray(p.offsets, dtype=np.uint32), p.page_size,
                                 p.buffer_tokens, p.policy, 16, sm=sm)


def test_features_are_the_executors_counts():
    """Over random batches, every engine: the iterations, rows, attention queries, merged queries and
    the attention grids' blocks the C++ terms count are those of the schedule the executor runs (its
    chunked paths)."""
    pytest.importorskip("torch", reason="the executor needs torch")
    from mlaplan.prefill.inputs import lengths_of

    from mlaplan.prefill.schedule import POLICIES

    for p in make_grid(150, 7, 16, policies=POLICIES):  # mlaplan's waves too
        n = lengths_of(p.cache, p.offsets, p.page_size)
        s = _schedule(p, n, sglang_path="chunked", trtllm_path="sm100")
        _expect_schedule_counts(_terms(p), s, n, f"{p.policy} B={len(p.cache)} buffer {p.buffer_tokens}")


# The executor's paths, by the name the C++ dispatch gives them ("no context" runs the new tokens'
# step, whatever path the engine's rule names: every path's terms are then the same).
SCHEDULE_PATHS = {"chunked": "chunked", "sm100": "chunked", "sm90": "one-shot", "one-shot": "one-shot",
                  "absorbed": "absorbed"}


def test_dispatched_features_are_the_executors_counts():
    """On the paths each engine dispatches to, as the executor picks them (build_schedule with
    sglang_path="auto", its one-shot limit the buffer, and trtllm_path "sm90" or "sm100"):
    cost_features(..., sm=90 / 100) counts the schedule's own iterations, rows, queries, merges,
    blocks and idle pair-times, under every engine, on random batches and on batches drawn to reach
    SGLang's absorbed and one-shot paths and its threshold's edge; its "path" is the schedule's."""
    pytest.importorskip("torch", reason="the executor needs torch")
    from mlaplan.calibrate.grid import Point
    from mlaplan.prefill.inputs import lengths_of
    from mlaplan.prefill.schedule import POLICIES as ENGINES  # the engines and mlaplan's waves

    rng = np.random.default_rng(11)
    points = list(make_grid(120, 17, 16, policies=ENGINES))
    for _ in range(40):  # small prefixes (absorbed), prefixes at the threshold, buffers around the batch
        b = int(rng.integers(1, 6))
        cache = [int(v) for v in rng.integers(0, 3000, b)]
        if rng.random() < 0.4:
            cache[0] = max(0, 8192 - sum(cache[1:]) - int(rng.integers(0, 2)))  # a prefix of 8191 or 8192
        new = [int(v) for v in rng.integers(0, 600, b)]
        total = sum(cache) + sum(new)
        buffer = max(64, total + int(rng.integers(-1, 2)) if rng.random() < 0.5 else int(rng.integers(64, 20000)))
        points.append(Point(cache, new, int(rng.choice([1, 16, 64])), buffer, str(rng.choice(ENGINES))))
    seen = set()
    for p in points:
        n = lengths_of(p.cache, p.offsets, p.page_size)
        for trtllm_path, sm in (("sm90", 90), ("sm100", 100)):
            where = f"{p.policy} sm {sm} B={len(p.cache)} cache {sum(p.cache)} new {sum(p.new)} buffer {p.buffer_tokens}"
            try:
                s = _schedule(p, n, sglang_path="auto", trtllm_path=trtllm_path)
            except ValueError:  # the engine's loop refuses the batch: so do the terms
                with pytest.raises(ValueError):
                    _terms(p, sm)
                continue
            f = _terms(p, sm)
            path = f.pop("path")
            if s.path != "no context":
                assert path == SCHEDULE_PATHS[s.path], where
                assert mlaplan.engine_path(p.cache, p.offsets, p.page_size, p.buffer_tokens, p.policy, sm)[0] == path, where
            seen.add((p.policy, path))
            _expect_schedule_counts(f, s, n, where)
    for want in (("even-split/sglang", "absorbed"), ("even-split/sglang", "one-shot"), ("even-split/sglang", "chunked"),
                 ("packed/trtllm", "one-shot"), ("packed/trtllm", "chunked")):
        assert want in seen, want


def test_features_without_a_gpu_are_the_loops():
    """sm 0 (the default) names no GPU: every policy's loop, and no "path" key, as before dispatch."""
    f = mlaplan.cost_features([9000], [0, 100], 1, 400, "packed/trtllm", heads=16)
    assert "path" not in f and f["per_iteration_us"] == 23
    one_shot = mlaplan.cost_features([9000], [0, 100], 1, 400, "packed/trtllm", heads=16, sm=90)
    assert one_shot["path"] == "one-shot" and one_shot["per_iteration_us"] == 0 and one_shot["per_row_us"] == 9100
    assert mlaplan.cost_features([9000], [0, 100], 1, 400, "packed/trtllm", heads=16, sm=100)["path"] == "chunked"
    path, why = mlaplan.engine_path([100], [0, 10], 1, 400, "even-split/sglang", 90)
    assert path == "absorbed" and "SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD (8192)" in why
    # A batch SGLang's loop refuses (400 rows for 500 sequences) runs absorbed MLA: no refusal.
    cache, offsets = [10] * 500, list(range(501))
    with pytest.raises(ValueError, match="even-split/sglang"):
        mlaplan.cost_features(cache, offsets, 1, 400, "even-split/sglang", heads=16)
    assert mlaplan.cost_features(cache, offsets, 1, 400, "even-split/sglang", heads=16, sm=90)["path"] == "absorbed"


def _dispatch_idle(call, heads, slots, tile=128):
    """The idle pair-times (millions) of one launch, restated from docs/cost-model.md on the
    executor's own grid: one head's computing blocks in grid order (sequence by sequence, tile by
    tile), each walking the keys up to its last row's diagonal (all of them unmasked)."""
    q, k = np.diff(call.cu_q_host), np.diff(call.cu_k_host)
    d = []
    for qi, ki in zip(q, k):
        if qi == 0 or ki == 0:
            continue
        for i in range((qi + tile - 1) // tile):
            d.append(tile * (min(ki, ki - qi + (i + 1) * tile) if call.causal else ki))
    if not d:
        return 0.0
    d = np.asarray(d, dtype=np.float64)
    work, n = d.sum(), len(d) * heads
    if n <= slots:
        span = d.max()
    elif np.all(d == d[0]):
        span = math.ceil(n / slots) * d[0]
    else:  # the last head's block j starts as the work before it drains, less the mean residual
        ahead = (heads - 1) * work + np.concatenate([[0.0], np.cumsum(d)[:-1]])
        span = max(d.max(), heads * work / slots, float(np.max(ahead / slots + d)) - (d * d).sum() / work / 2)
    return max(0.0, span * slots / heads - work) * 1e-6


def test_fit_recovers_known_coefficients():
    recs = synthetic(160, noise=0.001)
    r = fit.fit_records(recs, 16, 132, geometries=[(128, 1)])
    for name, want in TRUE.items():
        assert r.coefficients[name] == pytest.approx(want, rel=0.05), name
    assert r.median_abs_error < 0.01 and r.cv_median_abs_error < 0.01
    assert not r.not_identifiable


def test_the_sectioned_fit_recovers_the_causal_blocks_cost():
    # FlashAttention-3's scheduler with its L2 sections offers the causal blocks' term (the grid's does not):
    # made-up times with 0.03 us a causal block, the other terms as TRUE (less the empty blocks, which the
    # sorted kernels make none of), priced and fitted under it.
    true = dict(TRUE, per_causal_block_us=0.03, per_empty_block_us=0)
    recs = []
    for p in make_grid(160, 7, 8):
        d = p.as_dict()
        d["graph_ms"] = sum(true[k] * v for k, v in features(p, 8, scheduler="sectioned").items()) / 1e3
        recs.append(d)
    r = fit.fit_records(recs, 8, 132, geometries=[(128, 1)], scheduler="sectioned")
    assert r.coefficients["per_causal_block_us"] == pytest.approx(0.03, rel=0.05)
    assert r.median_abs_error < 1e-6
    assert fit.fit_records(recs, 8, 132, geometries=[(128, 1)], scheduler="sorted").coefficients["per_causal_block_us"] == 0


def test_the_fit_takes_the_small_gemm_term_only_where_the_times_have_it():
    # Made-up times where every up-projection of at most 65,536 rows costs 0.01 us a row more (as on an H100
    # at TP 1), the rest as TRUE: the fit finds the limit among its candidates and the cost, and writes both
    # into the file; the same points timed without it leave the term unused (0, no limit), as TRUE's fit does.
    true = dict(TRUE, per_small_gemm_row_us=0.01)
    grid = make_grid(200, 11, 16, max_buffer=1 << 18)
    with_it, without = [], []
    for p in grid:
        d = p.as_dict()
        d["graph_ms"] = sum(true[k] * v for k, v in features(p, 16, small_gemm_rows=65536).items()) / 1e3
        with_it.append(d)
        d = p.as_dict()
        d["graph_ms"] = sum(TRUE[k] * v for k, v in features(p, 16).items()) / 1e3
        without.append(d)
    r = fit.fit_records(with_it, 16, 132, geometries=[(128, 1)])
    assert r.small_gemm_rows == 65536
    assert r.coefficients["per_small_gemm_row_us"] == pytest.approx(0.01, rel=0.05)
    assert r.coefficients["per_row_us"] == pytest.approx(TRUE["per_row_us"], rel=0.05)
    assert r.median_abs_error < 1e-6
    tried = r.summary()["small_gemm"]["tried"]
    assert tried["65536"]["cross_validated_rms"] < tried["32768"]["cross_validated_rms"]
    plain = fit.fit_records(without, 16, 132, geometries=[(128, 1)])
    assert plain.small_gemm_rows == 0 and plain.coefficients["per_small_gemm_row_us"] == 0
    assert "per_small_gemm_row_us" not in plain.not_identifiable  # an unused term is no news


def test_workload_weight_pulls_the_fit_toward_the_workload_points():
    # Grid points made with TRUE, workload points with a per-iteration cost three times higher: the
    # terms cannot fit both, and the heavier the workload points weigh, the closer they are fitted.
    grid = synthetic(120, 0.0, seed=7)
    shifted = dict(TRUE, per_iteration_us=3 * TRUE["per_iteration_us"])
    work = []
    for p in make_grid(40, 9, 16):
        f = features(p, 16)
        work.append(dict(p.as_dict(), workload="w", graph_ms=sum(shifted[k] * v for k, v in f.items()) / 1e3))
    errors = []
    for weight in (1.0, 4.0, 16.0):
        r = fit.fit_records(grid + work, 16, 132, geometries=[(128, 1)], workload_weight=weight)
        assert r.workload_weight == weight and r.summary()["workload_weight"] == weight
        errors.append(float(np.median(np.abs(r.errors[len(grid):]))))
    assert errors[0] > errors[1] > errors[2]
    # Weight 1 is the unweighted fit.
    plain = fit.fit_records(grid + work, 16, 132, geometries=[(128, 1)])
    assert plain.coefficients == fit.fit_records(grid + work, 16, 132, geometries=[(128, 1)], workload_weight=1.0).coefficients
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="workload weight"):
            fit.fit_records(grid + work, 16, 132, geometries=[(128, 1)], workload_weight=bad)


def test_fit_picks_the_geometry_that_made_the_times():
    rng = np.random.default_rng(3)
    recs = []
    for p in make_grid(120, 4, 16):
        f = features(p, 16, tile_queries=64, blocks_per_sm=2)
        d = p.as_dict()
        d["graph_ms"] = sum(TRUE[k] * v for k, v in f.items()) * (1 + 0.002 * rng.standard_normal()) / 1e3
        recs.append(d)
    r = fit.fit_records(recs, 16, 132)
    assert (r.tile_queries, r.blocks_per_sm) == (64, 2)


def test_identifiability_names_what_the_grid_cannot_tell_apart():
    # Packed alone: every batch with context has 2 fixed steps, so that term is twice the batch term.
    recs = [r for r in synthetic(200, 0.0, seed=5, policies=("packed",)) if sum(r["cache"]) > 0]
    X, names = fit.design(recs, 16, 132, 128, 1)
    y = np.asarray([r["graph_ms"] * 1e3 for r in recs])
    report = fit.identifiability(X, y, names)
    assert "not identifiable" in report.get("per_fixed_step_us", "") or "not identifiable" in report.get("per_batch_us", "")
    # A term no point has is never exercised.
    X[:, names.index("per_idle_mpair_us")] = 0
    assert fit.identifiability(X, y, names)["per_idle_mpair_us"].startswith("never exercised")


def run_module(*args):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_refit_writes_a_cost_file(tmp_path):
    meas = tmp_path / "m.json"
    doc = {"format": "mlaplan-calibration-measurements", "model": "deepseek-v3", "tp": 8, "heads": 16, "dtype": "bf16",
           "attention": "flash", "merge": "fused (Triton)", "gpu": "Synthetic GPU", "compute_capability": "9.0", "sms": 132,
           "date": "2026-12-01",
           "records": synthetic(100, 0.01)}
    meas.write_text(json.dumps(doc))
    out = tmp_path / "cost.json"
    r = run_module("mlaplan.calibrate", "--refit", str(meas), "-o", str(out), "--commit", "abc1234")
    assert r.returncode == 0, r.stderr
    cost = json.loads(out.read_text())
    assert cost["format"] == "mlaplan-cost-model" and cost["model"] == "deepseek-v3" and cost["tp"] == 8
    assert set(cost["coefficients"]) == set(TRUE) and all(v >= 0 for v in cost["coefficients"].values())
    assert cost["geometry"]["heads"] == 16 and cost["commit"] == "abc1234" and cost["fit"]["points"] == 100
    # A GPU mlaplan does not know by name: the file carries its compute capability, which the sweep reads.
    assert cost["gpu"] == "Synthetic GPU" and cost["compute_capability"] == "9.0"
    rows = mlaplan.sweep(batches=50, buffer_tokens=(16384, 65536), policies="packed", cost=str(out))
    assert all(r["layer_ms_mean"] > 0 and r["layers"] == 61 and r["model"] == "deepseek-v3" for r in rows)


@pytest.mark.parametrize("args,message", [
    (["--refit", "missing.json", "-o", "x.json"], "missing.json: no such file; give a file --measurements wrote"),
    (["--refit", "tests/data/cost/deepseek-v3-tp8-example.json", "-o", "x.json"], "format: not \"mlaplan-calibration-measurements\""),
    (["--model", "deepseek-v3", "--tp", "3", "-o", "x.json"], "--tp 3: DeepSeek-V3 has 128 attention heads"),
    (["--tp", "8"], "the following arguments are required: -o/--output"),
    (["--points", "2", "-o", "x.json"], "--points: 2 is outside the range; give a whole number from 10 to 1000000"),
    (["--buffer-tokens", "0", "-o", "x.json"], "--buffer-tokens: 0 is outside the range; give a whole number from 1"),
    (["--host-reps", "-1", "-o", "x.json"], "--host-reps: '-1' is not written in digits; give a whole number from 0"),
    (["--reheat-ms", "10001", "-o", "x.json"], "--reheat-ms: 10001 is outside the range; give a whole number from 0 to 10000"),
])
def test_calibrate_refuses_in_one_line(args, message):
    r = run_module("mlaplan.calibrate", *args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlaplan: error:") and message in lines[0], r.stderr


def test_validate_reports_errors_and_ranking(tmp_path):
    recs = []
    for i, w in enumerate(("coding", "trace", "chat")):
        for r in synthetic(40, 0.01, seed=10 + i):
            recs.append(dict(r, workload=w, scenario=f"{w}-{len(recs) % 4}"))
    meas = tmp_path / "v.json"
    meas.write_text(json.dumps({"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "records": recs}))
    cost = json.loads(open(EXAMPLE).read())
    cost["coefficients"] = TRUE
    cost_path = tmp_path / "c.json"
    cost_path.write_text(json.dumps(cost))
    out_json = tmp_path / "report.json"
    r = run_module("mlaplan.calibrate.validate", "--cost", str(cost_path), "--measured", str(meas), "--json", str(out_json))
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(out_json.read_text())
    assert set(rep["workloads"]) == {"coding", "trace", "chat"}
    for w in rep["workloads"].values():
        assert w["median_abs_error"] < 0.02 and w["kendall_tau"] > 0.9
    assert "| coding |" in r.stdout and "Kendall tau" in r.stdout
    # A model that is off by a factor misses the targets: exit 1.
    cost["coefficients"] = {k: 2 * v for k, v in TRUE.items()}
    cost_path.write_text(json.dumps(cost))
    assert run_module("mlaplan.calibrate.validate", "--cost", str(cost_path), "--measured", str(meas)).returncode == 1


def test_sweep_without_cost_has_no_time_fields():
    rows = mlaplan.sweep(batches=20, buffer_tokens=(16384,), policies="packed")
    assert "layer_ms_mean" not in rows[0] and rows[0]["model"] is None


def test_sweep_cost_fields():
    """One batch swept with a cost file: its quantiles are its one time, a step is 61 layers of it."""
    rows = mlaplan.sweep(workload="short-chat", batches=1, buffer_tokens=(8192,), policies="packed", cost=EXAMPLE)
    assert rows[0]["layer_ms_mean"] == pytest.approx(rows[0]["layer_ms_p50"])
    assert rows[0]["step_ms_mean"] == pytest.approx(rows[0]["layer_ms_mean"] * 61)
    assert 0 < rows[0]["iteration_overhead_share"] < 1


def test_measure_point_runs_the_executor_on_the_cpu():
    """One calibration point measured on the CPU (float32, 2 heads): the executor's iterations are the
    terms' own, and a policy's refusal is recorded, not raised."""
    torch = pytest.importorskip("torch", reason="the executor needs torch")
    from mlaplan.calibrate.grid import Point
    from mlaplan.calibrate.measure import measure_point
    from mlaplan.prefill.model import model_dims

    dims = model_dims("deepseek-v2-lite", heads=2)
    p = Point([300, 0, 90], [20, 25, 15], 16, 128, "packed")
    rec = measure_point(p, dims, torch.float32, torch.device("cpu"), reps=1, warmup=0, kernel="flash", seed=3)
    assert rec["eager_ms"] > 0 and rec["graph_ms"] is None and "refused" not in rec
    assert rec["iterations"] == features(p, 2)["per_iteration_us"] == 4  # 128 + 128 + 44 rows, then 90
    refused = measure_point(Point([300, 300, 300], [1, 1, 1], 64, 64, "even-split"), dims, torch.float32,
                            torch.device("cpu"), reps=1, warmup=0, kernel="flash", seed=3)
    assert "even-split/vllm" in refused["refused"] and "eager_ms" not in refused


def test_a_point_without_eager_runs_times_no_host_and_waits_for_no_cpu(monkeypatch):
    """measure_point owns the rule that the graph alone has no host dispatch to time, no CPU to wait for
    and no order of timings: with eager=False run_one is asked for none, whatever the caller passed;
    with eager=True the caller's settings reach it."""
    torch = pytest.importorskip("torch", reason="the executor needs torch")
    from mlaplan.calibrate import measure
    from mlaplan.calibrate.grid import Point
    from mlaplan.prefill.model import model_dims

    asked = []

    def fake_run_one(*a, **kw):
        asked.append(kw)
        raise ValueError("stop here")  # recorded as a refusal: the arguments are what is checked

    monkeypatch.setattr(measure, "run_one", fake_run_one)
    dims = model_dims("deepseek-v2-lite", heads=2)
    for eager in (False, True):
        rec = measure.measure_point(Point([300], [20], 16, 128, "packed"), dims, torch.float32, torch.device("cpu"),
                                    reps=1, warmup=0, kernel="flash", seed=3, host_reps=7, graph_first=True,
                                    cpu_wait_s=5.0, eager=eager)
        kw = asked.pop()
        assert rec["refused"] == "stop here" and kw["eager"] is eager
        # host_reps also needs a GPU (the CPU has no dispatch to tell apart), so it is 0 here either way
        assert (kw["cpu_wait_s"], kw["graph_first"], kw["host_reps"]) == ((5.0, True, 0) if eager else (0.0, False, 0))


def test_workload_points_take_turns():
    """Calibration measures the workloads' points in turn, each in its own order, so that a run cut
    short by --max-seconds has some of every workload (it once timed only the first file's)."""
    from mlaplan.calibrate.grid import Point, interleave_workloads

    pts = [Point([1], [1], 16, 64, "packed", w, f"{w}-{i}") for w, n in (("a", 3), ("b", 2), ("c", 1)) for i in range(n)]
    assert [p.scenario for p in interleave_workloads(pts)] == ["a-0", "b-0", "c-0", "a-1", "b-1", "a-2"]
    assert interleave_workloads([]) == []


def test_scenario_points_are_every_batch_policy_and_buffer():
    from mlaplan.calibrate.grid import scenario_points
    from mlaplan.prefill.schedule import ENGINES

    path = os.path.join(ROOT, "docs", "data", "cost-validation", "seed-51", "short-chat.json")
    scenarios = mlaplan._mlaplan.read_scenarios(path)
    every = scenario_points([path], [8192, 65536], heads=16, refused=True)
    assert len(every) == len(scenarios) * 2 * len(ENGINES)
    assert {p.workload for p in every} == {"short-chat"} and {p.scenario for p in every} == {s["name"] for s in scenarios}
    kept = scenario_points([path], [8192, 65536], heads=16)
    assert 0 < len(kept) <= len(every) and all("workload" not in p.as_dict() for p in kept)
    for p in kept:
        features(p, 16)  # none the policy refuses


def test_calibrate_refuses_scenarios_with_refit():
    r = run_module("mlaplan.calibrate", "--refit", "a.json", "--scenarios", "b.json", "-o", "x.json")
    assert r.returncode == 2 and "--scenarios: they add points to measure, and --refit measures nothing" in r.stderr


def test_calibrate_names_a_bad_scenarios_file_before_asking_for_a_gpu(tmp_path):
    r = run_module("mlaplan.calibrate", "--scenarios", str(tmp_path / "missing.json"), "-o", str(tmp_path / "x.json"))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("mlaplan: error:"), r.stderr
    assert "missing.json" in lines[0] and "GPU" not in lines[0], r.stderr
    assert not (tmp_path / "x.json").exists()


def test_host_from_fits_the_host_on_other_runs(tmp_path):
    """--host-from: the graph fit from --refit's runs, the host costs from the other runs alone."""
    src = os.path.join(ROOT, "docs", "data", "cost-calibration", "deepseek-v3-tp8-fa3-workloads-seed62-2026-12-03.json")
    doc = json.load(open(src))
    # The host runs: the short-chat ones, their eager times made 1.5x slower, so that the host costs must rise.
    host = dict(doc, records=[dict(r, eager_ms=1.5 * r["eager_ms"]) for r in doc["records"] if r.get("workload") == "short-chat"])
    (tmp_path / "host.json").write_text(json.dumps(host))
    plain, split = tmp_path / "plain.json", tmp_path / "split.json"
    assert run_module("mlaplan.calibrate", "--refit", src, "-o", str(plain)).returncode == 0
    r = run_module("mlaplan.calibrate", "--refit", src, "--host-from", str(tmp_path / "host.json"), "-o", str(split))
    assert r.returncode == 0, r.stderr
    a, b = json.loads(plain.read_text()), json.loads(split.read_text())
    assert a["coefficients"] == b["coefficients"]
    assert b["host"]["fit"]["points"] == len(host["records"]) < a["host"]["fit"]["points"]
    assert sum(b["host"]["launch_us"].values()) > sum(a["host"]["launch_us"].values())
    # Runs of another model are refused, in one line naming the field.
    other = dict(host, model="kimi-k2")
    (tmp_path / "other.json").write_text(json.dumps(other))
    r = run_module("mlaplan.calibrate", "--refit", src, "--host-from", str(tmp_path / "other.json"), "-o", str(tmp_path / "x.json"))
    assert r.returncode == 2 and r.stderr.startswith("mlaplan: error:") and "model: 'kimi-k2'" in r.stderr
    assert not (tmp_path / "x.json").exists()
    # Eager runs reheated after each probe are timed unlike the others: not pooled with them.
    (tmp_path / "reheated.json").write_text(json.dumps(dict(host, reheat_ms=100)))
    r = run_module("mlaplan.calibrate", "--refit", src, "--host-from", str(tmp_path / "host.json"), str(tmp_path / "reheated.json"),
                   "-o", str(tmp_path / "x.json"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "reheated.json: reheat_ms: 100, but" in r.stderr, r.stderr
    assert not (tmp_path / "x.json").exists()
    r = run_module("mlaplan.calibrate", "--refit", src, "--host-from", str(tmp_path / "reheated.json"), "-o", str(tmp_path / "x.json"))
    assert r.returncode == 0, r.stderr


def test_host_from_pools_held_out_runs_that_validate_saved(tmp_path):
    """Held-out runs, once reported, pool into a later host fit: --host-from reads validate --save's files
    (those saved before it recorded their date and dtype too), and --refit, which fits the graph, does not."""
    cal = os.path.join(ROOT, "docs", "data", "cost-calibration", "deepseek-v3-tp8-fa3-host-reheat-2026-12-05.json")
    held = os.path.join(ROOT, "docs", "data", "cost-validation", "seed-121", "measured-deepseek-v3-tp8-fa3-2026-12-05.json")
    graph = os.path.join(ROOT, "docs", "data", "cost-calibration", "deepseek-v3-tp8-fa3-workloads-seed62-2026-12-03.json")
    assert "date" not in json.load(open(held)) and "dtype" not in json.load(open(held))
    alone, pooled = tmp_path / "alone.json", tmp_path / "pooled.json"
    assert run_module("mlaplan.calibrate", "--refit", graph, "--host-from", cal, "-o", str(alone)).returncode == 0
    r = run_module("mlaplan.calibrate", "--refit", graph, "--host-from", cal, held, "-o", str(pooled))
    assert r.returncode == 0, r.stderr
    a, b = json.loads(alone.read_text()), json.loads(pooled.read_text())
    n_cal, n_held = len(json.load(open(cal))["records"]), len(json.load(open(held))["records"])
    assert a["host"]["fit"]["points"] == n_cal and b["host"]["fit"]["points"] == n_cal + n_held
    assert [s["points"] for s in b["host"]["fit"]["sessions"]] == [n_cal, n_held]
    assert b["host"]["launch_us"] != a["host"]["launch_us"]
    assert b["host"]["date"] == json.load(open(cal))["date"]  # the held-out file has none: the others' latest
    # A held-out file of another kernel is refused, in one line naming the field; so is one given to --refit.
    (tmp_path / "fa2.json").write_text(json.dumps(dict(json.load(open(held)), attention="flash")))
    for args in (["--refit", graph, "--host-from", cal, str(tmp_path / "fa2.json")], ["--refit", held]):
        r = run_module("mlaplan.calibrate", *args, "-o", str(tmp_path / "x.json"))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("mlaplan: error:"), r.stderr
        assert not (tmp_path / "x.json").exists()
    assert "attention: 'flash'" in run_module("mlaplan.calibrate", "--refit", graph, "--host-from", cal, str(tmp_path / "fa2.json"),
                                              "-o", str(tmp_path / "x.json")).stderr
