"""The experiments on saved runs (scripts/experiments/) as a reader of docs/cost-model.md runs them:
their figures agree with validate's report on the same runs, and runs another cost file prices are
refused in one line."""
import json
import os
import re
import subprocess
import sys

import pytest

import mlaplan

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED_111 = os.path.join(ROOT, "docs", "data", "cost-validation", "seed-111")
MEASURED = os.path.join(SEED_111, "measured-kimi-k2-tp8-fa3-2026-12-04.json")
KIMI = os.path.join(ROOT, "costs", "h200", "kimi-k2-tp8-bf16-fa3.json")
DEEPSEEK = os.path.join(ROOT, "costs", "h200", "deepseek-v3-tp8-bf16-fa3.json")
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(mlaplan.__file__)))
ENV = dict(os.environ, PYTHONPATH=PACKAGE_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))


def experiment(name, *args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "experiments", name), *args], capture_output=True,
                          text=True, cwd=ROOT, env=ENV, timeout=300)


def test_same_plan_spread_gives_validates_errors(tmp_path):
    pytest.importorskip("scipy", reason="validate ranks with scipy (pip install .[calibrate])")
    r = experiment("same_plan_spread.py", KIMI, MEASURED)
    assert r.returncode == 0, r.stderr
    report = tmp_path / "r.json"
    v = subprocess.run([sys.executable, "-m", "mlaplan.calibrate.validate", "--cost", KIMI, "--measured", MEASURED, "--timing",
                        "eager", "--json", str(report), "-o", str(tmp_path / "r.md")], capture_output=True, text=True, env=ENV)
    assert v.returncode in (0, 1), v.stderr
    workloads = json.loads(report.read_text())["workloads"]
    got = dict(re.findall(r"^  ([\w-]+): \|error\| (\d+\.\d)% / ", r.stdout, re.M))
    assert got.keys() == workloads.keys()
    for w, figures in workloads.items():
        assert float(got[w]) == round(100 * figures["median_abs_error"], 1), (w, r.stdout)


def test_launch_stamps_ratio_counts_are_validates(tmp_path):
    """The ratio check launch_stamps.py prints with the file's costs is validate's on the same runs; the
    one with each run's own stamps counts the same settings."""
    pytest.importorskip("scipy", reason="validate ranks with scipy (pip install .[calibrate])")
    stamped = os.path.join(ROOT, "docs", "data", "cost-validation", "seed-131", "measured-kimi-k2-tp8-fa3-2026-12-05.json")
    r = experiment("launch_stamps.py", KIMI, stamped)
    assert r.returncode == 0, r.stderr
    counts = re.findall(r"ratio within 0\.1 at 8192 rows and below: the file's at (\d+) of (\d+) settings, "
                        r"each run's own stamps at (\d+) \(measured", r.stdout)
    assert len(counts) == 2, r.stdout  # short-chat and coding-agent
    report = tmp_path / "r.json"
    v = subprocess.run([sys.executable, "-m", "mlaplan.calibrate.validate", "--cost", KIMI, "--measured", stamped, "--timing",
                        "eager", "--json", str(report), "-o", str(tmp_path / "r.md")], capture_output=True, text=True, env=ENV)
    assert v.returncode in (0, 1), v.stderr
    ratio = json.loads(report.read_text())["ratio"]
    assert sum(int(f) for f, _, _ in counts) == ratio["within"]
    assert sum(int(n) for _, n, _ in counts) == ratio["settings"]
    assert all(int(o) <= int(n) for _, n, o in counts)


@pytest.mark.parametrize("name", ["same_plan_spread.py", "launch_stamps.py"])
def test_runs_of_another_model_are_refused(name):
    r = experiment(name, DEEPSEEK, MEASURED)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"mlaplan: error: {name}: {MEASURED}: model: 'kimi-k2', but {DEEPSEEK}"), r.stderr


def test_a_cost_file_without_host_costs_is_refused():
    example = os.path.join(ROOT, "tests", "data", "cost", "deepseek-v3-tp8-example.json")
    r = experiment("same_plan_spread.py", example, MEASURED)
    assert r.returncode == 2 and r.stderr.strip() == f"mlaplan: error: same_plan_spread.py: {example}: host: missing; give a " \
                                                     f"cost file with a host section", r.stderr


def test_joint_host_fit_of_one_file_is_its_own_fit():
    """The experiment's fit is fit_host's: on one file's host runs it gives that file's costs."""
    pytest.importorskip("scipy", reason="the fit is scipy's least_squares (pip install .[calibrate])")
    r = experiment("joint_host_fit.py", KIMI)
    assert r.returncode == 0, r.stderr
    joint = dict(re.findall(r"(\w+) (\d+)", r.stdout.splitlines()[0].split("ms: ")[1]))
    own = json.load(open(KIMI))["host"]["launch_us"]
    assert joint.keys() == own.keys()
    for kind, us in own.items():
        assert abs(int(joint[kind]) - us) <= 1, (kind, r.stdout)


def test_joint_host_fit_refuses_two_kernels():
    fa2 = os.path.join(ROOT, "costs", "h200", "deepseek-v3-tp8-bf16.json")
    r = experiment("joint_host_fit.py", DEEPSEEK, fa2)
    assert r.returncode == 2 and r.stderr.startswith(f"mlaplan: error: joint_host_fit.py: {fa2}: kernels.attention: flash"), r.stderr
