#!/usr/bin/env python3
"""scripts/compare_bench.py on hand-made reports: rows agree when their medians differ by no more
than the wider reported spread; the exit status follows --min-agree."""
import json
import os
import subprocess
import sys
import tempfile

script = sys.argv[1]


def report(rows):
    return {"rows": [{"batch_size": b, "kernel": k, "mode": m, "median_us": med, "spread": sp} for b, k, m, med, sp in rows]}


def run(a, b, *extra):
    with tempfile.TemporaryDirectory() as d:
        pa, pb = os.path.join(d, "a.json"), os.path.join(d, "b.json")
        json.dump(report(a), open(pa, "w"))
        json.dump(report(b), open(pb, "w"))
        r = subprocess.run([sys.executable, script, pa, pb, *extra], capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr


first = [(1, "fast", "hot", 10.0, 0.10), (2, "fast", "hot", 20.0, 0.05), (3, "seed", "hot", 5.0, 0.0)]
# The second run is newer: its max-port row is the first run's seed row (the kernel's old name).
second = [(1, "fast", "hot", 10.9, 0.02), (2, "fast", "hot", 22.0, 0.05), (3, "max-port", "hot", 5.0, 0.0), (4, "x", "hot", 1, 0)]
code, out = run(first, second)
# 10 vs 10.9 is inside the wider spread (10%); 20 vs 22 (10%) is outside both 5% spreads.
assert code == 1, out
assert "differ: B=2 fast hot: 20 vs 22 us" in out, out
assert "2 of 3 rows agree" in out, out
code, out = run(first, second, "--min-agree", "60")
assert code == 0, out
for name in ("seed", "max-port"):
    code, out = run(first, second, "--kernels", name)
    assert code == 0 and "1 of 1 rows agree" in out, out
code, out = run(first, [(9, "fast", "hot", 1.0, 0.0)])
assert code == 2 and "share no rows" in out, out
# A file that is not a report is one error line, exit 2, naming it.
with tempfile.TemporaryDirectory() as d:
    missing = os.path.join(d, "missing.json")
    r = subprocess.run([sys.executable, script, missing, missing], capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"mlaplan: error: compare_bench.py: {missing}: "), r.stderr
    # Rows without a median, a median of 0 (the gap is a share of it), and a share past 100: one line each.
    code, out = run([(1, "fast", "hot", 0.0, 0.1)], second)
    assert code == 2 and "rows[0].median_us: 0.0 is not a number above 0" in out and out.count("\n") == 1, out
    code, out = run(first, second, "--min-agree", "nan")
    assert code == 2 and "--min-agree" in out and out.count("\n") == 1, out
    bad = os.path.join(d, "bad.json")
    json.dump({"rows": [{"batch_size": 1, "kernel": "fast", "mode": "hot", "spread": 0.1}]}, open(bad, "w"))
    r = subprocess.run([sys.executable, script, bad, bad], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "rows[0].median_us: missing" in r.stderr, r.stderr
    # JSON by the package's rules (python/mlaplan/_strict_json.py): NaN and a key given twice refused.
    for text, why in (('{"rows": [{"median_us": NaN}]}', "NaN is not a JSON number"),
                      ('{"rows": [], "rows": []}', "key 'rows' given twice in one object")):
        with open(bad, "w") as f:
            f.write(text)
        r = subprocess.run([sys.executable, script, bad, bad], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and f"{bad}: not JSON ({why})" in r.stderr, r.stderr
    # A stdout that cannot be written: one line, exit 3 (not a traceback).
    if os.path.exists("/dev/full"):
        with tempfile.TemporaryDirectory() as e:
            pa = os.path.join(e, "a.json")
            json.dump(report(first), open(pa, "w"))
            with open("/dev/full", "w") as full:
                r = subprocess.run([sys.executable, script, pa, pa], stdout=full, stderr=subprocess.PIPE, text=True)
            assert r.returncode == 3 and r.stderr.count("\n") == 1 and "stdout: cannot write it" in r.stderr, r.stderr
print("compare_bench: 11 checks passed")
