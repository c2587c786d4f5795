"""The hardening round's hostile inputs to the API and the calibration's commands (test_hostile.py holds
the writer, prefill's outputs, interrupts and escaping): the API refuses a bad value by its keyword,
within memory_limit, and stops on Ctrl-C; reads are bounded and name the file; validate refuses
measured files, options and runs its cost file does not price, each in one `mlaplan: error:` line."""
import json
import os
import signal
import time

import pytest

import mlaplan
from mlaplan import _files
from test_hostile import COST, ROOT, SCENARIO, TRACE, api_child, one_error_line, reaped, run


# 2, 3, 17. The API: every value checked by keyword, bounded by memory_limit, stopped by Ctrl-C.

@pytest.mark.parametrize("kwargs,keyword", [
    (dict(buffer_tokens=[0]), "buffer_tokens[0]=0"),
    (dict(max_chunks=[0]), "max_chunks[0]=0"),
    (dict(batches=0), "batches=0"),
    (dict(batches=10**12), "batches="),
    (dict(page_size=0), "page_size=0"),
    (dict(token_budget=0), "token_budget=0"),
    (dict(max_sequences=0), "max_sequences=0"),
    (dict(buffer_tokens=[]), "buffer_tokens: an empty list"),
    (dict(policies="max,,packed"), "policies="),
    (dict(workload="nope"), "workload='nope'"),
    (dict(seed=-1), "seed=-1"),
    (dict(step_ms=5.0), "step_ms: it sets how a trace is replayed"),
    (dict(memory_limit="1KiB"), "memory_limit="),
    (dict(replay=TRACE + "\0x"), "NUL byte"),
    (dict(replay=TRACE, step_ms=float("nan")), "step_ms=nan"),
])
def test_sweep_refuses_bad_values_by_keyword(kwargs, keyword):
    with pytest.raises(ValueError) as e:
        mlaplan.sweep(**dict(dict(batches=10), **kwargs))
    assert keyword in str(e.value) and "--" not in str(e.value), str(e.value)


def test_sweep_cost_of_the_wrong_type_names_it():
    with pytest.raises(TypeError, match="^cost: expected a cost file's path"):
        mlaplan.sweep("short-chat", batches=10, cost=123)


# The cost and path calls: a value of the wrong type or range names its keyword (it was nanobind's
# signature dump), and guided without its file is told to name it (they take no cost=).
@pytest.mark.parametrize("call, kwargs, error, message", [
    ("cost_launches", dict(page_size=-1), ValueError, "^page_size=-1"),
    ("cost_launches", dict(buffer_token_size=2**32), ValueError, "^buffer_token_size="),
    ("cost_launches", dict(policy=None), TypeError, "^policy: expected"),
    ("cost_launches", dict(pad_v="true"), TypeError, "^pad_v: expected True or False"),
    ("cost_features", dict(unbounded=None), TypeError, "^unbounded: expected True or False"),
    ("cost_features", dict(heads=-1), ValueError, "^heads=-1"),
    ("cost_features", dict(scheduler="fifo"), ValueError, "^scheduler='fifo'"),
    ("cost_features", dict(policy="guided"), ValueError, "name the file: guided:COST.json$"),
    ("cost_features", dict(small_gemm_rows=-1), ValueError, "^small_gemm_rows=-1"),
    ("cost_launches", dict(small_gemm_rows="64K"), TypeError, "^small_gemm_rows: expected a whole number"),
    ("merges_per_query", dict(max_chunks=-1), ValueError, "^max_chunks=-1"),
    ("engine_path", dict(sm=1.5), TypeError, "^sm: expected a whole number"),
])
def test_cost_calls_name_the_keyword(call, kwargs, error, message):
    args = dict(cache_lengths=[1000], input_row_offsets=[0, 100], page_size=1, buffer_token_size=400, policy="packed")
    args.update({"heads": 16} if call.startswith("cost_") else {"sm": 90} if call == "engine_path" else {})
    args.update(kwargs)
    with pytest.raises(error, match=message):
        getattr(mlaplan, call)(**args)


def test_sweep_memory_limit_before_forming():
    t = time.monotonic()
    with pytest.raises(ValueError, match=r"batches=100000000: .* above memory_limit=2.00 GiB") as e:
        mlaplan.sweep(batches=100_000_000)
    assert "--" not in str(e.value) and time.monotonic() - t < 5
    with pytest.raises(ValueError, match="above memory_limit=1.00 MiB"):
        mlaplan.sweep(batches=20000, memory_limit=1 << 20)
    assert len(mlaplan.sweep(batches=20, memory_limit="64MiB", buffer_tokens=[4096])) == 5  # all: max, packed, even-split, sglang, trtllm


