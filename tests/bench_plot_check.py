#!/usr/bin/env python3
"""Runs scripts/plot_bench.py on a saved bench JSON and checks a non-empty PNG came out, then that
malformed input and bad arguments are refused with exit 2, one error line and no image.
Exits 77 (skipped) when the script says matplotlib is missing."""
import json
import os
import subprocess
import sys
import tempfile

script, data, png = sys.argv[1:4]
if os.path.exists(png):
    os.remove(png)
rc = subprocess.call([sys.executable, script, data, "-o", png])
if rc == 77:
    sys.exit(77)
if rc != 0:
    sys.exit(f"plot_bench.py exited {rc}")
with open(png, "rb") as f:
    head = f.read(8)
if head != b"\x89PNG\r\n\x1a\n" or os.path.getsize(png) < 1000:
    sys.exit(f"{png}: not a PNG image or empty ({os.path.getsize(png)} bytes)")
print(f"{png}: {os.path.getsize(png)} bytes")

sample = json.load(open(data))
row = dict(sample["rows"][0])
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "bad.png")
    cases = {"truncated.json": '{"rows": [{"kernel": ',
             "a_list.json": "[1, 2]",
             "no_rows.json": json.dumps({**sample, "rows": []}),
             "no_mode.json": json.dumps({**sample, "rows": [{k: v for k, v in row.items() if k != "mode"}]}),
             "string_median.json": json.dumps({**sample, "rows": [{**row, "median_us": "3"}]}),
             "zero_size.json": json.dumps({**sample, "rows": [{**row, "batch_size": 0}]})}
    for name, text in cases.items():
        bad = os.path.join(tmp, name)
        with open(bad, "w") as f:
            f.write(text)
        p = subprocess.run([sys.executable, script, bad, "-o", out], capture_output=True, text=True)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith(f"mlaplan: error: plot_bench.py: {bad}: "):
            sys.exit(f"{name}: expected exit 2 and one line 'mlaplan: error: plot_bench.py: {bad}: ...', got {p.returncode}: {p.stderr!r}")
        if os.path.exists(out):
            sys.exit(f"{name}: an image was written for bad input")
        print(f"{name}: {lines[0]}")
    p = subprocess.run([sys.executable, script, data, "-o", os.path.join(tmp, "noext")], capture_output=True, text=True)
    if p.returncode != 2 or "write a .png or .svg image" not in p.stderr or sorted(os.listdir(tmp)) != sorted(cases):
        sys.exit(f"-o without .png or .svg: expected exit 2 and nothing written, got {p.returncode}: {p.stderr!r}")
    p = subprocess.run([sys.executable, script, data, "-o", os.path.join(tmp, "t.png"), "--title", "$\\frac{$"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"a title with $: exited {p.returncode}: {p.stderr!r}")
    p = subprocess.run([sys.executable, script, data, "-o", out, "--mode", "warm"], capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 2 or len(lines) != 1 or "--mode" not in lines[0]:
        sys.exit(f"--mode warm: expected exit 2 and one line, got {p.returncode}: {p.stderr!r}")
    print(f"--mode warm: {lines[0]}")
