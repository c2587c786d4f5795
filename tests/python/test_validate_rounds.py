"""validate --rounds: each setting measured in several rounds spread over time, kept as their median
with each round's eager time and their spread, and the report saying how far the rounds spread."""
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time

import pytest

from mlaplan.calibrate.measure import combine_rounds

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EAGER_COST = os.path.join(ROOT, "tests", "data", "cost", "deepseek-v3-tp8-eager-example.json")


def rec(eager, graph=None, spread=0.1, **kw):
    return {"cache": [100], "new": [10], "page_size": 16, "buffer_tokens": 64, "policy": "packed", "iterations": 2,
            "eager_ms": eager, "eager_spread_ms": spread, "graph_ms": graph, **kw}


def test_combine_rounds_keeps_the_median_and_the_spread():
    got = combine_rounds([rec(3.0, 1.0, 0.2), rec(5.5, 1.2, 0.1), rec(4.0, 0.9, 0.4)])
    assert got["eager_ms"] == 4.0 and got["graph_ms"] == 1.0 and got["eager_spread_ms"] == 0.2
    assert got["eager_rounds_ms"] == [3.0, 5.5, 4.0] and got["eager_round_spread_ms"] == pytest.approx(2.5)
    # No graph time in any round (the CPU): none kept.
    assert combine_rounds([rec(1.0), rec(2.0)])["graph_ms"] is None
    # One round is the record as it was: no new fields.
    one = rec(2.0)
    assert combine_rounds([one]) is one


def test_combine_rounds_keeps_each_stamped_kinds_median():
    got = combine_rounds([rec(3.0, 1.0, host_launch_us={"attention": 200.0, "merge": 50.0}, host_issue_ms=1.0),
                          rec(4.0, 1.0, host_launch_us={"attention": 260.0}, host_issue_ms=1.4),
                          rec(5.0, 1.0, host_launch_us={"attention": 220.0, "merge": 70.0}, host_issue_ms=1.2),
                          rec(6.0, 1.0)])  # a round without stamps is left out of them
    assert got["host_launch_us"] == {"attention": 220.0, "merge": 60.0} and got["host_issue_ms"] == 1.2
    # A round refused (out of memory, say) is what the setting records.
    refused = dict(rec(1.0), refused="out of memory")
    assert combine_rounds([rec(2.0), refused])["refused"] == "out of memory"


