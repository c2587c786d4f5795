"""The wait for the host CPU's full speed (mlaplan.prefill.cpu_speed), with the probe made up."""
import pytest

from mlaplan.prefill import cpu_speed


@pytest.fixture
def probes(monkeypatch):
    """cpu_speed's probe replaced by a list of times (ms), the fastest seen reset."""
    times = []

    def fake():
        ms = times.pop(0)
        cpu_speed._fastest_ms = min(cpu_speed._fastest_ms, ms)
        return ms

    monkeypatch.setattr(cpu_speed, "_fastest_ms", float("inf"))
    monkeypatch.setattr(cpu_speed, "_learnt", True)  # the learning is tested on its own below
    monkeypatch.setattr(cpu_speed, "probe_ms", fake)
    monkeypatch.setattr(cpu_speed.time, "sleep", lambda s: None)
    return times


def test_the_real_probe_runs_and_sets_the_fastest(monkeypatch):
    monkeypatch.setattr(cpu_speed, "_fastest_ms", float("inf"))
    ms = cpu_speed.probe_ms()
    assert 0 < ms < 1e4 and cpu_speed._fastest_ms == ms
    assert cpu_speed.full_speed(ms) and not cpu_speed.full_speed(ms * 1.3)


def test_a_slow_phase_is_waited_out(probes):
    probes += [1.0, 1.0, 2.0, 2.1, 2.0, 1.9, 1.1, 2.0]  # fast, then a slow phase, then fast again
    assert cpu_speed.wait_for_full_speed(60) == 1.0
    assert cpu_speed.wait_for_full_speed(60) == 1.1  # two slow pairs skipped, then min(1.1, 2.0)
    assert probes == []


def test_the_wait_ends_at_its_limit_and_says_it_stayed_slow(probes, monkeypatch):
    clock = iter(range(0, 1000, 3))  # each perf_counter call 3 s later
    monkeypatch.setattr(cpu_speed.time, "perf_counter", lambda: float(next(clock)))
    probes += [1.0, 1.0] + [2.0] * 40
    cpu_speed.wait_for_full_speed(60)
    ms = cpu_speed.wait_for_full_speed(10)
    assert ms == 2.0 and not cpu_speed.full_speed(ms)
    assert len(probes) > 30  # it stopped probing at the limit


def test_an_interrupted_probe_does_not_count_as_slow(probes):
    probes += [1.0, 1.0, 5.0, 1.05]  # the faster of each pair is what counts
    cpu_speed.wait_for_full_speed(60)
    assert cpu_speed.wait_for_full_speed(60) == 1.05


def test_the_cpu_path_never_waits(monkeypatch):
    torch = pytest.importorskip("torch", reason="the executor needs torch")
    from mlaplan.prefill import timing

    monkeypatch.setattr(cpu_speed, "wait_for_full_speed", lambda *a: pytest.fail("waited on the CPU path"))
    t = timing.measure(lambda r: torch.ones(4).sum(), False, reps=2, warmup=0, graph=False, parts=False, cpu_wait_s=10)
    assert t.cpu_probe_ms is None and t.eager_ms > 0


def test_rounds_keep_the_median_probe_and_the_report_counts_slow_runs():
    pytest.importorskip("scipy", reason="validate ranks with scipy (pip install .[calibrate])")
    import os

    from mlaplan.calibrate.measure import combine_rounds
    from mlaplan.calibrate.validate import markdown, read_cost, report

    def rec(eager, probe, **kw):
        return {"cache": [100], "new": [10], "page_size": 16, "buffer_tokens": 64, "policy": "packed", "iterations": 2,
                "eager_ms": eager, "eager_spread_ms": 0.1, "graph_ms": 1.0, "cpu_probe_ms": probe, "workload": "w",
                "scenario": "s", **kw}

    # The median probe beside the median time (validate prices the host at it), each round's kept.
    got = combine_rounds([rec(2.0, 1.0), rec(3.0, 2.2), rec(2.5, 1.1)])
    assert got["eager_ms"] == 2.5 and got["cpu_probe_ms"] == 1.1 and got["cpu_probe_rounds_ms"] == [1.0, 2.2, 1.1]
    got = combine_rounds([rec(2.0, 1.0, dispatch_probe_ms=0.7), rec(3.0, 2.2, dispatch_probe_ms=0.9), rec(2.5, 1.1)])
    assert got["dispatch_probe_ms"] == 0.8 and got["dispatch_probe_rounds_ms"] == [0.7, 0.9]  # a round without one left out
    cost = read_cost(os.path.join(os.path.dirname(__file__), "..", "data", "cost", "deepseek-v3-tp8-eager-example.json"))
    records = [rec(2.0, 1.0), rec(2.0, 1.2, buffer_tokens=32), rec(2.0, 1.3, policy="even-split"), rec(2.0, None, page_size=1)]
    eager = report(cost, records, "eager")
    assert (eager["cpu_slow_runs"], eager["cpu_probed_runs"]) == (1, 3)  # 1.3 > 1.25 x 1.0; the unprobed run not counted
    assert "slow phase" in markdown(eager, "c.json") and "1 of the 3 eager runs" in markdown(eager, "c.json")
    assert eager["workloads"]["w"]["full_speed_runs"] == 2  # the errors again over the runs at full speed
    assert "full speed only" in markdown(eager, "c.json")
    assert "cpu_slow_runs" not in report(cost, records, "graph")  # graph replays do not wait on the host


def test_a_process_that_starts_slow_learns_the_full_speed_first(probes, monkeypatch):
    monkeypatch.setattr(cpu_speed, "_learnt", False)
    probes += [2.0, 2.1] + [2.0, 2.2] * 3 + [1.0, 1.1] + [1.05, 1.2]  # a slow phase, then the full speed
    assert cpu_speed.wait_for_full_speed(60) == 1.05  # not the slow 2.0 the process saw first
    assert probes == [] and cpu_speed._learnt


def test_a_process_that_starts_fast_learns_for_its_wait_once(probes, monkeypatch):
    clock = iter(range(0, 1000))  # each perf_counter call 1 s later
    monkeypatch.setattr(cpu_speed.time, "perf_counter", lambda: float(next(clock)))
    monkeypatch.setattr(cpu_speed, "_learnt", False)
    probes += [1.0] * 40
    assert cpu_speed.wait_for_full_speed(5) == 1.0
    left = len(probes)
    assert 40 - left >= 8  # it probed through its 5 s before the first answer
    assert cpu_speed.wait_for_full_speed(5) == 1.0 and len(probes) == left - 2  # and not again


def test_the_learning_is_bounded_apart_from_the_wait(probes, monkeypatch):
    clock = iter(range(0, 1000))
    monkeypatch.setattr(cpu_speed.time, "perf_counter", lambda: float(next(clock)))
    monkeypatch.setattr(cpu_speed, "_learnt", False)
    probes += [1.0] * 80
    cpu_speed.wait_for_full_speed(60)  # a long wait, but the learning stops at LEARN_S
    assert 80 - len(probes) <= 2 * (cpu_speed.LEARN_S + 3)