@pytest.mark.parametrize("kwargs,keyword", [
    (dict(token_budget=0), "token_budget=0"),
    (dict(max_sequences=0), "max_sequences=0"),
    (dict(block_size=0), "block_size=0"),
    (dict(replay_format="csv"), "replay_format='csv'"),
    (dict(token_budget=1, memory_limit="1MiB"), "replay: the first"),
])
def test_replay_refuses_bad_values_by_keyword(kwargs, keyword):
    with pytest.raises(ValueError) as e:
        mlaplan.replay(TRACE, **kwargs)
    assert keyword in str(e.value) and "--" not in str(e.value), str(e.value)


@pytest.mark.parametrize("path,message", [
    (TRACE + "\0x", "NUL byte"), ("", "an empty path"), ("/", "is a folder"),
])
def test_replay_refuses_bad_paths(path, message):
    with pytest.raises(ValueError, match=message):
        mlaplan.replay(path)




@pytest.mark.parametrize("call", ["mlaplan.sweep(batches=3_000_000)",
                                  "mlaplan.replay(TRACE, token_budget=1, memory_limit='16GiB')"])
def test_ctrl_c_stops_the_api(call):
    with reaped(api_child(call, f"TRACE = {TRACE!r}")) as p:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    assert out.strip() == "interrupted", (out, err)
    assert time.monotonic() - sent < 5 and p.returncode == 0, err


# 4, 13. Reads: bounded, folders and bad JSON named, scipy asked for by name.

@pytest.mark.parametrize("args,message", [
    (["mlaplan.calibrate", "--refit", "/dev/zero", "-o", "{t}/c.json"], "/dev/zero: more than 256 MiB"),
    (["mlaplan.calibrate.validate", "--cost", COST, "--measured", "/dev/zero"], "/dev/zero: more than 256 MiB"),
    (["mlaplan.calibrate.validate", "--cost", COST, "--measured", "{t}"], "{t}: is a folder"),
    (["mlaplan.calibrate.validate", "--cost", COST, "--measured", "{t}/bad.json"], "{t}/bad.json:1:2: invalid JSON"),
    (["mlaplan.calibrate.validate", "--cost", COST, "--measured", "{t}/norecords.json"], "{t}/norecords.json: records:"),
    (["mlaplan.calibrate.validate", "--cost", "{t}/bad.json", "--measured", "{t}/norecords.json"], "{t}/bad.json"),
    (["mlaplan.calibrate", "--refit", "{t}/bad.json", "-o", "{t}/c.json", "--seed", "1e23"], "--seed: '1e23' is not written in digits"),
    (["mlaplan.prefill", SCENARIO, "--heads", "100000000", "--device", "cpu"], "--heads"),
    (["mlaplan.prefill", SCENARIO, "--heads", "129", "--device", "cpu"], "--heads 129: DeepSeek-V3 has 128 attention heads"),
])
def test_reads_and_values_are_one_line(tmp_path, args, message):
    pytest.importorskip("scipy", reason="validate and calibrate check scipy first (pip install .[calibrate])")
    (tmp_path / "bad.json").write_text("{bad")
    (tmp_path / "norecords.json").write_text('{"format": "mlaplan-validation-measurements"}')
    t = str(tmp_path)
    r = run(*[a.replace("{t}", t) for a in args])
    one_error_line(r, 2, message.replace("{t}", t))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "norecords.json"]


@pytest.mark.parametrize("args", [
    ["mlaplan.calibrate.validate", "--cost", COST, "--measured", "{t}/m.json"],
    ["mlaplan.calibrate", "--refit", "{t}/m.json", "-o", "{t}/c.json"],
])
def test_scipy_missing_is_one_line_naming_the_extra(tmp_path, args):
    (tmp_path / "m.json").write_text('{"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "records": []}')
    r = run(*[a.replace("{t}", str(tmp_path)) for a in args], prelude="import sys; sys.modules['scipy'] = None")
    one_error_line(r, 2, "needs scipy", "pip install scipy (or, in a clone of mlaplan, pip install '.[calibrate]')")


# 10. A validation that compared nothing has not passed.

