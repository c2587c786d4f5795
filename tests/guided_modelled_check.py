"""scripts/guided_modelled.py: docs/policies.md's modelled coding-agent rows are what the script makes
of the shipped DeepSeek-V3 TP 8 files (a CPU computation), and bad input is one error line, exit 2.

    guided_modelled_check.py SCRIPT MLAPLAN ROOT
"""
import os
import subprocess
import sys

script, exe, root = sys.argv[1:4]
files = [("FA2, graph", "deepseek-v3-tp8-bf16.json"), ("FA2, eager", "deepseek-v3-tp8-bf16.json,eager"),
         ("FA3, graph", "deepseek-v3-tp8-bf16-fa3.json"), ("FA3, eager", "deepseek-v3-tp8-bf16-fa3.json,eager")]


def run(*args):
    return subprocess.run([sys.executable, script, exe, *args], capture_output=True, text=True, timeout=120)


r = run(*[f"{label}={os.path.join(root, 'costs', 'h200', f)}" for label, f in files], "--", "coding-agent",
        "--workload", "coding-agent", "--batches", "2000")
assert r.returncode == 0, r.stderr
rows = r.stdout.strip().splitlines()
assert len(rows) == 4, rows
doc = open(os.path.join(root, "docs", "policies.md")).read()
for row in rows:
    assert row in doc, f"docs/policies.md lacks the row the shipped files give: {row}"

for bad in (["x=/nonexistent/cost.json", "--", "w", "--workload", "coding-agent"],
            [f"x={os.path.join(root, 'costs', 'h200', files[0][1])},fast", "--", "w", "--workload", "coding-agent"],
            ["x=c.json", "--", "--workload"], ["x=c.json"]):
    r = run(*bad)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("mlaplan: error: "), (bad, r.returncode, r.stderr)
print("ok")
