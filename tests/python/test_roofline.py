"""Each part against its limit (issue 64 item 3, mlaplan.prefill.roofline): the FLOPs and bytes each
part moves as the executor runs it, against hand-computed values on small schedules; the limit as the
larger of the two bounds; the peak probe on the CPU; the report's second table and the command's."""
import json
import math
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the prefill executor needs torch (pip install .[torch])")

import mlaplan.prefill as mp  # noqa: E402
from mlaplan.prefill import check, measure, roofline, schedule  # noqa: E402
from mlaplan.prefill.inputs import host_page_table  # noqa: E402
from mlaplan.prefill.model import MlaDims  # noqa: E402
from mlaplan.prefill.report import json_report, text_report  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKED = os.path.join(ROOT, "scenarios", "worked-example.json")
# Small dims, so the counts are worked by hand: latent 32 + 8 = 40, qk_head 16 + 8 = 24, two heads.
D = MlaDims("tiny", heads=2, qk_nope=16, qk_rope=8, v_head=16, kv_lora=32)


def one_sequence(dtype=torch.float32):
    """One sequence of 100 cached and 10 new tokens, in float32 (4 bytes a value)."""
    return mp.random_inputs([100], [0, 10], 16, D, dtype, "cpu", 0)


def packed(x, buffer):
    return schedule.build_schedule("packed", x.lengths, host_page_table(x), buffer, None, "cpu")


def counts(work):
    return {k: (w.flops, w.bytes) for k, w in work.items()}


# The new tokens' step, the same in every case below (V as it is): its up-projection 2 * 10 rows * 32 *
# (2 heads * 32 columns) = 40,960 FLOPs, the least it moves: 10 x 40 latent values and the 64 x 32
# weight read, K (10 x 2 x 24) and V (10 x 2 x 16) written: (400 + 2,048 + 800) x 4 B = 12,992 B, in
# either loop. Its causal attention over 10 keys: 100 - 45 = 55 visible pairs x 2 heads x 2 x (24 + 16)
# = 8,800 FLOPs; Q 1,920 B, K 1,920 B, V 1,280 B, O 1,280 B and the LSE 80 B read or written: 6,480 B.
# It is taken as the output: no merge.
NEW_UNFUSED = (40960.0 + 8800.0, 12992.0 + 6480.0)


def test_one_chunk_by_hand():
    x = one_sequence()
    s = packed(x, 512)
    assert [st.label for st in s.steps] == ["new tokens", "chunk 0"] and s.final_merge
    got = counts(roofline.part_work(s, x, "unfused", pad_v=False))
    assert got == {
        # 100 rows x 40 values x 4 B, read from the cache and written to the buffer.
        "gather": (0.0, 32000.0),
        # 2 x 100 x 32 x 64 FLOPs; (4,000 latent + 2,048 weight + 4,800 K + 3,200 V) x 4 B = 56,192: the
        # job's least, not the concat's second pass (the distance from it is what the table shows).
        "up-projection": (409600.0, 56192.0),
        # 10 queries x 100 keys x 2 heads x 80; Q 1,920, K 19,200, V 12,800, O 1,280, LSE 80.
        "attention": (160000.0, 35280.0),
        # The chunk is taken (no merge); the final merge of 10 rows: 3 FLOPs a value of 10 x 2 x 16,
        # state, part and state written (3 x 10 x 2 x 16 x 4 B) and their LSEs (3 x 10 x 2 x 4 B).
        "merge": (960.0, 4080.0),
        "new tokens": NEW_UNFUSED,
    }


def test_several_chunks_by_hand():
    """Two chunks of 64 and 36 rows: the same rows gathered and the same FLOPs, but the weight read
    twice, Q read and O, LSE written twice, and the second chunk merged into the first's state."""
    x = one_sequence()
    s = packed(x, 64)
    assert [st.n_rows for st in s.steps] == [10, 64, 36] and not s.steps[2].take
    got = counts(roofline.part_work(s, x, "unfused", pad_v=False))
    assert got["gather"] == (0.0, 32000.0)
    assert got["up-projection"] == (409600.0, 56192.0 + 2048 * 4)  # the weight read once a chunk
    assert got["attention"] == (160000.0, 35280.0 + 1920 + 1280 + 80)
    # The second chunk's merge reads state and part and writes the state: 10 x 2 x (16 x 12 + 12) B.
    assert got["merge"] == (960.0 * 2, 4080.0 + 4080.0)
    assert got["new tokens"] == NEW_UNFUSED


