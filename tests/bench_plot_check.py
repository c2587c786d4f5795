#!/usr/bin/env python3
"""Runs scripts/plot_bench.py on a saved bench JSON and checks a non-empty PNG came out.
Exits 77 (skipped) when the script says matplotlib is missing."""
import os
import subprocess
import sys

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
