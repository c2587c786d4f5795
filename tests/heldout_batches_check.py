"""scripts/heldout_batches.py: the held-out sets it draws are the committed ones. Seed 51's set, drawn
from the Mooncake head kept in tests/data, comes out batch for batch (its descriptions named the file
otherwise, and counted steps from 0), and an unknown trace or a failing mlaplan is one error line, exit 2 or gen's own.

    heldout_batches_check.py SCRIPT MLAPLAN ROOT
"""
import json
import os
import subprocess
import sys
import tempfile

script, exe, root = sys.argv[1:4]
committed = os.path.join(root, "docs", "data", "cost-validation", "seed-51")
trace = os.path.join(root, "tests", "data", "mooncake_conversation_head2000.jsonl")

with tempfile.TemporaryDirectory() as out:
    r = subprocess.run([sys.executable, script, "51", "1", out, "--trace", trace, "--mlaplan", exe],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for name in ("short-chat", "coding-agent", "mooncake-replay"):
        got = json.load(open(os.path.join(out, f"{name}.json")))["scenarios"]
        want = json.load(open(os.path.join(committed, f"{name}.json")))["scenarios"]
        strip = lambda ss: [{k: v for k, v in s.items() if k != "description"} for s in ss]  # noqa: E731
        assert strip(got) == strip(want), name
        if name == "mooncake-replay":
            assert [g["description"].rsplit("from ", 1)[1] for g in got] == [f"{m}% on; mlaplan gen --replay" for m in (30, 50, 70, 90)]
    r = subprocess.run([sys.executable, script, "51", "1", out, "--trace", os.path.join(out, "missing.jsonl"),
                        "--mlaplan", exe], capture_output=True, text=True, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("mlaplan: error:") and "missing.jsonl" in lines[0], r.stderr
    # A target that cannot be a file: refused before any is written, so none is left behind.
    blocked = os.path.join(out, "blocked")
    os.makedirs(os.path.join(blocked, "coding-agent.json"))
    r = subprocess.run([sys.executable, script, "51", "1", blocked, "--trace", trace, "--mlaplan", exe],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "coding-agent.json: not a regular file" in r.stderr, r.stderr
    assert sorted(os.listdir(blocked)) == ["coding-agent.json"], os.listdir(blocked)
    # A binary that is not mlaplan: one line, not a traceback.
    r = subprocess.run([sys.executable, script, "51", "1", blocked, "--trace", trace, "--mlaplan", "/bin/true"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "printed no JSON" in r.stderr, r.stderr
print("heldout_batches.py draws the committed seed-51 set")
