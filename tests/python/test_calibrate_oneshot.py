"""The one-command calibration (issue 62), on the CPU: its built-in workload batches (mlaplan gen's,
deterministic, the held-out draw disjoint from the fitted one), the budget and its progress line on
a made-up clock, the held-out verdict, the host section's identification, the one-line refusals
without torch or a GPU, and the whole command end to end with a made-up GPU."""
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("scipy", reason="the calibration fits with scipy (pip install .[calibrate])")

from mlaplan import _mlaplan  # noqa: E402
from mlaplan.calibrate import oneshot, workloads  # noqa: E402
from mlaplan.calibrate.fit import HOST_BOUND_RATIO, MIN_HOST_BOUND, host_identification  # noqa: E402
from mlaplan.calibrate.grid import Point, features, record_sm  # noqa: E402

from test_calibrate import ROOT, TRUE  # noqa: E402
from test_hostile_calibrate import NO_TORCH  # noqa: E402

SEED61 = os.path.join(ROOT, "docs", "data", "cost-calibration", "workloads-seed61")



def test_builtin_batches_are_the_scenario_files_an_expert_generated():
    """Drawn in-process, the fit's first batches are `mlaplan gen --seed 61 --page-size 64 --batches 3` of
    each workload (the files the 270 s H100 calibration took), every workload's first batch first."""
    drawn = workloads.draw(workloads.WORKLOADS, workloads.FIT_SEED, workloads.FIT_BATCHES)
    assert [b[0] for b in drawn[:3]] == list(workloads.WORKLOADS) and len(drawn) == 9
    assert drawn == workloads.draw(workloads.WORKLOADS, workloads.FIT_SEED, workloads.FIT_BATCHES)  # deterministic
    for w in workloads.WORKLOADS:
        files = _mlaplan.read_scenarios(os.path.join(SEED61, f"{w}.json"))
        mine = [b for b in drawn if b[0] == w]
        assert [(c, n) for _, _, c, n in mine] == [
            (list(s["cache_lengths"]), np.diff(s["input_row_offsets"]).tolist()) for s in files]
    # Workload-shaped: coding agents carry long contexts, short chats many short sequences.
    coding = [b for b in drawn if b[0] == "coding-agent"]
    chat = [b for b in drawn if b[0] == "short-chat"]
    assert min(sum(c) for _, _, c, _ in coding) > 200_000 and min(len(c) for _, _, c, _ in chat) > 20


def test_the_fit_spreads_over_each_workloads_shapes():
    """The fit's first steps are alike (seed 61's first Mooncake steps hold 2-3 sequences each); the
    spread adds later steps across the shapes: a single long request's chunk among Mooncake's, as a
    third of its steps are, which the held-out check's first steps were."""
    first = workloads.draw(workloads.WORKLOADS, workloads.FIT_SEED, workloads.FIT_BATCHES)
    fit = workloads.draw(workloads.WORKLOADS, workloads.FIT_SEED, workloads.FIT_BATCHES, spread=workloads.FIT_SPREAD)
    assert fit[:len(first)] == first and len(fit) == len(first) + 3 * workloads.FIT_SPREAD
    assert len({n for _, n, _, _ in fit}) == len(fit)  # no step twice
    moon = [c for w, _, c, _ in fit if w == "mooncake-conv"]
    assert min(len(c) for c in moon[:3]) >= 2 and min(len(c) for c in moon) == 1
    # Picked by shape among the next SPREAD_STEPS, not the next two steps.
    later = workloads.draw(["mooncake-conv"], workloads.FIT_SEED, 3 + workloads.SPREAD_STEPS)[3:]
    picked = [b for b in fit if b[0] == "mooncake-conv"][3:]
    assert all(b in later for b in picked) and picked != later[:2]
    assert workloads.spread_pick(later, 0) == [] and workloads.spread_pick(later[:1], 2) == later[:1]


def test_heldout_draw_is_disjoint_from_the_fit():
    fitted = workloads.draw(workloads.WORKLOADS, workloads.FIT_SEED, workloads.FIT_BATCHES)
    held = workloads.draw(workloads.WORKLOADS, workloads.HELDOUT_SEED, workloads.HELDOUT_BATCHES)
    assert len(held) == 12 and workloads.disjoint(held, fitted) == held
    # A batch the fit saw is never checked on.
    assert workloads.disjoint(held + fitted[:2], fitted) == held
    assert {n for _, n, _, _ in held}.isdisjoint({n for _, n, _, _ in fitted})