def run(*args):
    return subprocess.run([sys.executable, "-m", "mlaplan.calibrate.validate", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


def test_validate_rounds_measures_every_setting_n_times(tmp_path):
    pytest.importorskip("torch", reason="the executor needs torch")
    pytest.importorskip("scipy", reason="validate ranks with scipy (pip install .[calibrate])")
    scen = tmp_path / "tiny.json"
    scen.write_text(json.dumps({"scenarios": [
        {"name": "a", "page_size": 16, "buffer_token_size": 64, "max_chunks": 64, "cache_lengths": [200, 40],
         "input_row_offsets": [0, 12, 20]}]}))
    saved, report = tmp_path / "m.json", tmp_path / "r.json"
    r = run("--model", "deepseek-v2-lite", "--tp", "8", "--device", "cpu", "--attention", "flash", "--reps", "1",
            "--warmup", "0", "--settle-ms", "0", "--rounds", "3", "--policy", "packed,even-split", "--buffer-tokens",
            "32,64", "--scenarios", str(scen), "--save", str(saved))
    assert r.returncode == 0, r.stderr
    doc = json.loads(saved.read_text())
    assert doc["rounds"] == 3 and len(doc["records"]) == 4
    # What calibrate --host-from needs to pool these runs: the type timed (float32 on the CPU) and the day.
    assert doc["dtype"] == "fp32" and doc["date"] == datetime.date.today().isoformat()
    for x in doc["records"]:
        assert len(x["eager_rounds_ms"]) == 3 and x["eager_ms"] == statistics.median(x["eager_rounds_ms"])
        assert x["eager_round_spread_ms"] == pytest.approx(max(x["eager_rounds_ms"]) - min(x["eager_rounds_ms"]))
    # The rounds' spread in the eager report, as a line and in the JSON; the example file restated for
    # the small model measured (validate refuses a file for another model).
    cost = tmp_path / "cost.json"
    cost.write_text(json.dumps(dict(json.loads(open(EAGER_COST).read()), model="deepseek-v2-lite")))
    r = run("--cost", str(cost), "--measured", str(saved), "--timing", "eager", "--json", str(report))
    assert r.returncode in (0, 1), r.stderr
    assert "Between rounds" in r.stdout
    w = json.loads(report.read_text())["workloads"]["tiny"]
    assert 0 <= w["eager_round_spread_median"] <= w["eager_round_spread_p90"]


def test_validate_rounds_refused_outside_its_range(tmp_path):
    r = run("--rounds", "0", "--scenarios", "x.json")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("mlaplan: error:") and "--rounds" in lines[0]


def test_a_bad_round_spread_is_one_line(tmp_path):
    bad = rec(2.0, eager_round_spread_ms="wide", workload="w", scenario="s")
    (tmp_path / "m.json").write_text(json.dumps({"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "records": [bad]}))
    r = run("--cost", EAGER_COST, "--measured", str(tmp_path / "m.json"), "--timing", "eager")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "records[0].eager_round_spread_ms" in lines[0], r.stderr


def test_runs_on_another_gpu_are_one_line(tmp_path):
    """An H200 file does not price an H100's runs (its device times and its host's costs are the
    H200's); runs on the CPU, the executor's own check, it prices as before."""
    for gpu, code in (("NVIDIA H100 80GB HBM3", 2), ("CPU", 0), ("NVIDIA H200", 0)):
        m = tmp_path / "m.json"
        m.write_text(json.dumps({"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "gpu": gpu,
                                 "records": [rec(2.0, 1.0, workload="w", scenario="s", dispatch_probe_ms=0.7)]}))
        r = run("--cost", EAGER_COST, "--measured", str(m), "--timing", "eager", "-o", str(tmp_path / "r.md"))
        lines = r.stderr.strip().splitlines()
        if code == 2:
            assert r.returncode == 2 and len(lines) == 1, r.stderr
            assert "gpu: 'NVIDIA H100 80GB HBM3', but" in lines[0] and "'NVIDIA H200'" in lines[0], r.stderr
        else:
            assert r.returncode in (0, 1) and "gpu" not in r.stderr, r.stderr


def test_runs_of_the_other_loop_are_one_line(tmp_path):
    """A file of the engines' loop does not price runs of mlaplan's fused loop, nor one of the fused loop
    the engines' runs: one line naming up_projection and calibrate --loop."""
    fused = tmp_path / "fused.json"
    doc = json.load(open(EAGER_COST))
    doc["kernels"]["up_projection"] = "fused"
    fused.write_text(json.dumps(doc))
    for cost, loop, code in ((EAGER_COST, "fused", 2), (str(fused), None, 2), (str(fused), "fused", 0), (EAGER_COST, None, 0)):
        m = tmp_path / "m.json"
        m.write_text(json.dumps({"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8,
                                 **({"up_projection": loop} if loop else {}),
                                 "records": [rec(2.0, 1.0, workload="w", scenario="s")]}))
        r = run("--cost", cost, "--measured", str(m), "--timing", "graph", "-o", str(tmp_path / "r.md"))
        lines = r.stderr.strip().splitlines()
        if code == 2:
            assert r.returncode == 2 and len(lines) == 1 and "up_projection:" in lines[0] and "--loop" in lines[0], r.stderr
        else:
            assert r.returncode in (0, 1) and "up_projection" not in r.stderr, r.stderr


# The probes (a time above 0), and the host's own figures: the launch stamps' costs per kind and
# their issue time, and the dispatch timed alone.
@pytest.mark.parametrize("key,value", [
    *[(probe, bad) for probe in ("cpu_probe_ms", "dispatch_probe_ms") for bad in (-1, 0, "fast", True, 1e9)],
    ("host_launch_us", {"attention": -1.0}), ("host_launch_us", {"warp": 3.0}), ("host_launch_us", {"merge": "slow"}),
    ("host_launch_us", {"fill": True}), ("host_launch_us", [1, 2]), ("host_launch_us", {"gather": 1e9}),
    ("host_issue_ms", -2.0), ("host_issue_ms", "soon"), ("host_ms", [1])])
def test_a_bad_probe_or_host_figure_is_one_line(tmp_path, key, value):
    bad = rec(2.0, workload="w", scenario="s", **{key: value})
    (tmp_path / "m.json").write_text(json.dumps({"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "records": [bad]}))
    r = run("--cost", EAGER_COST, "--measured", str(tmp_path / "m.json"), "--timing", "eager")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and f"records[0].{key}" in lines[0], r.stderr


def test_a_file_given_twice_is_one_line(tmp_path):
    m = tmp_path / "m.json"
    m.write_text(json.dumps({"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "records": [rec(2.0, workload="w", scenario="s")]}))
    same = os.path.join(str(tmp_path), ".", "m.json")  # the same file by another spelling
    for args in (["--measured", str(m), same], ["--measured", str(m), "--measured", str(m)]):
        r = run("--cost", EAGER_COST, *args, "--timing", "eager")
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and "given twice" in lines[0] and "give each file once" in lines[0], r.stderr
    # The option given twice takes both files (argparse would keep the last alone).
    m2 = tmp_path / "m2.json"
    m2.write_text(json.dumps({"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8, "records": [rec(3.0, workload="v", scenario="t")]}))
    out = tmp_path / "r.json"
    r = run("--cost", EAGER_COST, "--measured", str(m), "--measured", str(m2), "--timing", "eager", "--json", str(out))
    assert r.returncode in (0, 1), r.stderr
    assert set(json.loads(out.read_text())["workloads"]) == {"w", "v"}
    # calibrate alike: a --refit file again as --host-from would be fitted and tested on itself
    r = subprocess.run([sys.executable, "-m", "mlaplan.calibrate", "--refit", str(m), "--host-from", str(m), "-o",
                        str(tmp_path / "c.json")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "given twice (--refit and --host-from)" in r.stderr, r.stderr
    assert not (tmp_path / "c.json").exists()


def test_validate_batches_measures_the_first_n_of_each_file(tmp_path):
    pytest.importorskip("torch", reason="the executor needs torch")
    files = []
    for w in ("one", "two"):
        f = tmp_path / f"{w}.json"
        f.write_text(json.dumps({"scenarios": [
            {"name": f"{w}-{i}", "page_size": 16, "buffer_token_size": 64, "max_chunks": 64, "cache_lengths": [100 + i],
             "input_row_offsets": [0, 8]} for i in range(3)]}))
        files.append(str(f))
    saved = tmp_path / "m.json"
    r = run("--model", "deepseek-v2-lite", "--tp", "8", "--device", "cpu", "--attention", "flash", "--reps", "1",
            "--warmup", "0", "--settle-ms", "0", "--batches", "2", "--policy", "packed", "--buffer-tokens", "64",
            "--reheat-ms", "5", "--scenarios", *files, "--save", str(saved))
    assert r.returncode == 0, r.stderr
    doc = json.loads(saved.read_text())
    assert [x["scenario"] for x in doc["records"]] == ["one-0", "one-1", "two-0", "two-1"] and doc["reheat_ms"] == 5
    r = run("--batches", "0", "--scenarios", "x.json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--batches" in r.stderr


def _timing_orders(monkeypatch) -> list:
    """measure_point replaced by one that records (buffer, policy, graph_first) in the list returned."""
    pytest.importorskip("torch", reason="the executor needs torch")
    import mlaplan.calibrate.measure as m

    seen = []

    def fake(p, *args, graph_first=False, **kw):
        seen.append((p.buffer_tokens, p.policy, graph_first))
        return {"cache": p.cache, "new": p.new, "page_size": p.page_size, "buffer_tokens": p.buffer_tokens,
                "policy": p.policy, "eager_ms": 1.0, "eager_spread_ms": 0.0, "graph_ms": None}

    monkeypatch.setattr(m, "measure_point", fake)
    return seen


def _validate_measures(*options):
    from mlaplan.calibrate import validate

    scen = os.path.join(ROOT, "docs", "data", "cost-validation", "seed-71", "short-chat.json")
    validate.measure(validate.parser().parse_args(["--scenarios", scen, "--device", "cpu", "--model", "deepseek-v2-lite",
                                                   *options]))


def test_validate_alternates_which_timing_comes_first(monkeypatch):
    """A step at the card's power cap times slower in whichever timing comes second: validate replays
    the graph first at every other setting, and at each setting in every other round."""
    seen = _timing_orders(monkeypatch)
    _validate_measures("--policy", "packed,even-split", "--buffer-tokens", "8192,16384", "--rounds", "2", "--batches", "1")
    assert len(seen) == 8
    first = {}
    for buffer, policy, g in seen:
        first.setdefault((buffer, policy), []).append(g)
    assert all(v in ([False, True], [True, False]) for v in first.values()), first  # each setting both ways
    assert sum(g for _, _, g in seen[:4]) == 2  # and half of a round's settings each way


def test_no_policy_keeps_one_timing_order(monkeypatch, capsys):
    """Six policies make an even row: alternating over the settings in order gave every policy one
    order at every buffer and batch (packed's eager always timed second). Each policy, and each
    buffer, now replays its graph first at half its settings, in validate and in calibrate."""
    seen = _timing_orders(monkeypatch)
    import mlaplan.calibrate.measure as m
    from mlaplan.calibrate.grid import interleave_workloads, scenario_points
    from mlaplan.prefill.schedule import POLICIES

    def halves(key):
        by = {}
        for buffer, policy, g in seen:
            by.setdefault(key(buffer, policy), []).append(g)
        return {k: (sum(v), len(v)) for k, v in by.items()}

    _validate_measures("--policy", ",".join(POLICIES), "--buffer-tokens", "8192,16384,32768,65536,131072", "--batches", "2")
    assert len(seen) == 2 * 5 * len(POLICIES)
    assert all(n == 2 * t for t, n in halves(lambda b, p: p).values()), halves(lambda b, p: p)
    assert all(n == 2 * t for t, n in halves(lambda b, p: b).values()), halves(lambda b, p: b)
    # Calibration's points, the workloads taking turns: each policy's alternate.
    seen.clear()
    c = os.path.join(ROOT, "docs", "data", "cost-calibration")
    points = interleave_workloads(scenario_points([os.path.join(c, "workloads-seed62", "short-chat.json"),
                                                   os.path.join(c, "workloads-seed61", "coding-agent.json")],
                                                  [8192, 16384, 65536]))
    m.measure_points(points[:72], None, None, "cpu", progress="calibrate")
    # Its progress every 25 points, with where the seconds went.
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("calibrate:")]
    assert [x.split(",")[0] for x in lines] == ["calibrate: 25 of 72 points", "calibrate: 50 of 72 points"]
    assert all(re.fullmatch(r"calibrate: \d+ of 72 points, \d+ s \((each phase under half a second|.* s .*)\)", x) for x in lines), lines
    for policy, (t, n) in halves(lambda b, p: p).items():
        assert t == n // 2, (policy, t, n)
    assert [g for _, p, g in seen if p == "packed"][:4] == [False, True, False, True]


def test_the_report_sets_the_timing_orders_apart():
    """Runs timed both ways round: the report gives each order's median signed error, so that an
    order effect shows; runs timed one way only: no such line."""
    pytest.importorskip("scipy", reason="validate checks scipy first (pip install .[calibrate])")
    from mlaplan import _mlaplan
    from mlaplan.calibrate.validate import markdown, predict_us, report

    cost = _mlaplan.read_cost_model(EAGER_COST)
    runs = []
    for i, buffer in enumerate([256, 512, 1024, 2048]):
        r = rec(1.0, buffer_tokens=buffer, workload="w", scenario="s", graph_first=i % 2 == 1)
        slow = 1.10 if r["graph_first"] else 1.02  # the graph timed after the eager runs: 2% slow, before: 10%
        r["graph_ms"] = predict_us(cost, r, "graph") / 1e3 * slow
        runs.append(r)
    order = report(cost, runs, "graph")["workloads"]["w"]["order"]
    assert order["graph_first"]["runs"] == order["eager_first"]["runs"] == 2
    assert order["graph_first"]["median_error"] == pytest.approx(1 / 1.10 - 1)
    assert order["eager_first"]["median_error"] == pytest.approx(1 / 1.02 - 1)
    assert "replayed their graph first" in markdown(report(cost, runs, "graph"), "c.json")
    one_way = report(cost, [dict(r, graph_first=False) for r in runs], "graph")
    assert "order" not in one_way["workloads"]["w"] and "replayed their graph first" not in markdown(one_way, "c.json")


def test_max_seconds_stops_before_the_next_round(tmp_path):
    """--max-seconds with --rounds: a batch keeps the rounds measured when the time ran out, each of its
    settings as often, and the batches after it are not measured (a batch's remaining rounds overran
    the time asked for by minutes on the GPU)."""
    pytest.importorskip("torch", reason="the executor needs torch")
    scen = tmp_path / "tiny.json"
    batch = {"page_size": 16, "buffer_token_size": 64, "max_chunks": 64, "cache_lengths": [200, 40],
             "input_row_offsets": [0, 12, 20]}
    scen.write_text(json.dumps({"scenarios": [dict(batch, name="a"), dict(batch, name="b")]}))
    saved = tmp_path / "m.json"
    # A nanosecond: over before the second round whatever the machine (the first batch is always measured).
    r = run("--model", "deepseek-v2-lite", "--tp", "8", "--device", "cpu", "--attention", "flash", "--reps", "1",
            "--warmup", "0", "--settle-ms", "0", "--rounds", "3", "--policy", "packed,even-split", "--buffer-tokens",
            "32,64", "--scenarios", str(scen), "--save", str(saved), "--max-seconds", "1e-9")
    assert r.returncode == 0, r.stderr
    assert "--max-seconds reached; tiny a measured in 1 of 3 rounds, the batches after it not" in r.stderr, r.stderr
    # Where the batch's seconds went: each phase of half a second or more, or that none took as long.
    assert re.search(r"validate: tiny a measured, 4 runs in \d+ s \((each phase under half a second|(\d+ s [a-zA-Z' ]+(, )?)+)\)\n",
                     r.stderr), r.stderr
    doc = json.loads(saved.read_text())
    assert [x["scenario"] for x in doc["records"]] == ["a"] * 4
    assert all("eager_rounds_ms" not in x and x.get("eager_ms") for x in doc["records"])


def test_cpu_speed_counts_its_waits(monkeypatch):
    """The time spent in cpu_speed.wait_for_full_speed is the phase cpu_wait, which validate reports per batch."""
    from mlaplan.prefill import cpu_speed, phases

    before = phases.seconds()
    # A fastest probe no real one can reach: the wait runs its whole 0.2 s.
    monkeypatch.setattr(cpu_speed, "_fastest_ms", 1e-9)
    monkeypatch.setattr(cpu_speed, "_learnt", True)
    cpu_speed.wait_for_full_speed(0.2)
    spent = phases.since(before)
    assert 0.2 <= spent["cpu_wait"] < 5 and spent["timed"] == 0


def test_phases_say_where_the_seconds_went(monkeypatch):
    """Each phase adds its blocks' time; the words list those of half a second or more, largest first,
    and the rest of the total as other; an unknown phase is a programming error, said at once."""
    from mlaplan.prefill import phases

    clock = iter([10.0, 13.2, 20.0, 20.4, 30.0, 31.0])
    monkeypatch.setattr(phases.time, "perf_counter", lambda: next(clock))
    before = phases.seconds()
    with phases.phase("reheat"):
        pass
    with phases.phase("probe"):
        pass
    with pytest.raises(RuntimeError):
        with phases.phase("timed"):
            raise RuntimeError("the block's error passes, its time counted")
    spent = phases.since(before)
    assert spent["reheat"] == pytest.approx(3.2) and spent["probe"] == pytest.approx(0.4) and spent["timed"] == pytest.approx(1.0)
    assert phases.words(spent, 10.0) == "3 s reheating, 1 s timed eager runs, 5 s other"
    assert phases.words(dict.fromkeys(phases.WORDS, 0.0), 0.2) == "each phase under half a second"
    with pytest.raises(KeyError):
        with phases.phase("lunch"):
            pass


def test_the_probed_eager_timing_counts_each_phase(monkeypatch):
    """timing.time_eager_probed's phases, on the CPU with the GPU's events and synchronisation stood in:
    its settle, each probe (one per repetition and one after), each reheat and each timed run go to
    their own phase, and only there."""
    torch = pytest.importorskip("torch", reason="the executor's timing needs torch")
    from mlaplan.prefill import phases, timing

    monkeypatch.setattr(timing, "_events_ms", lambda fn, reps: [fn() or 1.0 for _ in range(reps)])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    calls = {"layer": 0, "probe": 0}

    def layer():
        calls["layer"] += 1
        time.sleep(0.002)

    def probe():
        calls["probe"] += 1
        time.sleep(0.03)
        return 1.0

    before = phases.seconds()
    samples, _ = timing.time_eager_probed(layer, reps=3, warmup=1, settle_ms=100, probe=probe, reheat_ms=60)
    spent = phases.since(before)
    assert samples == [1.0] * 3 and calls["probe"] == 4
    assert 4 * 0.03 <= spent["probe"] < 4 * 0.03 + 0.5
    assert 0.1 <= spent["settle"] < 0.6 and 3 * 0.06 <= spent["reheat"] < 3 * 0.06 + 0.5
    assert 3 * 0.002 <= spent["timed"] < 0.3
    assert spent["graph"] == spent["host"] == spent["cpu_wait"] == spent["inputs"] == 0


def test_graph_time_is_measured_from_the_graphs_alone(tmp_path, monkeypatch):
    """Checking a file by graph time, validate replays the graphs alone, as calibrate times its points: no
    eager runs, host dispatch timing or wait for the CPU (half a TP 1 batch's time on an H100), unless
    --host asks for them or eager time is compared."""
    pytest.importorskip("torch", reason="validate measures with the executor, which needs torch")
    pytest.importorskip("scipy", reason="validate ranks with scipy (pip install .[calibrate])")
    import mlaplan.calibrate.measure as measure
    from mlaplan.calibrate import validate

    seen = []

    def fake(p, *args, **kw):  # what measure_point was asked; a run's record without running it
        seen.append(kw)
        return dict(p.as_dict(), path="chunked", iterations=1, graph_ms=1.0, eager_ms=2.0 if kw["eager"] else None)

    monkeypatch.setattr(measure, "measure_point", fake)
    scen = tmp_path / "tiny.json"
    scen.write_text(json.dumps({"scenarios": [{"name": "a", "page_size": 16, "buffer_token_size": 64, "max_chunks": 64,
                                               "cache_lengths": [200, 40], "input_row_offsets": [0, 12, 20]}]}))
    cost = os.path.join(ROOT, "costs", "h200", "deepseek-v3-tp8-bf16.json")  # graph-timed, with a host section
    for i, (extra, eager) in enumerate((([], False), (["--host"], True), (["--timing", "eager"], True))):
        seen.clear()
        validate.main(["--cost", cost, "--scenarios", str(scen), "--device", "cpu", "--policy", "packed,max",
                       "--buffer-tokens", "64,128", "--cpu-wait-s", "5", "-o", str(tmp_path / f"r{i}.md"), *extra])
        assert len(seen) == 4, extra
        for kw in seen:
            assert kw["eager"] is eager and kw["cpu_wait_s"] == 5, (extra, kw)  # eager=False: measure_point ignores the wait
    (tmp_path / "m.json").write_text(json.dumps({"format": "mlaplan-validation-measurements", "model": "deepseek-v3", "tp": 8,
                                                 "records": [rec(2.0, 1.0, workload="w", scenario="s")]}))
    r = run("--cost", cost, "--measured", str(tmp_path / "m.json"), "--host")  # nothing to measure: --host does nothing
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("mlaplan: error: --host:"), r.stderr


def test_batches_are_measured_a_workload_at_a_time_in_turn(tmp_path, monkeypatch):
    """Each file's first batch, then each's second: a --max-seconds too short for them all measures some of
    every workload (validate spent it all on the first file's batches, an H100 TP 1 check on 2 of 12)."""
    pytest.importorskip("torch", reason="validate measures with the executor, which needs torch")
    import mlaplan.calibrate.measure as measure
    from mlaplan.calibrate import validate

    seen = []
    monkeypatch.setattr(measure, "measure_point", lambda p, *a, **kw: seen.append(p.cache) or dict(p.as_dict(), graph_ms=1.0))
    files = []
    for w, lengths in (("a", (100, 200)), ("b", (300, 400))):
        files.append(tmp_path / f"{w}.json")
        files[-1].write_text(json.dumps({"scenarios": [
            {"name": f"{w}{i}", "page_size": 16, "buffer_token_size": 64, "max_chunks": 64, "cache_lengths": [n],
             "input_row_offsets": [0, 8]} for i, n in enumerate(lengths)]}))
    doc = validate.measure(validate.parser().parse_args(["--scenarios", *map(str, files), "--device", "cpu",
                                                         "--policy", "packed", "--buffer-tokens", "64"]))
    assert seen == [[100], [300], [200], [400]]
    assert [r["scenario"] for r in doc["records"]] == ["a0", "a1", "b0", "b1"]  # saved in the files' order, as before
