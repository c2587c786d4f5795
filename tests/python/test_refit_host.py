"""scripts/refit_host.py: a shipped file's host section refitted on other runs, its graph fit kept."""
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "refit_host.py")
SHIPPED = os.path.join(ROOT, "costs", "h200", "deepseek-v3-tp8-bf16-fa3.json")
RUNS = os.path.join(ROOT, "docs", "data", "cost-calibration", "deepseek-v3-tp8-fa3-cpu-gated-seed62-2026-12-04.json")
# The FA2 file's section is fitted on runs timed without the reheat, as these are: they pool.
SHIPPED_FA2 = os.path.join(ROOT, "costs", "h200", "deepseek-v3-tp8-bf16.json")
RUNS_FA2 = os.path.join(ROOT, "docs", "data", "cost-calibration", "deepseek-v3-tp8-fa2-host-full-speed-2026-12-04.json")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=600)


def test_the_host_section_is_refitted_and_the_graph_fit_kept(tmp_path):
    pytest.importorskip("scipy", reason="the fit needs scipy (pip install .[calibrate])")
    out = tmp_path / "cost.json"
    r = run(SHIPPED, RUNS, "-o", str(out))
    assert r.returncode == 0, r.stderr
    old, new = json.load(open(SHIPPED)), json.loads(out.read_text())
    # The graph fit as it was, its scheduler (sorted) kept: the same coefficients, the terms added since at 0.
    added = {k: v for k, v in new["coefficients"].items() if k not in old["coefficients"]}
    assert {k: new["coefficients"][k] for k in old["coefficients"]} == old["coefficients"] and added == {"per_causal_block_us": 0.0, "per_small_gemm_row_us": 0.0}
    assert new["geometry"] == old["geometry"] and "--scheduler sorted" in new["command"]
    assert new["host"]["fit"]["points"] == len(json.load(open(RUNS))["records"]) != old["host"]["fit"]["points"]
    assert new["host"]["launch_us"] != old["host"]["launch_us"]
    # The section says when its runs were timed, which the reader returns.
    assert new["host"]["date"] == json.load(open(RUNS))["date"]
    from mlaplan import _mlaplan

    assert _mlaplan.read_cost_model(str(out))["host"]["date"] == new["host"]["date"]
    # The recorded command names the runs from the checkout's root, not this machine's folders.
    assert "--host-from docs/data/cost-calibration/" in new["command"] and ROOT not in new["command"]


def test_keep_pools_the_new_runs_with_the_files_own(tmp_path):
    """--keep refits on the runs the file was fitted on and the new ones, and the file names each
    session's bias; --commit is the file's commit."""
    pytest.importorskip("scipy", reason="the fit needs scipy (pip install .[calibrate])")
    out = tmp_path / "cost.json"
    # The shipped FA2 file as it was until 2026-12-05: its section fitted on runs not reheated, which
    # the full-speed runs (not reheated either) pool with.
    old = json.load(open(SHIPPED_FA2))
    probed = os.path.join("docs", "data", "cost-calibration", "deepseek-v3-tp8-fa2-host-probed-reps-2026-12-04.json")
    old = dict(old, command=re.sub(r"--host-from \S+", "--host-from " + probed, old["command"]))
    unreheated = tmp_path / "unreheated.json"
    unreheated.write_text(json.dumps(old))
    earlier = old["command"].split("--host-from ")[1].split(" -")[0].split()
    r = run(str(unreheated), RUNS_FA2, "--keep", "--commit", "abc1234", "-o", str(out))
    assert r.returncode == 0, r.stderr
    new = json.loads(out.read_text())
    # The graph fit is run again: the same coefficients, to the last bits a BLAS build may move (the terms
    # added since, which the grid scheduler's fit does not offer, at 0).
    added = {k: v for k, v in new["coefficients"].items() if k not in old["coefficients"]}
    assert new["commit"] == "abc1234" and added == {"per_causal_block_us": 0.0, "per_small_gemm_row_us": 0.0}
    assert {k: new["coefficients"][k] for k in old["coefficients"]} == pytest.approx(old["coefficients"], rel=1e-12)
    assert new["command"].split("--host-from ")[1].split(" -")[0].split() == earlier + [os.path.relpath(RUNS_FA2, ROOT)]
    sessions = new["host"]["fit"]["sessions"]
    assert [x["runs"] for x in sessions] == earlier + [os.path.relpath(RUNS_FA2, ROOT)]
    assert sum(x["points"] for x in sessions) == new["host"]["fit"]["points"]
    assert "the sessions pooled" in r.stdout
    # Runs the file was already fitted on are not pooled twice.
    r = run(str(unreheated), os.path.join(ROOT, earlier[0]), "--keep", "-o", str(tmp_path / "again.json"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "already among the runs" in r.stderr, r.stderr
    assert not (tmp_path / "again.json").exists()
    # A file fitted without --host-from has no runs of its own to keep.
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(dict(old, command=old["command"].split(" --host-from ")[0] + " -o x.json")))
    r = run(str(bare), RUNS_FA2, "--keep", "-o", str(tmp_path / "none.json"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no --host-from runs to keep" in r.stderr, r.stderr
    # The shipped files' runs were reheated after each probe; runs timed without it do not pool with them.
    for shipped, runs in ((SHIPPED, RUNS), (SHIPPED_FA2, RUNS_FA2)):
        r = run(shipped, runs, "--keep", "-o", str(tmp_path / "mixed.json"))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "pool eager runs timed alike" in r.stderr, r.stderr
        assert not (tmp_path / "mixed.json").exists()


@pytest.mark.parametrize("args,message", [
    ([SHIPPED], "required: HOST-RUNS.json; see scripts/refit_host.py --help"),
    ([RUNS, RUNS], "command:"),  # a measurement file is not a cost file
    ([os.path.join(ROOT, "tests", "data", "cost", "deepseek-v3-tp8-eager-example.json"), RUNS], "command:"),
    ([SHIPPED, RUNS, "--commit"], "argument --commit: expected one argument"),
    ([SHIPPED, RUNS, "-o"], "argument -o: expected one argument"),
    ([SHIPPED, RUNS, "--kep"], "unrecognized arguments: --kep"),
    ([os.path.join(ROOT, "README.md"), RUNS], "README.md: not JSON"),  # where, not a field it never reached
])
def test_bad_input_is_one_line(args, message):
    r = run(*args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("mlaplan: error:") and message in r.stderr, r.stderr


def test_a_cost_path_that_is_no_regular_file_is_refused(tmp_path):
    fifo = tmp_path / "cost.fifo"
    os.mkfifo(fifo)
    r = run(str(fifo), RUNS)  # refused before anything opens it (which would wait for a writer)
    assert r.returncode == 2 and r.stderr.startswith("mlaplan: error:") and "not a regular file" in r.stderr, r.stderr
