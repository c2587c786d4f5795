"""The fourth hardening round's cases for `python -m mlaplan.calibrate` and its validate (issue 61): options
with no effect in the mode given are refused, saved times a fit cannot use are refused up front, every
file the fit writes is one mlaplan reads, the fit's work is bounded and shows progress, a signal ends
either command within a second (its interpreter's teardown skipped), those that measure nothing never
import torch, and validate's reports stay strict JSON with the user's names escaped. Most cases run in
process (entry, as the command line runs it); those about warnings, signals and imports run the module."""
import copy
import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("scipy", reason="the fit and the ranking need scipy (pip install .[calibrate])")

from test_calibrate import synthetic  # noqa: E402
from test_hostile import ENV, ROOT, interruptible, one_error_line, reaped, run  # noqa: E402

from mlaplan import _mlaplan  # noqa: E402
from mlaplan.calibrate import fit  # noqa: E402
from mlaplan.calibrate.__main__ import entry  # noqa: E402
from mlaplan.calibrate.validate import main as validate_main  # noqa: E402

COST = os.path.join(ROOT, "tests", "data", "cost", "deepseek-v3-tp8-example.json")
EAGER_COST = os.path.join(ROOT, "tests", "data", "cost", "deepseek-v3-tp8-eager-example.json")
CLI = os.path.join(ROOT, "build", "mlaplan")
SCENARIO = os.path.join(ROOT, "scenarios", "worked-example.json")


def measurements(records):
    return {"format": "mlaplan-calibration-measurements", "model": "deepseek-v3", "tp": 8, "heads": 16, "dtype": "bf16",
            "attention": "flash", "merge": "fused (Triton)", "gpu": "Synthetic GPU", "compute_capability": "9.0", "sms": 132,
            "date": "2026-12-01", "records": records}


def held_out(points=12):
    """validate --save's shape: two workloads, graph and eager times (eager 1.3 x graph)."""
    recs = []
    for i, w in enumerate(("coding", "chat")):
        for r in synthetic(points, 0.01, seed=10 + i, max_buffer=8192):
            recs.append(dict(r, eager_ms=1.3 * r["graph_ms"], eager_spread_ms=0.01, workload=w, scenario=f"{w}-{len(recs) % 3}"))
    return {"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "records": recs}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("saved")
    (d / "m.json").write_text(json.dumps(measurements(synthetic(30, 0.01))))
    (d / "v.json").write_text(json.dumps(held_out()))
    return d


def in_process(capsys, command, args, code=2, *words):
    """The command's entry run in this process: exit `code` and one error line holding `words`."""
    got = entry(args, command)
    err = capsys.readouterr().err.splitlines()
    assert got == code and len(err) == 1 and err[0].startswith("mlaplan: error: "), (got, err)
    for w in words:
        assert w in err[0], err
    return err[0]


# Run first in a child: an interpreter whose teardown takes seconds, as torch's does on a loaded 2-core
# host (0.4 s idle). An interrupted command, having written nothing, must not wait for it.
SLOW_TEARDOWN = "import atexit, time\natexit.register(time.sleep, 5)\n"
# Within a second of the signal, as docs/interface.md says; the rest is the test's own share of a
# loaded 2-core machine (starting the clock, reaping the child).
STOP_S = 1.5


def module(name, *args, prelude=SLOW_TEARDOWN, **kwargs):
    """`python -m name args` as a terminal starts it (interruptible), after `prelude`."""
    code = f"{prelude}import runpy, sys\nsys.argv = {[name, *args]!r}\nrunpy.run_module({name!r}, run_name='__main__')"
    return interruptible([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                         **{"cwd": ROOT, **kwargs})


def stopped(p, sig, name):
    """Signals the command: it exits 130 within STOP_S, its teardown skipped, with one line on stderr
    (all of stderr from now). Returns the seconds it took."""
    sent = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    took = time.monotonic() - sent
    assert p.returncode == 130 and err.strip().splitlines() == [f"mlaplan: error: {name}: interrupted; nothing written"], \
        (p.returncode, err)
    assert took < STOP_S, took
    return took


# 1. Options that do nothing in the mode given: refused, naming both.

@pytest.mark.parametrize("option", [["--cpu-wait-s", "5"], ["--settle-ms", "250"], ["--reheat-ms", "10"], ["--max-seconds", "9"],
                                    ["--points", "160"], ["--reps", "5"], ["--warmup", "2"], ["--host-reps", "3"], ["--seed", "1"],
                                    ["--model", "kimi-k2"], ["--tp", "8"], ["--dtype", "bf16"], ["--attention", "flash"],
                                    ["--device", "cpu"], ["--max-total-context", "1000"], ["--buffer-tokens", "8192"]])
def test_refit_refuses_measuring_options(saved, tmp_path, capsys, option):
    # Given at its default value too (--reps 5, --points 160): given is given.
    line = in_process(capsys, None, ["--refit", str(saved / "m.json"), *option, "-o", str(tmp_path / "c.json")], 2,
                      f"{option[0]}: it only matters when measuring", f"drop {option[0]} or --refit")
    assert "--refit measures nothing" in line and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option,words", [(["--no-check", "--buffer-tokens", "8192"], "--buffer-tokens: it sets the buffers of the "
                                                                                    "workload points"),
                                          (["--workload-weight", "8"], "--workload-weight: it weighs the workload points")])