def test_the_fused_loop_has_no_gather_and_no_concat():
    """mlaplan's loop: the kernel reads the rows itself (no gather part) and writes K and V once
    (fused_up.up_projection_work: 100 x 40 latent read, 100 x 2 x 40 K and V written, the weight read)."""
    x = one_sequence()
    for buffer, chunks in ((512, 1), (64, 2)):
        got = counts(roofline.part_work(packed(x, buffer), x, "fused", pad_v=False))
        assert got["gather"] == (0.0, 0.0)
        assert got["up-projection"] == (409600.0, (4000 + 8000) * 4.0 + chunks * 2048 * 4)
        # The new tokens' 10 rows so too (read through their rows: 400 + 800 values) and their attention.
        assert got["new tokens"] == NEW_UNFUSED
        # The same job, so the same limits but the gather's: the loops differ in how far they run from them.
        unfused = counts(roofline.part_work(packed(x, buffer), x, "unfused", pad_v=False))
        assert {k: v for k, v in got.items() if k != "gather"} == {k: v for k, v in unfused.items() if k != "gather"}


def test_sglangs_absorbed_step_by_hand():
    """The whole context's 110 rows gathered (2 x 110 x 40 x 4 B); q_nope taken into the latent space
    (2 x 10 x 2 x 16 x 32 FLOPs; q_nope, W_UK read and q_lat written: (320 + 1,024 + 640) x 4 B), joined
    to q's rope part (q_lat and the rope read, 10 x 2 x 40 written: 6,400 B), W_UV (20,480 FLOPs, 7,936 B);
    the attention over the latent rows read once: 10 x 110 - 45 pairs x 2 heads x 2 x (40 + 32) FLOPs,
    Q 3,200 B, latent 17,600 B, O 2,560 B, LSE 80 B."""
    x = one_sequence()
    s = schedule.build_schedule("even-split/sglang", x.lengths, host_page_table(x), 512, None, "cpu",
                                sglang_path="absorbed")
    assert [st.absorbed for st in s.steps] == [True]
    assert counts(roofline.part_work(s, x, "unfused")) == {
        "gather": (0.0, 35200.0), "up-projection": (40960.0, 7936.0 + 6400.0 + 7936.0),
        "attention": (303840.0, 23440.0), "merge": (0.0, 0.0), "new tokens": (0.0, 0.0)}


def test_gathered_queries_are_read_and_written_once_more():
    """waves over a sequence without context between two with it: each chunk's 8 queries (rows 0-2 and
    7-11) are gathered before the launch. Per chunk Q 8 x 2 x 24 x 4 = 1,536 B read, its gather 3,072 B,
    O 1,024 B and the LSE 64 B; over the chunks the 80 keys' K and V, 80 x 2 x (24 + 16) x 4 = 25,600 B."""
    x = mp.random_inputs([40, 0, 40], [0, 3, 7, 12], 16, D, torch.float32, "cpu", 1)
    s = schedule.build_schedule("waves", x.lengths, host_page_table(x), 32, None, "cpu")
    calls = [a for st in s.steps if not st.new_tokens for a in st.attends]
    assert len(calls) == 3 and all(a.q_rows is not None and a.call.n_q == 8 for a in calls)
    assert sum(a.call.n_k for a in calls) == 80
    got = roofline.part_work(s, x, "unfused", pad_v=False)["attention"]
    assert got.bytes == 3 * (1536 + 3072 + 1024 + 64) + 25600


def test_padded_v_and_a_wider_state_cost_bytes_not_flops():
    x = one_sequence()
    s = packed(x, 512)
    plain = roofline.part_work(s, x, "unfused", pad_v=False)
    padded = roofline.part_work(s, x, "unfused", pad_v=True)
    # The pad is the loop's pass, not the job's (no limit of its own); attention reads V and writes O 24 wide.
    assert padded["up-projection"] == plain["up-projection"]
    assert padded["attention"].bytes - plain["attention"].bytes == (100 + 10) * 2 * 8 * 4
    assert all(padded[k].flops == plain[k].flops for k in mp.PARTS)
    # The fused loop's V buffer is padded once when prepared: its kernel writes V at 16 wide either way.
    fused = roofline.part_work(s, x, "fused", pad_v=True)
    assert fused["up-projection"] == roofline.part_work(s, x, "fused", pad_v=False)["up-projection"]
    # bf16 inputs with a float32 state: the take converts the chunk's output (10 x 2 x 16 x (2 + 4) B).
    xb = one_sequence(torch.bfloat16)
    wide = roofline.part_work(s, xb, "unfused", state="fp32", pad_v=False)
    same = roofline.part_work(s, xb, "unfused", pad_v=False)
    assert same["merge"].bytes == 3 * 10 * 2 * (16 * 2 + 4)
    assert wide["merge"].bytes == 10 * 2 * 16 * 6 + 3 * 10 * 2 * (16 * 4 + 4)
    with pytest.raises(ValueError, match="up_projection: 'fast'"):
        roofline.part_work(s, x, "fast")