def test_points_are_every_policy_and_buffer_of_each_batch():
    batch = workloads.draw(["short-chat"], 61, 1)
    pts = workloads.points(batch, (8192, 65536), heads=16)
    assert {(p.policy, p.buffer_tokens) for p in pts} <= {(e, b) for e in oneshot_engines() for b in (8192, 65536)}
    assert all(p.workload == "short-chat" and p.scenario == batch[0][1] and p.page_size == 64 for p in pts)
    every = workloads.points(batch, (8192, 65536), heads=16, refused=True)
    assert len(every) == 2 * len(oneshot_engines()) >= len(pts)
    with pytest.raises(ValueError, match="--workloads: 'nope' is not a workload preset"):
        workloads.parse_workloads("coding-agent,nope")
    assert workloads.parse_workloads("none") == ()


def oneshot_engines():
    from mlaplan._cli import ENGINES

    return ENGINES


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_line_says_points_done_and_time_left():
    clock = Clock()
    budget = oneshot.Budget(540, clock)
    end = budget.phase_end(oneshot.FIT_SHARE)
    assert end == pytest.approx(100 + 540 * oneshot.FIT_SHARE)
    out = io.StringIO()
    p = oneshot.Progress("measuring", 100, budget, end, after=200, stream=out)
    clock.now += 30
    assert p.left(20) == pytest.approx(120 + 200)  # 1.5 s a point, 80 points to go, then the check's 200 s
    p.tick(20)
    assert out.getvalue() == "calibrate: measuring 20 of 100 points, 0:30 in, about 5:20 left\n"
    clock.now += 1
    p.tick(21)
    assert out.getvalue().count("\n") == 1  # not yet PROGRESS_S since the last line
    clock.now += oneshot.PROGRESS_S
    p.tick(22)
    assert out.getvalue().splitlines()[1] == f"calibrate: measuring 22 of 100 points, 0:36 in, about {oneshot.clock_text(p.left(22))} left"
    # The phase's end bounds the estimate: the budget is what ends it.
    clock.now = end - 10
    assert p.left(20) == pytest.approx(10 + 200)
    assert oneshot.Progress("x", 5, oneshot.Budget(None, clock), None).left(0) is None


def test_measuring_stops_at_the_budget_and_the_check_keeps_whole_batches():
    clock = Clock()
    budget = oneshot.Budget(100, clock)
    pts = [Point([1000], [100], 64, 8192, "packed", w, f"{w}-{i}") for i in range(3) for w in ("a", "b")]

    def measure(p, *rest):
        clock.now += 20  # each point takes 20 s
        return {"policy": p.policy}

    out = io.StringIO()
    recs = oneshot.measure_all(pts, measure, budget, budget.phase_end(0.5), stream=out)
    assert len(recs) == 3 and recs[0]["workload"] == "a"  # 0, 20, 40 s started; at 60 s the 50 s share is spent
    assert "the measuring budget reached after 3 of 6 points" in out.getvalue()
    # Where the seconds went: no phase of the executor's ran here, so all of it is "other".
    assert "calibrate: measured 3 points in 60 s (60 s other)" in out.getvalue()
    groups = oneshot.heldout_groups(pts)
    assert [len(g) for g in groups] == [1] * 6
    recs = oneshot.measure_heldout([pts[:2], pts[2:4], pts[4:]], measure, budget, budget.end() + 50, stream=out)
    # Each batch takes 40 s: the second starts 50 s before the end, the third would end 30 s past it.
    assert len(recs) == 4 and "2 of 3 batches measured, the budget reached" in out.getvalue()
    clock.now = budget.end() + 100  # past the end already: the first batch is still measured
    assert len(oneshot.measure_heldout([pts[:2], pts[2:4]], measure, budget, budget.end(), stream=out)) == 2


def report(**workloads_figures):
    return {"timing": "graph", "workloads": {w: dict(batches=4, runs=120, settings=30, max_abs_error=0.1, **f)
                                             for w, f in workloads_figures.items()}}


