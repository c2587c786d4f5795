"""The scripts under scripts/ on hostile input keep the CLI's contract (issue 61, item 8): exit 2 and one
`mlaplan: error:` line naming the file and the field, never a traceback; bounded reads (/dev/zero is
refused, not read until memory runs out); strict JSON (NaN, a key given twice); names escaped where
they reach the terminal or Markdown; nothing rewritten when one input is bad. mlaplan itself is
replaced by a stub that prints what each case needs, so no build is needed."""
import json
import os
import resource
import stat
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
TRACE = os.path.join(ROOT, "tests", "data", "mooncake_conversation_head2000.jsonl")
ESC = "\x1b[31m"


def _limited():
    # 1 GiB of address space: a script that reads /dev/zero or builds huge tables fails fast here
    # (a MemoryError traceback before the fix) instead of taking the machine's memory.
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def script(name, *args, env=None, limit=True):
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, name), *args], capture_output=True, text=True,
                          errors="surrogateescape", timeout=60, env=env, preexec_fn=_limited if limit else None)


def one_line(r, *words):
    """Exit 2, one `mlaplan: error:` line holding each of words, no traceback, no raw ESC."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("mlaplan: error: "), (r.returncode, r.stderr)
    assert "\x1b" not in r.stderr + r.stdout
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def write(path, doc):
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def stub(tmp_path, **outputs):
    """An `mlaplan` that prints outputs[SUBCOMMAND] (text) for `mlaplan SUBCOMMAND ...`."""
    exe = tmp_path / "mlaplan"
    exe.write_text(f"#!{sys.executable}\nimport sys\nprint({outputs!r}[sys.argv[1]])\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


# guided_table.py: reports of validate --json.
def report(measured=(1.0, 0.9), workload="w", timing="graph"):
    rows = [("max", measured[0]), ("guided:c.json", measured[1])]
    return {"timing": timing, "settings": [{"policy": p, "workload": workload, "buffer_tokens": 8192, "measured_ms": m,
                                            "predicted_ms": m, "error": 0.01} for p, m in rows]}


def test_guided_table_zero_time_nan_and_duplicate_keys(tmp_path):
    one_line(script("guided_table.py", "L=" + write(tmp_path / "z.json", report((0.0, 1.0)))),
             "settings[0].measured_ms", "above 0")
    nan = json.dumps(report()).replace('"measured_ms": 1.0', '"measured_ms": NaN')
    one_line(script("guided_table.py", "L=" + write(tmp_path / "n.json", nan)), "NaN")
    twice = json.dumps(report()).replace('"timing": "graph"', '"timing": "eager", "timing": "graph"')
    one_line(script("guided_table.py", "L=" + write(tmp_path / "d.json", twice)), "given twice")


def test_guided_table_bounded_read_and_escaped_names(tmp_path):
    one_line(script("guided_table.py", "L=/dev/zero"), "/dev/zero", "256 MiB")
    r = script("guided_table.py", f"L{ESC}|x=" + write(tmp_path / "e.json", report(workload=f"w{ESC}")))
    assert r.returncode == 0 and "\x1b" not in r.stdout, r.stdout
    assert r.stdout.startswith("| L\\x1b[31m\\|x | w\\x1b[31m | "), r.stdout


# expected_block.py: scenario files.
SCENARIO = {"name": "s", "page_size": 16, "buffer_token_size": 64, "max_chunks": 2, "cache_lengths": [3],
            "input_lengths": [5]}


def test_expected_block_missing_and_mistyped_fields(tmp_path):
    one_line(script("expected_block.py", write(tmp_path / "m.json", {k: v for k, v in SCENARIO.items() if k != "max_chunks"})),
             "max_chunks: missing")
    one_line(script("expected_block.py", "--check", write(tmp_path / "t.json", dict(SCENARIO, page_size="16"))),
             "page_size", "not an integer")
    one_line(script("expected_block.py", write(tmp_path / "l.json", {"scenarios": [SCENARIO, 7]})), "scenarios[1]: not an object")


def test_expected_block_huge_chunk_count_is_refused_fast(tmp_path):
    huge = write(tmp_path / "h.json", dict(SCENARIO, max_chunks=4_000_000_000))
    one_line(script("expected_block.py", "--check", huge), "max_chunks 4,000,000,000")


def test_expected_block_escapes_names_and_rewrites_nothing_when_one_file_is_bad(tmp_path):
    r = script("expected_block.py", "--check", write(tmp_path / "e.json", dict(SCENARIO, name=f"s{ESC}")))
    assert r.returncode == 1 and "\x1b" not in r.stdout and "s\\x1b[31m: expected block differs" in r.stdout, r.stdout
    good = write(tmp_path / "good.json", SCENARIO)
    before = open(good).read()
    one_line(script("expected_block.py", good, write(tmp_path / "bad.json", dict(SCENARIO, cache_lengths=[-1]))),
             "cache_lengths[0]")
    assert open(good).read() == before


# refit_host.py: a cost file whose recorded command is re-run.
def test_refit_host_cost_file_by_strict_json(tmp_path):
    command = "python -m mlaplan.calibrate --model deepseek-v3 --refit runs.json"
    nan = write(tmp_path / "n.json", '{"command": "%s", "x": NaN}' % command)
    one_line(script("refit_host.py", nan, str(tmp_path / "runs.json")), "n.json", "NaN")
    twice = write(tmp_path / "d.json", '{"command": 1, "command": "%s"}' % command)
    one_line(script("refit_host.py", twice, str(tmp_path / "runs.json")), "d.json", "given twice")


# heldout_batches.py: a Mooncake trace, and what mlaplan gen prints.
def test_heldout_batches_trace_is_read_bounded(tmp_path):
    one_line(script("heldout_batches.py", "1", "1", str(tmp_path / "out"), "--trace", "/dev/zero", "--mlaplan", "/bin/true"),
             "/dev/zero", "256 MiB")
    assert not os.path.exists(tmp_path / "out")


def test_heldout_batches_checks_what_gen_printed(tmp_path):
    exe = stub(tmp_path, gen=json.dumps({"scenarios": [{"name": "x"}]}))
    one_line(script("heldout_batches.py", "1", "1", str(tmp_path / "out"), "--trace", TRACE, "--mlaplan", exe),
             "scenarios[0].cache_lengths: missing")
    assert not os.path.exists(tmp_path / "out" / "short-chat.json")


# guided_modelled.py: what mlaplan sweep prints.
def sweep_rows(ms=1.0, drop=None):
    rows = [{"policy": p, "buffer_tokens": b, "layer_ms": {"mean": ms * (1 + i / 100)}}
            for i, p in enumerate(["max", "packed", "even-split/vllm", "even-split/sglang", "guided:c.json"])
            for b in (8192, 16384, 32768, 65536, 16777216)]
    return json.dumps({"rows": [{k: v for k, v in r.items() if k != drop} for r in rows]})


def test_guided_modelled_zero_times_and_missing_fields(tmp_path):
    for rows, words in ((sweep_rows(0.0), ("layer_ms.mean", "above 0")), (sweep_rows(drop="policy"), ("rows[0].policy: missing",))):
        exe = stub(tmp_path, sweep=rows)
        one_line(script("guided_modelled.py", exe, "L=c.json", "--", "w", "--workload", "coding-agent"), *words)


def test_guided_modelled_escapes_labels(tmp_path):
    exe = stub(tmp_path, sweep=sweep_rows())
    r = script("guided_modelled.py", exe, f"L{ESC}|=c.json", "--", f"w{ESC}", "--workload", "coding-agent")
    assert r.returncode == 0 and "\x1b" not in r.stdout and r.stdout.startswith("| L\\x1b[31m\\| | w\\x1b[31m | "), r


# compare_bench.py: two bench reports.
def test_compare_bench_escapes_kernel_names(tmp_path):
    def bench(us):
        return {"rows": [{"batch_size": 1, "kernel": f"k{ESC}", "mode": "hot", "median_us": us, "spread": 0.01}]}

    r = script("compare_bench.py", write(tmp_path / "a.json", bench(10)), write(tmp_path / "b.json", bench(20)))
    assert r.returncode == 1 and "\x1b" not in r.stdout and "differ: B=1 k\\x1b[31m hot" in r.stdout, r.stdout


# replay_table.py: Mooncake traces, read before mlaplan runs.
def test_replay_table_checks_each_trace_line(tmp_path):
    (tmp_path / "traces").mkdir()
    write(tmp_path / "traces" / "conversation_trace.jsonl", '{"hash_ids": [1, 2]}\n{"input_length": 5}\n')
    write(tmp_path / "traces" / "synthetic_trace.jsonl", '{"hash_ids": [1]}\n')
    exe = stub(tmp_path, gen=json.dumps({"scenarios": [{"cache_lengths": [5], "input_row_offsets": [0, 5]}]}),
               sweep=json.dumps({"recommendation": {"groups": []}, "source": "x"}))
    one_line(script("replay_table.py", exe, str(tmp_path / "traces")), "conversation_trace.jsonl:2: hash_ids: missing")


# The experiments a current doc cites.
def test_synthetic_trace_arguments(tmp_path):
    one_line(script("experiments/synthetic_trace.py", str(tmp_path / "t.jsonl"), "ten"), "argument N")
    one_line(script("experiments/synthetic_trace.py", str(tmp_path / "no" / "t.jsonl"), "5"), "cannot write it")


def test_steady_clock_arguments():
    pytest.importorskip("torch", reason="the experiment imports torch")
    mlaplan = pytest.importorskip("mlaplan")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(mlaplan.__file__))))
    one_line(script("experiments/steady_clock.py", env=env, limit=False), "required")


def test_launch_stamps_escapes_workload_names(tmp_path):
    pytest.importorskip("scipy", reason="the calibration reads with scipy (pip install .[calibrate])")
    mlaplan = pytest.importorskip("mlaplan")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(mlaplan.__file__))))
    runs = json.load(open(os.path.join(ROOT, "docs", "data", "cost-validation", "seed-131",
                                       "measured-kimi-k2-tp8-fa3-2026-12-05.json")))
    for r in runs["records"]:
        r["workload"] = f"{r.get('workload', 'w')}{ESC}"
    r = script("experiments/launch_stamps.py", os.path.join(ROOT, "costs", "h200", "kimi-k2-tp8-bf16-fa3.json"),
               write(tmp_path / "m.json", runs), env=env, limit=False)
    assert r.returncode == 0 and "\x1b" not in r.stdout and "short-chat\\x1b[31m (" in r.stdout, (r.stdout, r.stderr)