@pytest.mark.parametrize("engine,paths", check.VARIANTS, ids=[f"{e}-{'-'.join(p.values()) or 'auto'}" for e, p in check.VARIANTS])
def test_every_policys_parts_hold_its_gemm_and_its_attention(engine, paths):
    """On a batch of three sequences: the attention part's FLOPs are measure.attention_flops (the useful
    work the report's TFLOP/s divides), the up-projection's and the new tokens' GEMMs 2 x rows x
    kv_lora x heads x (qk_nope + v_head) over the steps' rows, the gather none in the fused loop, and
    nothing is negative."""
    policy, up = schedule.split_loop(engine)
    x = mp.random_inputs([300, 0, 90], [0, 20, 45, 60], 16, D, torch.float32, "cpu", 1)
    s = schedule.build_schedule(policy, x.lengths, host_page_table(x), 128, None, "cpu", **paths)
    work = roofline.part_work(s, x, up)
    assert math.isclose(work["attention"].flops, measure.attention_flops(s, x))
    per_row = 2.0 * D.kv_lora * D.heads * (D.qk_nope + D.v_head)
    if s.path != "absorbed":
        ctx = sum(st.n_rows for st in s.steps if not st.new_tokens)
        assert work["up-projection"].flops == per_row * ctx
        assert work["gather"].bytes == (0 if up == "fused" else 2 * ctx * D.latent * 4)
    new = [st for st in s.steps if st.new_tokens]
    assert work["new tokens"].flops >= per_row * sum(st.n_rows for st in new) > 0 or not new
    assert all(w.flops >= 0 and w.bytes >= 0 for w in work.values()) and set(work) == set(mp.PARTS)


PEAK = roofline.Peak(gemm_tflops=1.0, copy_gbs=1.0, dtype="bf16", device="cuda", gemm_size=8192,
                     copy_bytes=1 << 30, gemm_ms=1.0, copy_ms=1.0)


def test_roofline_ms_is_the_larger_bound():
    # At 1 TFLOP/s and 1 GB/s: 2 GFLOP take 2 ms and 1 MB 1 ms; 1 GFLOP 1 ms and 5 MB 5 ms.
    assert roofline.roofline_ms(roofline.Work(2e9, 1e6), PEAK) == pytest.approx(2.0)
    assert roofline.roofline_ms(roofline.Work(1e9, 5e6), PEAK) == pytest.approx(5.0)
    assert roofline.limits_ms({"gather": roofline.Work(0.0, 3e6), "merge": roofline.NONE}, PEAK) == {
        "gather": pytest.approx(3.0), "merge": 0.0}


def test_the_cpu_peak_probe_is_positive_and_finite():
    p = roofline.peak("cpu", torch.float32)
    for v in (p.gemm_tflops, p.copy_gbs, p.gemm_ms, p.copy_ms):
        assert v > 0 and math.isfinite(v)
    assert (p.dtype, p.device, p.gemm_size, p.copy_bytes) == ("fp32", "cpu", roofline.CPU_GEMM, roofline.CPU_COPY_BYTES)
    assert p.line().startswith("peak: dense fp32 GEMM ") and p.line().endswith("measured in this run (the CPU)")
    json.dumps(p.as_dict(), allow_nan=False)
    with pytest.raises(ValueError, match="dtype: torch.int8"):
        roofline.peak("cpu", torch.int8)


def _run(policy, parts, limits, buffer=65536):
    r = measure.Run("s", buffer, policy, path="chunked", iterations=2, merges=3, eager_ms=30.0, graph_ms=29.0,
                    max_abs_error=1e-3, ok=True)
    r.parts_ms, r.parts_roofline_ms = dict(parts), dict(limits)
    return r


