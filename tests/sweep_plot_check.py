#!/usr/bin/env python3
"""Runs scripts/plot_sweep.py on a saved sweep JSON and checks a non-empty PNG came out, then that a
malformed JSON file is refused with exit 2 and one error line. Exits 77 (skipped) when the script
says matplotlib is missing.

    tests/sweep_plot_check.py scripts/plot_sweep.py tests/data/sweep_sample.json out.png
"""
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
    sys.exit(f"plot_sweep.py exited {rc}")
with open(png, "rb") as f:
    head = f.read(8)
if head != b"\x89PNG\r\n\x1a\n" or os.path.getsize(png) < 1000:
    sys.exit(f"{png}: not a PNG image or empty ({os.path.getsize(png)} bytes)")
print(f"{png}: {os.path.getsize(png)} bytes")

# Malformed input: not JSON, and JSON that is not a sweep. Neither may leave an image behind.
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "bad.png")
    for name, text in (("truncated.json", '{"source": "x", "rows": [{"policy": '),
                       ("not_a_sweep.json", '{"rows": [{"kernel": "fast", "median_us": 3}]}'),
                       ("no_rows.json", '{"source": "x", "rows": []}')):
        bad = os.path.join(tmp, name)
        with open(bad, "w") as f:
            f.write(text)
        p = subprocess.run([sys.executable, script, bad, "-o", out], capture_output=True, text=True)
        if p.returncode != 2:
            sys.exit(f"{name}: plot_sweep.py exited {p.returncode}, expected 2 (stderr: {p.stderr.strip()})")
        lines = p.stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith(f"plot_sweep.py: error: {bad}: "):
            sys.exit(f"{name}: expected one line 'plot_sweep.py: error: {bad}: ...', got: {p.stderr!r}")
        if os.path.exists(out):
            sys.exit(f"{name}: an image was written for bad input")
        print(f"{name}: {lines[0]}")