def test_scenario_options_without_scenarios_are_refused(tmp_path, capsys, option, words):
    in_process(capsys, None, ["--workloads", "none", *option, "-o", str(tmp_path / "c.json")], 2, words,
               "give --scenarios or --workloads")


@pytest.mark.parametrize("option", [["--rounds", "2"], ["--batches", "1"], ["--max-seconds", "9"], ["--reheat-ms", "0"],
                                    ["--cpu-wait-s", "5"], ["--settle-ms", "250"], ["--reps", "5"], ["--warmup", "2"],
                                    ["--buffer-tokens", "8192"], ["--device", "cpu"], ["--attention", "flash"],
                                    ["--policy", "all"]])
def test_validate_measured_refuses_measuring_options(saved, capsys, option):
    in_process(capsys, validate_main, ["--cost", COST, "--measured", str(saved / "v.json"), *option], 2,
               f"{option[0]}: it chooses what to measure or how", f"drop {option[0]} or --measured")


@pytest.mark.parametrize("args,words", [
    (["--scenarios", "s.json", "--save", "m.json", "-o", "r.md"], ["--output: it concerns the report", "give --cost FILE"]),
    (["--scenarios", "s.json", "--save", "m.json", "--timing", "eager"], ["--timing: it concerns the report"]),
    (["--scenarios", "s.json"], ["--save: without --cost", "the runs measured would be lost"]),
])
def test_validate_without_a_cost_file_refuses_what_needs_one(capsys, args, words):
    in_process(capsys, validate_main, args, 2, *words)


# 2. Times a fit cannot use, refused up front; every file the fit writes is one mlaplan reads.

def test_a_huge_time_is_one_line_without_numpys_warnings(saved, tmp_path):
    doc = json.loads((saved / "m.json").read_text())
    doc["records"][0]["graph_ms"] = 1e308  # the reader took it; the fit then wrote "NaN" after RuntimeWarnings
    (tmp_path / "m.json").write_text(json.dumps(doc))
    r = run("mlaplan.calibrate", "--refit", str(tmp_path / "m.json"), "-o", str(tmp_path / "c.json"))
    one_error_line(r, 2, "m.json: records[0].graph_ms: expected a time in ms from 1e-06 to 3.6e+06", "give a file mlaplan wrote")
    assert "Warning" not in r.stderr and not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("key,value", [("graph_ms", 5e-324), ("graph_ms", 0), ("eager_ms", 3.6e6 + 1), ("eager_spread_ms", 3.7e6),
                                       ("host_ms", 1e300)])
def test_times_outside_a_nanosecond_to_an_hour_are_refused(saved, tmp_path, capsys, key, value):
    doc = json.loads((saved / "m.json").read_text())
    doc["records"][3][key] = value
    (tmp_path / "m.json").write_text(json.dumps(doc))
    in_process(capsys, None, ["--refit", str(tmp_path / "m.json"), "-o", str(tmp_path / "c.json")], 2, f"records[3].{key}: expected")