def test_the_report_sets_each_part_against_its_limit_within_120_columns():
    peak = roofline.Peak(gemm_tflops=762.3, copy_gbs=2912.0, dtype="bf16", device="cuda", gemm_size=8192,
                         copy_bytes=1 << 30, gemm_ms=1.44, copy_ms=0.74)
    parts = {"gather": 0.84, "up-projection": 1.17, "attention": 14.8, "merge": 0.3, "new tokens": 2.0}
    limits = {"gather": 0.29, "up-projection": 0.35, "attention": 9.5, "merge": 0.0001, "new tokens": 1.0}
    long_name = "guided:/a/very/long/path/to/the/cost-files/h100-deepseek-v3-tp8-fa3-calibrated.json+fused"
    runs = [_run("packed", parts, limits), _run(long_name, {**parts, "gather": 0.0}, {**limits, "gather": 0.0}, 1 << 20),
            measure.Run("s", 8, "max", refused="too small"), _run("packed+fused", parts, {})]
    batch = {"title": "coding-agent", "runs": runs}
    header = {"tool": "mlaplan.prefill", "peak": peak.as_dict()}
    text = text_report(header, [batch])
    lines = text.splitlines()
    assert "peak: dense bf16 GEMM 762 TFLOP/s, copy 2.9 TB/s, measured in this run" in lines
    at = lines.index("peak: dense bf16 GEMM 762 TFLOP/s, copy 2.9 TB/s, measured in this run")
    table = lines[at:]
    assert all(len(line) <= 120 for line in table), [len(line) for line in table]
    assert table[3].split() == ["buffer", "policy", "gather", "up-proj", "attn", "merge", "new"]
    rows = table[4:]
    assert len(rows) == 2  # the refused run and the run without limits have no row
    assert rows[0].split() == ["65,536", "packed", "0.840/0.290", "2.9x", "1.17/0.350", "3.3x", "14.8/9.50", "1.6x",
                               "0.300/0.000", "3000x", "2.00/1.00", "2.0x"]
    # The long name cut in its middle, its ends kept; no gather: "-".
    assert rows[1].split()[1].startswith("guided:/") and rows[1].split()[1].endswith(".json+fused")
    assert "~" in rows[1] and rows[1].split()[2] == "-"
    # The first table as it was: its header line and the peak only under it, not among the header's lines.
    assert any(line.split()[:3] == ["buffer", "policy", "path"] and line.endswith("TFLOP/s  max|err|") for line in lines)
    assert lines.index("fastest: packed at 65,536 rows, 30.000 ms eager, 29.000 ms graph (2 iterations)") < at and not any(
        line.startswith("peak: {") for line in lines)
    doc = json.loads(json_report(header, [batch]))
    assert doc["peak"]["gemm_tflops"] == 762.3 and doc["batches"][0]["runs"][0]["parts_roofline_ms"] == limits
    # Without a peak (--no-roofline): each part in ms alone, no limits.
    bare = text_report({"tool": "mlaplan.prefill"}, [batch]).splitlines()
    assert "peak:" not in "\n".join(bare)
    at = bare.index("each part, ms (one profiled run):")
    assert bare[at + 1].split() == ["buffer", "policy", "gather", "up-proj", "attn", "merge", "new"]
    assert bare[at + 2].split() == ["65,536", "packed", "0.840", "1.170", "14.800", "0.300", "2.000"]
    assert len(bare) == at + 5 and all(len(line) <= 120 for line in bare)  # packed, the long name, packed+fused


def _cli(capsys, *extra):
    from mlaplan.prefill.__main__ import entry

    code = entry([WORKED, "--model", "deepseek-v2-lite", "--heads", "2", "--device", "cpu", "--warmup", "0",
                  "--policy", "packed,packed+fused", *extra])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_the_command_prints_the_roofline_table_on_the_cpu(capsys, tmp_path):
    text = _cli(capsys, "--reps", "1", "--json", str(tmp_path / "runs.json"))
    lines = text.splitlines()
    peak = [i for i, line in enumerate(lines) if line.startswith("peak: dense fp32 GEMM ")]
    assert len(peak) == 1 and lines[peak[0]].endswith("measured in this run (the CPU)"), text
    head = lines[peak[0] + 3].split()
    assert head == ["buffer", "policy", "gather", "up-proj", "attn", "merge", "new"], text
    rows = [line.split() for line in lines[peak[0] + 4:]]
    assert [r[1] for r in rows] == ["packed", "packed+fused"], text
    assert rows[0][2].count("/") == 1 and rows[0][3].endswith("x")  # the engines' gather against its limit
    assert rows[1][2] == "-"  # the fused loop gathers nothing
    assert all(len(line) <= 120 for line in lines[peak[0]:])
    # The same run's JSON: the peak in the header, each part's FLOPs, bytes and limit in each run.
    doc = json.loads((tmp_path / "runs.json").read_text())
    assert doc["peak"]["device"] == "cpu" and doc["peak"]["gemm_tflops"] > 0 and doc["peak"]["copy_gbs"] > 0
    for run in doc["batches"][0]["runs"]:
        assert set(run["parts_roofline_ms"]) == set(run["parts_flops"]) == set(run["parts_bytes"]) == set(mp.PARTS)
        assert run["parts_flops"]["up-projection"] > 0 and run["parts_roofline_ms"]["attention"] > 0
        assert (run["parts_bytes"]["gather"] == 0) == run["policy"].endswith("+fused")


