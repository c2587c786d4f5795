"""scripts/bench_sweep.py: a table row per preset with a cell per setting, JSON medians that are times,
and a missing binary is one error line, exit 2.

    bench_sweep_check.py SCRIPT MLAPLAN
"""
import json
import os
import subprocess
import sys
import tempfile

script, exe = sys.argv[1:3]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "medians.json")
    r = subprocess.run([sys.executable, script, "--exe", exe, "--batches", "200", "--repeats", "1", "--json", out],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == ["coding-agent", "mooncake-conv", "azure-conv", "short-chat"], r.stdout
    assert all(row.count(" s (") == 5 for row in rows), r.stdout
    medians = json.load(open(out))
    assert len(medians) == 20 and all(m["cpu"] > 0 and m["wall"] > 0 and 0 < m["sweep"] <= m["wall"] for m in medians.values()), medians
    r = subprocess.run([sys.executable, script, "--exe", os.path.join(tmp, "missing")], capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("mlaplan: error:") and "missing" in lines[0], r.stderr
    r = subprocess.run([sys.executable, script, "--exe", "/bin/true", "--batches", "1", "--repeats", "1"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "wrote no JSON" in r.stderr, r.stderr
print("bench_sweep.py times every preset and setting")
