"""The experiment on saved runs (scripts/experiments/launch_stamps.py) as a reader of docs/cost-model.md
runs it: its figures agree with validate's report on the same runs, and runs another cost file prices are
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


def test_runs_of_another_model_are_refused():
    name = "launch_stamps.py"
    r = experiment(name, DEEPSEEK, MEASURED)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"mlaplan: error: {name}: {MEASURED}: model: 'kimi-k2', but {DEEPSEEK}"), r.stderr


def test_a_cost_file_without_host_costs_is_refused():
    example = os.path.join(ROOT, "tests", "data", "cost", "deepseek-v3-tp8-example.json")
    r = experiment("launch_stamps.py", example, MEASURED)
    assert r.returncode == 2 and r.stderr.strip() == f"mlaplan: error: launch_stamps.py: {example}: host: missing; give a " \
                                                     f"cost file with a host section", r.stderr