def test_no_roofline_and_no_timing_probe_nothing(capsys):
    # --no-roofline: the runs still count their parts' work where timed, but have no limit and no peak.
    doc = json.loads(_cli(capsys, "--reps", "1", "--format", "json", "--no-roofline", "--no-check"))
    assert "peak" not in doc and all(r["parts_roofline_ms"] == {} and r["parts_flops"] for r in doc["batches"][0]["runs"])
    # --reps 0 times nothing: no probe either (the JSON header would carry its peak).
    doc = json.loads(_cli(capsys, "--reps", "0", "--no-check", "--format", "json"))
    assert "peak" not in doc and all(r["parts_flops"] == {} for r in doc["batches"][0]["runs"])


def test_the_gemm_bytes_match_the_fused_kernels_own_count():
    """The fused loop's up-projection is fused_up.up_projection_work per step, the kernel's own count."""
    from mlaplan.prefill.fused_up import up_projection_work

    x = one_sequence()
    s = packed(x, 48)
    want = np.sum([up_projection_work(st.n_rows, D, 4) for st in s.steps if not st.new_tokens], axis=0)
    w = roofline.part_work(s, x, "fused")
    assert (w["up-projection"].flops, w["up-projection"].bytes) == tuple(want)


# On the GPU (skipped here): the lead's next session runs these with the executor's CUDA tests.
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: the GPU's peak and parts need one")


@cuda
def test_the_gpu_peak_is_in_a_datacenter_gpus_range():
    """Dense bf16: an H100 or H200 SXM is 989 TFLOP/s on paper (cuBLAS reaches 650-800), its HBM3 3.35
    or 4.8 TB/s (a copy 2.5-4.4); bounds far outside any such card catch a unit or count off by 2x-1000x."""
    p = roofline.peak("cuda", torch.bfloat16, settle_ms=100)
    print(f"\n{torch.cuda.get_device_name()}: {p.line()} ({p.gemm_ms:.3f} ms, {p.copy_ms:.3f} ms)")
    assert 100 < p.gemm_tflops < 2500 and 500 < p.copy_gbs < 10000, p


@cuda
def test_no_flop_bound_gpu_part_beats_its_limit():
    """DeepSeek-V3 TP 8, 83K cached tokens in 16K-row chunks: the up-projection's GEMMs and the attention
    are FLOP-bound, so neither can run faster than its FLOPs at the dense GEMM's peak (less 20% for the
    probe's own spread); a part under that is a miscount. The memory-bound parts are printed only: a
    chunk's gather or merge fits the L2 and may pass the copy's HBM rate."""
    dims = mp.model_dims("deepseek-v3", tp=8)
    x = mp.random_inputs([60000, 20000, 3000], [0, 512, 1024, 1536], 64, dims, torch.bfloat16, "cuda", 1)
    peak = roofline.peak("cuda", torch.bfloat16, settle_ms=100)
    print(f"\n{torch.cuda.get_device_name()}: {peak.line()}")
    for engine in ("packed", "even-split", "packed+fused"):
        policy, up = schedule.split_loop(engine)
        s = schedule.build_schedule(policy, x.lengths, host_page_table(x), 16384, None, x.device)
        run = measure.run_one(x, s, measure.Run("gpu", 16384, engine), reps=3, warmup=1, graph=False,
                              settle_ms=100, up_projection=up, peak=peak)
        print(engine, {k: f"{run.parts_ms[k]:.3f}/{v:.3f}" for k, v in run.parts_roofline_ms.items()})
        for part in ("up-projection", "attention"):
            ms, limit = run.parts_ms[part], run.parts_roofline_ms[part]
            assert limit > 0 and ms >= 0.8 * limit, (engine, part, ms, limit)
