"""scripts/guided_table.py: docs/policies.md's measured table is what the script makes of the reports
committed beside it, and bad input is one error line."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "guided_table.py")
DATA = os.path.join(ROOT, "docs", "data", "policy-guided")
LABELS = [("FA3, graph", "fa3-graph"), ("FA3, eager", "fa3-eager"), ("FA2, graph", "fa2-graph"), ("FA2, eager", "fa2-eager")]


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)


def test_policies_md_table_is_the_scripts_output():
    r = run(*[f"{label}={DATA}/report-h200-{tag}-seed71-2026-12-03.json" for label, tag in LABELS])
    assert r.returncode == 0, r.stderr
    rows = r.stdout.strip().splitlines()
    assert len(rows) == 8 and all(row.count(" | ") == 5 for row in rows)
    doc = open(os.path.join(ROOT, "docs", "policies.md")).read()
    for row in rows:
        assert row in doc, f"docs/policies.md lacks the row the reports give: {row[:80]}"


def test_policies_md_seed81_rows_are_the_scripts_output():
    # The FA3 measurement on seed-81 batches; its eager model column at the file's host speed.
    r = run(*[f"{label}={DATA}/report-h200-{tag}-seed81-2026-12-04.json" for label, tag in LABELS[:2]])
    assert r.returncode == 0, r.stderr
    rows = r.stdout.strip().splitlines()
    assert len(rows) == 4
    doc = open(os.path.join(ROOT, "docs", "policies.md")).read()
    for row in rows:
        assert row in doc, f"docs/policies.md lacks the row the reports give: {row[:80]}"


def test_bad_input_is_one_line(tmp_path):
    (tmp_path / "r.json").write_text('{"timing": "graph"}')
    for args in ([f"x={tmp_path}/missing.json"], [f"x={tmp_path}/r.json"]):
        r = run(*args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("mlaplan: error: guided_table.py:"), r.stderr
        assert r.stdout == ""
    assert run().returncode == 2