@pytest.mark.parametrize("ms", [1e-6, 3.6e6])
def test_every_file_the_fit_writes_is_one_mlaplan_reads(saved, tmp_path, capsys, ms):
    """A layer of a nanosecond fits; one of an hour gives per_batch_us past the 1e6 the C++ reader
    takes, which calibrate wrote and `run --cost` then refused: now refused before writing."""
    doc = json.loads((saved / "m.json").read_text())
    for r in doc["records"]:
        r["graph_ms"] = ms
    (tmp_path / "m.json").write_text(json.dumps(doc))
    got = entry(["--refit", str(tmp_path / "m.json"), "-o", str(tmp_path / "c.json")])
    err = capsys.readouterr().err.splitlines()
    if got == 2:
        assert len(err) == 1 and "past the 1e+06 (a second per unit) a cost file holds" in err[0], err
        assert not (tmp_path / "c.json").exists()
        return
    assert got == 0 and err == []
    _mlaplan.read_cost_model(str(tmp_path / "c.json"))
    if os.access(CLI, os.X_OK):  # the CLI itself, where it is built
        r = subprocess.run([CLI, "run", SCENARIO, "--cost", str(tmp_path / "c.json"), "--policy", "packed"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr


def test_too_few_points_for_cross_validation_write_null_not_garbage(saved, tmp_path, capsys):
    # 14 points: every fold's training set is smaller than the 13 terms; np.empty's bytes were reported.
    doc = json.loads((saved / "m.json").read_text())
    doc["records"] = doc["records"][:14]
    (tmp_path / "m.json").write_text(json.dumps(doc))
    assert entry(["--refit", str(tmp_path / "m.json"), "-o", str(tmp_path / "c.json")]) == 0
    cost = json.loads((tmp_path / "c.json").read_text())
    assert cost["fit"]["cross_validated_median_abs_error"] is None and cost["fit"]["cross_validated_p90_abs_error"] is None
    assert "cross-validated too few points for any fold" in capsys.readouterr().out


def test_json_text_names_a_figure_that_is_not_finite():
    from mlaplan.calibrate.cost_file import json_text

    with pytest.raises(ValueError, match=r"r.json: fit\.points\[1\] is not a finite number"):
        json_text({"fit": {"points": [1.0, float("nan")]}}, "r.json")


# 3. The fit's work: bounded per record, priced once per batch, progress, Ctrl-C.

def test_a_record_past_the_pricing_bound_is_refused_before_any_fit(saved, tmp_path, capsys):
    doc = json.loads((saved / "m.json").read_text())
    doc["records"][0].update(cache=[1] * (1 << 20), new=[1] * (1 << 20), buffer_tokens=65536)  # 2^20 x 32 buffer-fulls
    (tmp_path / "m.json").write_text(json.dumps(doc))
    start = time.monotonic()
    in_process(capsys, None, ["--refit", str(tmp_path / "m.json"), "-o", str(tmp_path / "c.json")], 2,
               "records[0]: 1048576 sequences over 32 buffer-fulls", "at most 4,194,304")
    assert time.monotonic() - start < 20


def test_the_fit_says_how_far_it_is(monkeypatch, capsys):
    monkeypatch.setattr(fit, "PROGRESS_S", 0.0)
    recs = [dict(r, eager_ms=1.5 * r["graph_ms"]) for r in synthetic(20, 0.01)]
    g = fit.fit_records(recs, 16, 132, geometries=[(128, 1)])
    assert fit.fit_host(recs, g, 16, 132, False) is not None
    err = capsys.readouterr().err.splitlines()
    assert any(x.startswith("calibrate: fitting the graph coefficients: geometry 128 x 1, 20 of 20 points priced") for x in err)
    assert any(x.startswith("calibrate: fitting the host costs on 20 runs: pricing 1, 20 of 20 runs") for x in err)
    from mlaplan.calibrate.validate import read_cost, report

    report(read_cost(COST), held_out(6)["records"], "graph")
    assert "validate: pricing the runs: 11 of 12 runs priced" in capsys.readouterr().err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_a_long_fit_within_a_second(tmp_path, sig):
    # max over 2048 sequences and 2048 buffer-fulls: about 0.05 s a pricing, 80 of them per geometry.
    recs = [dict(cache=[2048 * 7] * 2048, new=[1 + i % 7] * 2048, page_size=16, buffer_tokens=16384, policy="max",
                 graph_ms=5.0 + i) for i in range(80)]
    (tmp_path / "m.json").write_text(json.dumps(measurements(recs)))
    prelude = SLOW_TEARDOWN + "import mlaplan.calibrate.fit as f\nf.PROGRESS_S = 0.2\n"
    with reaped(module("mlaplan.calibrate", "--refit", str(tmp_path / "m.json"), "-o", str(tmp_path / "c.json"),
                       prelude=prelude)) as p:
        line = p.stderr.readline()  # the first progress line: the fit is under way
        assert line.startswith("calibrate: fitting the graph coefficients"), line
        stopped(p, sig, "calibrate")
    assert sorted(os.listdir(tmp_path)) == ["m.json"]


def test_a_signal_stops_validates_measuring_within_a_second(tmp_path):
    """Measuring on the CPU, torch loaded: the command and the interpreter both end within the second."""
    pytest.importorskip("torch", reason="the executor needs torch")
    scen = tmp_path / "s.json"
    scen.write_text(json.dumps({"scenarios": [
        {"name": f"b{i}", "page_size": 16, "buffer_token_size": 64, "max_chunks": 64, "cache_lengths": [200, 40],
         "input_row_offsets": [0, 12, 20]} for i in range(400)]}))
    with reaped(module("mlaplan.calibrate.validate", "--scenarios", str(scen), "--save", str(tmp_path / "m.json"), "--device",
                       "cpu", "--model", "deepseek-v2-lite", "--reps", "1", "--warmup", "0", "--buffer-tokens", "32",
                       "--policy", "packed")) as p:
        line = p.stderr.readline()  # the first batch measured: torch is loaded and the loop under way
        assert line.startswith("validate: s b0 measured"), line
        stopped(p, signal.SIGTERM, "validate")
    assert sorted(os.listdir(tmp_path)) == ["s.json"]


NO_TORCH = ("import sys\nclass NoTorch:\n    def find_spec(self, name, *rest):\n"
            "        if name.split('.')[0] == 'torch':\n            raise ImportError('torch is hidden')\n"
            "sys.meta_path.insert(0, NoTorch())\n")


def test_refit_and_measured_never_import_torch(saved, tmp_path):
    """The commands that need no GPU run where torch cannot be imported (its import alone took 2 s of
    their start): the fit, validate's report of saved runs, and --help."""
    for args in (["--refit", str(saved / "m.json"), "-o", str(tmp_path / "c.json")], ["--refit", "x.json", "--help"]):
        with reaped(module("mlaplan.calibrate", *args, prelude=NO_TORCH)) as p:
            out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and err == "", err
    assert "usage: python -m mlaplan.calibrate" in out and "--refit FILE.json" in out
    _mlaplan.read_cost_model(str(tmp_path / "c.json"))
    with reaped(module("mlaplan.calibrate.validate", "--cost", COST, "--measured", str(saved / "v.json"), prelude=NO_TORCH)) as p:
        out, err = p.communicate(timeout=120)
    assert p.returncode in (0, 1) and err == "" and "| workload | batches |" in out, err


@pytest.mark.parametrize("name,args,instead", [
    ("mlaplan.calibrate", ["-o", "c.json"], "or fit saved measurements with --refit"),
    ("mlaplan.calibrate.validate", ["--scenarios", SCENARIO, "--save", "m.json"], "or report saved runs with --measured"),
])
def test_measuring_without_torch_is_one_line(tmp_path, name, args, instead):
    with reaped(module(name, *args, prelude=NO_TORCH, cwd=tmp_path)) as p:
        _, err = p.communicate(timeout=120)
    assert p.returncode == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("mlaplan: error: measuring needs torch (torch is hidden): pip install torch (or, in a clone of "
                          "mlaplan, pip install '.[calibrate]'), " + instead), err
    assert os.listdir(tmp_path) == []


def test_a_guided_policys_cost_file_is_read_once(tmp_path, monkeypatch):
    import mlaplan._files as files
    from mlaplan.calibrate import grid
    from mlaplan.calibrate.records import read_measurements

    reads = []
    real = files.read_json
    monkeypatch.setattr(files, "read_json", lambda path, what: reads.append(path) or real(path, what))
    monkeypatch.setattr(grid, "_GUIDES", {})
    policy = f"guided:{COST}"
    recs = [dict(r, policy=policy) for r in synthetic(15, 0.01)]
    (tmp_path / "m.json").write_text(json.dumps(measurements(recs)))
    doc = read_measurements(str(tmp_path / "m.json"), "mlaplan-calibration-measurements", "--measurements")
    g = fit.fit_records(doc["records"], 16, 132, geometries=[(128, 1)])
    assert reads.count(COST) == 1 and g.points == 15
    # Priced as the file itself prices it.
    p = grid.Point(recs[0]["cache"], recs[0]["new"], 16, recs[0]["buffer_tokens"], policy)
    ref = _mlaplan.cost_features(*p.arrays, 16, p.buffer_tokens, policy, 16)
    assert grid.features(p, 16) == {k: v for k, v in ref.items() if k != "path"}


def test_a_fifo_as_a_guided_cost_file_stops_on_ctrl_c(saved, tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    doc = json.loads((saved / "v.json").read_text())
    doc["records"][0]["policy"] = f"guided:{fifo}"
    (tmp_path / "v.json").write_text(json.dumps(doc))
    with reaped(module("mlaplan.calibrate.validate", "--cost", COST, "--measured", str(tmp_path / "v.json"))) as p:
        # A writer that never writes, opened once the command opens the FIFO (ENXIO before): it then
        # waits in read, as on a slow pipe.
        deadline, writer = time.monotonic() + 60, None
        while writer is None and time.monotonic() < deadline and p.poll() is None:
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.05)
        assert writer is not None, p.communicate()[1]
        time.sleep(0.5)
        try:
            stopped(p, signal.SIGINT, "validate")
        finally:
            os.close(writer)


# 4. validate's reports: no traceback for a file pricing 0, names escaped, JSON strict.

def test_zero_coefficients_under_eager_timing_are_a_miss_not_a_traceback(saved, tmp_path, capsys):
    cost = json.loads(open(EAGER_COST).read())
    cost["coefficients"] = {k: 0 for k in cost["coefficients"]}
    (tmp_path / "zero.json").write_text(json.dumps(cost))
    got = entry(["--cost", str(tmp_path / "zero.json"), "--measured", str(saved / "v.json"), "--timing", "eager", "--json",
                 str(tmp_path / "r.json")], validate_main)
    captured = capsys.readouterr()
    assert got == 1 and captured.err == "" and "none predicted (the file prices its graph time 0)" in captured.out
    ratio = json.loads((tmp_path / "r.json").read_text())["ratio"]
    assert ratio["misses"] and all(x["predicted"] is None for x in ratio["misses"])


def test_a_workload_name_with_control_bytes_is_escaped(saved, tmp_path, capsys):
    doc = json.loads((saved / "v.json").read_text())
    doc["records"][0]["workload"] = "evil\x1b[31mred\x07"
    (tmp_path / "v.json").write_text(json.dumps(doc))
    entry(["--cost", COST, "--measured", str(tmp_path / "v.json")], validate_main)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "evil\\x1b[31mred\\x07" in out


@pytest.mark.parametrize("eager,graph", [(0.003, 1e-300), (1e308, 1e308)])
def test_validate_refuses_times_that_made_infinity(saved, tmp_path, capsys, eager, graph):
    doc = copy.deepcopy(json.loads((saved / "v.json").read_text()))
    for r in doc["records"][:2]:
        r.update(eager_ms=eager, graph_ms=graph)
    (tmp_path / "v.json").write_text(json.dumps(doc))
    in_process(capsys, validate_main, ["--cost", EAGER_COST, "--measured", str(tmp_path / "v.json"), "--timing", "eager",
                                       "--json", str(tmp_path / "r.json")], 2, "records[0].")
    assert not (tmp_path / "r.json").exists()