def test_a_long_workload_batch_is_not_started_where_it_would_overrun():
    """The check expects a batch to take what its workload's batches took: a coding-agent batch
    (100 s) is not started 60 s before the end because short chats (10 s) pulled the mean down, and
    the short chat after it still is. Each workload's first batch is measured (a verdict for each)."""
    clock = Clock()
    budget = oneshot.Budget(200, clock)
    long_, short = (Point([1000], [100], 64, 8192, "packed", w, f"{w}-{i}") for i, w in enumerate(("coding", "chat")))
    secs = {"coding": 100, "chat": 10}

    def measure(p, *rest):
        clock.now += secs[p.workload]
        return {"policy": p.policy}

    out = io.StringIO()
    recs = oneshot.measure_heldout([[short], [long_], [long_], [short]], measure, budget, budget.start + 180, stream=out)
    assert [r["workload"] for r in recs] == ["chat", "coding", "chat"]  # at 110 s: 110 + 100 > 180, though 110 + 55 < 180
    assert "3 of 4 batches measured" in out.getvalue() and clock.now <= budget.start + 180


def test_a_cut_short_measurement_keeps_every_batch_buffer_and_policy():
    """The calibration's points in an order whose prefixes keep the spread: workloads in turn, their
    batches in turn, each batch's buffers in turn from a different policy each."""
    from mlaplan.calibrate.grid import interleave_workloads

    pols = ("max", "packed", "even-split")
    pts = [Point([1000], [100], 64, b, pol, w, f"{w}-{i}") for w, n in (("a", 2), ("b", 1)) for i in range(n)
           for b in (8192, 65536) for pol in pols]
    order = interleave_workloads(pts)
    assert sorted(map(id, order)) == sorted(map(id, pts))
    key = [(p.scenario, p.buffer_tokens, p.policy) for p in order]
    assert key[:6] == [("a-0", 8192, "max"), ("b-0", 8192, "max"), ("a-1", 8192, "max"),
                       ("b-0", 65536, "packed"), ("a-0", 65536, "packed"), ("b-0", 8192, "packed")]
    # The first half of the points: every batch, each at both buffers, and every policy.
    head = order[:len(order) // 2]
    assert {p.scenario for p in head} == {"a-0", "a-1", "b-0"} and {p.buffer_tokens for p in head} == {8192, 65536}
    assert {p.policy for p in head} == set(pols)


def test_verdict_against_the_targets():
    good = dict(median_abs_error=0.011, p90_abs_error=0.027, kendall_tau=0.91)
    v = oneshot.verdict(report(**{"coding-agent": good, "short-chat": good}))
    assert v["met"] and {s["verdict"] for s in v["workloads"].values()} == {"PASS"}
    bad = oneshot.verdict(report(**{"coding-agent": good, "short-chat": dict(median_abs_error=0.025, p90_abs_error=0.06,
                                                                              kendall_tau=0.8)}))
    assert not bad["met"] and bad["workloads"]["coding-agent"]["verdict"] == "PASS"
    assert bad["workloads"]["short-chat"]["missed"] == ["median 2.5% > 2%", "p90 6.0% > 5%", "tau 0.80 < 0.85"]
    text = oneshot.table(bad)
    assert "short-chat" in text and "MISS (median 2.5% > 2%" in text and text.rstrip().endswith("held-out verdict: MISS")
    none = oneshot.verdict(report(chat=dict(median_abs_error=0.0, p90_abs_error=0.0, kendall_tau=None)))
    assert not none["met"] and none["workloads"]["chat"]["missed"] == ["tau: no ranking"]
    assert not oneshot.verdict(report())["met"]  # nothing measured passes nothing


def test_host_identification():
    """Few host-bound runs, or costs the runs leave loose, are named; runs that pin the host time are not."""
    rng = np.random.default_rng(0)
    launches = rng.integers(1, 200, size=(60, 6)).astype(float)
    h = np.full(6, 30.0)
    bound = np.zeros(60, dtype=bool)
    bound[:MIN_HOST_BOUND - 1] = True
    ok, why = host_identification(bound, np.zeros(60), launches, 0.0, h, launches)
    assert not ok and f"{MIN_HOST_BOUND - 1} of 60 runs are host-bound (eager at least {HOST_BOUND_RATIO:g}x" in why[0]
    bound[:] = True
    jac = launches / (launches @ h)[:, None]  # host-bound: each residual, host time / eager - 1, moves with the costs
    ok, why = host_identification(bound, rng.normal(0, 0.01, 60), jac, 0.5 * 60 * 0.01**2, h, launches)
    assert ok and why == []
    ok, why = host_identification(bound, rng.normal(0, 0.6, 60), jac, 0.5 * 60 * 0.6**2, h, launches)
    assert not ok and "fitted at p90 |error|" in why[0] and "known to" in why[1]


def run_module(*args, prelude=""):
    code = f"{prelude}import runpy, sys\nsys.argv = {['mlaplan.calibrate', *args]!r}\nrunpy.run_module('mlaplan.calibrate', run_name='__main__')"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_without_torch_or_a_gpu_one_line_says_what_to_do(tmp_path):
    r = run_module("--model", "deepseek-v3", "--tp", "8", "-o", str(tmp_path / "c.json"), prelude=NO_TORCH)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "pip install torch (or, in a clone of mlaplan, pip install '.[calibrate]')" in r.stderr
    h = run_module("--help", prelude=NO_TORCH)
    assert h.returncode == 0 and "--max-seconds S" in h.stdout and "--no-check" in h.stdout and h.stderr == ""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    r = run_module("--model", "deepseek-v3", "--tp", "8", "-o", str(tmp_path / "c.json"))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "the calibration times a CUDA GPU" in r.stderr and "sees none here" in r.stderr
    assert os.listdir(tmp_path) == []


class FakeGpu:
    """A made-up GPU: each point's graph time is TRUE priced (times `bias` on held-out runs), its eager
    time that plus a host's 100 us per iteration."""

    def __init__(self, args, bias=1.0):
        from mlaplan.prefill.model import model_dims

        self.args, self.bias, self.dims = args, bias, model_dims(args.model, args.tp)
        self.kernel, self.kernel_title, self.heldout_reps, self.heldout_warmup = "fa3", "fa3 (made up)", 3, 1
        self.up_projection = "fused" if args.loop == "fused" else "unfused"
        self.info = {"gpu": "Made-up GPU", "sms": 132, "compute_capability": "9.0", "driver": None, "torch": None,
                     "triton": None, "host": "test"}

    def open(self):
        return self

    def _rec(self, p, bias):
        f = features(p, self.dims.heads, 132, 1, 128, 0, "sorted")
        graph = sum(TRUE[k] * v for k, v in f.items()) / 1e3 * bias
        # The eager runs as the device times them: only where the host section is asked for (or eager time).
        eager = graph + 0.1 * f["per_iteration_us"] if oneshot.heldout_eager(self.args) else None
        return dict(p.as_dict(), graph_ms=graph, eager_ms=eager, path="chunked")

    def measure_calibration(self, p, i):
        return self._rec(p, 1.0)

    def measure_heldout(self, p, i, group):
        assert record_sm({"path": "chunked"}) == 0
        return self._rec(p, self.bias)


@pytest.mark.parametrize("bias,code", [(1.0, 0), (1.1, 1)])
def test_the_one_command_end_to_end(tmp_path, monkeypatch, capsys, bias, code):
    """`python -m mlaplan.calibrate --model deepseek-v3 --tp 8 -o FILE` on a made-up GPU: the built-in
    points measured, fitted, checked on the held-out draw, the verdict printed and kept in the file;
    a GPU whose held-out runs are 10% slower than its fit's misses, exit 1, the file written saying so."""
    from mlaplan.calibrate import __main__ as cal

    pytest.importorskip("torch", reason="the model presets' dimensions come from mlaplan.prefill")
    monkeypatch.setattr(cal, "open_device", lambda args: FakeGpu(args, bias))
    out = tmp_path / "my-gpu.json"
    raw = tmp_path / "raw.json"
    argv = ["--model", "deepseek-v3", "--tp", "8", "--points", "20", "-o", str(out), "--measurements", str(raw)]
    assert cal.entry(argv) == code
    cost = json.loads(out.read_text())
    held = cost["heldout"]
    assert cost["command"] == "python -m mlaplan.calibrate " + " ".join(argv)
    assert set(held["workloads"]) == set(workloads.WORKLOADS) and held["seed"] == workloads.HELDOUT_SEED
    assert held["met"] is (code == 0) and held["targets"] == oneshot.TARGETS
    assert all(s["verdict"] == ("PASS" if code == 0 else "MISS") for s in held["workloads"].values())
    stdout = capsys.readouterr().out
    assert "held-out verdict: " + ("PASS" if code == 0 else "MISS") in stdout and "coding-agent" in stdout
    # The fit took the workload batches it drew: every workload's, weighted as workload points.
    assert cost["fit"]["points"] > 20 and cost["fit"]["workload_weight"] == 8
    # Timed as graphs alone (no --host): no host section, and the summary says eager time is refused.
    assert "host" not in cost and "eager" not in held and "no host section" in stdout and "--host" in stdout
    assert held["timings"] == ["graph"]  # a check by graph time replays the graphs alone (heldout_eager)
    _mlaplan.read_cost_model(str(out))  # the C++ reader takes the additive fields
    # The measurements keep the held-out runs apart from the fitted ones, for studying a miss.
    saved = json.loads(raw.read_text())
    assert len(saved["records"]) == cost["fit"]["points"]
    assert len(saved["heldout_records"]) == sum(s["runs"] for s in held["workloads"].values())
    assert saved["heldout_seed"] == workloads.HELDOUT_SEED and saved["heldout_reps"] == 3
    # --refit prices the held-out runs the file keeps with its own fit: the same verdict, said to be repriced.
    again = tmp_path / "again.json"
    assert cal.entry(["--refit", str(raw), "-o", str(again)]) == code
    redo = json.loads(again.read_text())["heldout"]
    assert "repriced" in redo and "seconds" not in redo and redo["seed"] == workloads.HELDOUT_SEED
    assert {w: s["verdict"] for w, s in redo["workloads"].items()} == {w: s["verdict"] for w, s in held["workloads"].items()}
    assert {w: s["runs"] for w, s in redo["workloads"].items()} == {w: s["runs"] for w, s in held["workloads"].items()}
    # A hand-edited file: its held-out runs are checked as its fitted ones are, one line naming the field.
    saved["heldout_records"][1]["new"] = "many"
    raw.write_text(json.dumps(saved))
    capsys.readouterr()
    assert cal.entry(["--refit", str(raw), "-o", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "heldout_records[1].new" in err[0] and not (tmp_path / "bad.json").exists()


def test_the_host_section_is_measured_with_host_only(tmp_path, monkeypatch):
    """The eager runs serve the host section alone: the device times the fitted points as graphs alone
    unless --host (or --timing eager) asks for it, and then the file has one."""
    from mlaplan.calibrate import __main__ as cal
    from mlaplan.calibrate import measure

    pytest.importorskip("torch", reason="the model presets' dimensions come from mlaplan.prefill")
    seen = []
    monkeypatch.setattr(measure, "measure_point", lambda *a, **k: seen.append(k) or {})
    for argv, eager in (([], False), (["--host"], True), (["--timing", "eager"], True)):
        args = cal.parser().parse_args(["-o", "x.json"] + argv)
        dev = oneshot.Device(args, None, None)
        dev.device, dev.kernel, dev.torch = "cuda", "fa3", type("T", (), {"bfloat16": None})
        dev.measure_calibration(Point([300], [0, 20], 16, 8192, "packed", "short-chat", "s-0"), 0)
        k = seen.pop()
        assert k["eager"] is eager, (argv, k)  # what eager=False ignores is measure_point's rule (test_calibrate)
    monkeypatch.setattr(cal, "open_device", lambda args: FakeGpu(args))
    out = tmp_path / "host.json"
    assert cal.entry(["--model", "deepseek-v3", "--tp", "8", "--points", "20", "--no-check", "--host", "-o", str(out)]) == 0
    assert isinstance(json.loads(out.read_text())["host"]["identified"], bool)


def test_the_fused_loop_is_a_file_of_its_own(tmp_path, monkeypatch, capsys):
    """--loop fused: the measurements and the cost file say so (kernels.up_projection, which run/sweep
    --loop pick the file by), --refit keeps it, and measurements of the two loops are not pooled."""
    from mlaplan.calibrate import __main__ as cal

    pytest.importorskip("torch", reason="the model presets' dimensions come from mlaplan.prefill")
    monkeypatch.setattr(cal, "open_device", lambda args: FakeGpu(args))
    raws = {}
    for loop in ("fused", "engine"):
        raws[loop] = tmp_path / f"{loop}-raw.json"
        out = tmp_path / f"{loop}.json"
        assert cal.entry(["--model", "deepseek-v3", "--tp", "8", "--points", "12", "--no-check", "--loop", loop, "-o",
                          str(out), "--measurements", str(raws[loop])]) == 0
        want = "fused" if loop == "fused" else "unfused"
        assert json.loads(out.read_text())["kernels"]["up_projection"] == want
        assert json.loads(raws[loop].read_text())["up_projection"] == want
        assert _mlaplan.read_cost_model(str(out)) is not None
    again = tmp_path / "again.json"
    assert cal.entry(["--refit", str(raws["fused"]), "-o", str(again)]) == 0
    assert json.loads(again.read_text())["kernels"]["up_projection"] == "fused"
    capsys.readouterr()
    assert cal.entry(["--refit", str(raws["fused"]), str(raws["engine"]), "-o", str(tmp_path / "pooled.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "up_projection: 'unfused', but" in err[0] and not (tmp_path / "pooled.json").exists()
    # A loop no run can time, hand-written into the file: one line naming the field.
    bad = json.loads(raws["fused"].read_text())
    bad["up_projection"] = "warp"
    raws["fused"].write_text(json.dumps(bad))
    capsys.readouterr()
    assert cal.entry(["--refit", str(raws["fused"]), "-o", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "up_projection: 'warp' is not one of unfused, fused" in err[0], err
    assert cal.entry(["--model", "deepseek-v3", "--tp", "8", "--loop", "warp", "-o", str(tmp_path / "w.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--loop" in err[0] and "'engine', 'fused'" in err[0] and not (tmp_path / "w.json").exists()
    # --loop is what is measured: --refit reads it from the file.
    assert cal.entry(["--refit", str(raws["fused"]), "--loop", "fused", "-o", str(tmp_path / "x.json")]) == 2


def test_the_device_times_points_as_calibrate_and_validate_do():
    """The GPU's two ways of timing, run on the CPU (float32, 2 heads): the calibration's points on the
    loop SGLang's buffer changes, the held-out ones as each engine dispatches, both the executor's."""
    torch = pytest.importorskip("torch", reason="the executor needs torch")
    from mlaplan.calibrate.__main__ import parser
    from mlaplan.prefill.model import model_dims

    args = parser().parse_args(["-o", "x.json", "--reps", "1", "--warmup", "0", "--settle-ms", "0", "--cpu-wait-s", "0"])
    dev = oneshot.Device(args, torch, model_dims("deepseek-v2-lite", heads=2))
    dev.device, dev.kernel, dev.torch = torch.device("cpu"), "flash", type("CpuTorch", (), {"bfloat16": torch.float32})
    p = Point([300, 0, 90], [20, 25, 15], 16, 8192, "packed", "short-chat", "s-0")
    for rec in (dev.measure_calibration(p, 0), dev.measure_heldout(p, 0, 0)):
        assert rec["eager_ms"] > 0 and rec["iterations"] == features(p, 2)["per_iteration_us"] and "refused" not in rec
    assert dev.turns == {"packed": 1}


def test_a_check_by_graph_time_replays_the_graphs_alone(monkeypatch):
    """The held-out runs of a graph-time check skip the eager runs, their probes and the host's
    dispatch (half of an H100 check's time); an eager check or --host keeps them."""
    pytest.importorskip("torch", reason="the executor's timing needs torch")
    from mlaplan.calibrate.__main__ import parser
    from mlaplan.prefill import timing

    for argv, eager in (([], False), (["--host"], True), (["--timing", "eager"], True)):
        assert oneshot.heldout_eager(parser().parse_args(["-o", "x.json"] + argv)) is eager
    ran = []
    monkeypatch.setattr(timing, "time_graph", lambda fn, reps, warmup, settle_ms: [2.0, 1.0, 3.0])
    t = timing.measure(lambda ranges: ran.append(ranges), True, reps=3, warmup=1, parts=False, cpu_wait_s=30,
                       dispatch_probe=lambda: 1.0, eager=False)
    assert t.graph_ms == 2.0 and t.eager_ms is None and t.eager_spread_ms is None and ran == []
    # Without a graph to time (the CPU), eager=False is ignored: something is measured.
    t = timing.measure(lambda ranges: ran.append(ranges), False, reps=2, warmup=0, parts=False, eager=False)
    assert t.eager_ms is not None and t.graph_ms is None and len(ran) == 2