def test_validate_that_measured_nothing_fails(tmp_path):
    pytest.importorskip("scipy", reason="validate ranks with scipy (pip install .[calibrate])")
    rec = {"cache": [100], "new": [10], "page_size": 16, "buffer_tokens": 64, "policy": "packed", "workload": "w",
           "scenario": "s", "eager_ms": 1.0, "graph_ms": None}
    (tmp_path / "m.json").write_text(json.dumps({"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "records": [rec]}))
    r = run("mlaplan.calibrate.validate", "--cost", COST, "--measured", str(tmp_path / "m.json"), "--timing", "graph",
            "--json", str(tmp_path / "rep.json"))
    one_error_line(r, 1, "nothing was measured")
    assert r.stdout == "" and not (tmp_path / "rep.json").exists()


@pytest.mark.parametrize("change,args,message", [
    ({"records": []}, [], "records: empty"),
    ({"eager_ms": 1e400}, [], "1e400 is past a double's range"),  # JSON's grammar takes it; it read as infinity
    ({"path": "bogus"}, [], "path: 'bogus' is not one of"),
    ({"iterations": -1}, [], "iterations: expected a whole number"),
    ({"launches": [1, 2]}, [], "launches: expected {kind"),
    ({"dispatch_probe_ms": 5e-324}, [], "dispatch_probe_ms: expected the probe's ms (a number from 0.001 to 10000)"),
    ({}, ["--policy", "bogus"], "--policy: it chooses what to measure"),
    ({}, ["--model", "kimi-k2"], "--model: it chooses what to measure"),
    ({"drop": "model"}, [], "model: missing"),  # the check that the cost file prices these runs needs it
    ({"drop": "tp"}, [], "tp: missing"),
])
def test_validate_refuses_bad_measured_files_and_options(tmp_path, change, args, message):
    pytest.importorskip("scipy", reason="validate ranks with scipy (pip install .[calibrate])")
    rec = {"cache": [100], "new": [10], "page_size": 16, "buffer_tokens": 64, "policy": "packed", "workload": "w",
           "scenario": "s", "eager_ms": 1.0, "graph_ms": 1.0}
    doc = {"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "records": [rec]}
    if "records" in change:
        doc["records"] = change["records"]
    elif "drop" in change:
        del doc[change["drop"]]
    else:
        rec.update(change)
    text = json.dumps(doc).replace("1e+400", "1e400").replace("Infinity", "1e400")
    (tmp_path / "m.json").write_text(text)
    r = run("mlaplan.calibrate.validate", "--cost", COST, "--measured", str(tmp_path / "m.json"), *args,
            "--json", str(tmp_path / "rep.json"))
    one_error_line(r, 2, message)
    assert r.stdout == "" and not (tmp_path / "rep.json").exists()


def test_json_keys_given_twice_are_refused(tmp_path):
    (tmp_path / "d.json").write_text('{"a": 1, "a": 2}')
    with pytest.raises(_files.InputError, match="key 'a' given twice"):
        _files.read_json(str(tmp_path / "d.json"), "a file")


# Runs priced by a cost file for other runs: refused, naming the field, before any time is spent.

@pytest.mark.parametrize("fields,message", [
    ({"model": "kimi-k2", "tp": 8}, "model: 'kimi-k2', but"),
    ({"model": "deepseek-v3", "tp": 1}, "tp: 1, but"),
    ({"model": "deepseek-v3", "tp": 8, "attention": "fa3"}, "attention: 'fa3', but"),
])
def test_validate_refuses_runs_its_cost_file_does_not_price(tmp_path, fields, message):
    pytest.importorskip("scipy", reason="validate ranks with scipy (pip install .[calibrate])")
    rec = {"cache": [100], "new": [10], "page_size": 16, "buffer_tokens": 64, "policy": "packed", "workload": "w",
           "scenario": "s", "eager_ms": 1.0, "graph_ms": 1.0}
    m = tmp_path / "m.json"
    m.write_text(json.dumps({"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, **fields, "records": [rec]}))
    r = run("mlaplan.calibrate.validate", "--cost", COST, "--measured", str(m), "--json", str(tmp_path / "rep.json"))
    one_error_line(r, 2, f"{m}: {message} {COST} prices", "a cost file for")
    assert r.stdout == "" and not (tmp_path / "rep.json").exists()


@pytest.mark.parametrize("args,message", [
    (["--model", "kimi-k2"], "--model: kimi-k2, but"),
    (["--tp", "1"], "--tp: 1, but"),
    (["--attention", "cudnn"], "--attention: cudnn runs cudnn here, but"),  # the example file names flash
])
def test_validate_refuses_to_measure_what_its_cost_file_does_not_price(tmp_path, args, message):
    """Before a GPU's time goes on it; the file's model and TP are the defaults."""
    pytest.importorskip("scipy", reason="validate ranks with scipy (pip install .[calibrate])")
    if args[0] == "--attention":
        pytest.importorskip("torch", reason="the kernel is resolved on a torch device (pip install .[prefill])")
    scen = os.path.join(ROOT, "docs", "data", "cost-validation", "seed-71", "short-chat.json")
    r = run("mlaplan.calibrate.validate", "--cost", COST, "--scenarios", scen, "--device", "cpu", *args,
            "--save", str(tmp_path / "m.json"))
    one_error_line(r, 2, message, COST)
    assert list(tmp_path.iterdir()) == []


def test_validate_measured_without_a_cost_file_is_refused(tmp_path):
    m = tmp_path / "m.json"
    m.write_text('{"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "records": []}')
    one_error_line(run("mlaplan.calibrate.validate", "--measured", str(m)), 2, "--measured: without --cost", "--cost")
