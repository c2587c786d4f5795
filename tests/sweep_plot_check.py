#!/usr/bin/env python3
"""Runs scripts/plot_sweep.py on a saved sweep JSON and checks a non-empty PNG came out, then the same
with predicted times added to its rows (the time panel, an infinite p99 left out as the C++ writes it,
a recommendation by time), then that a malformed JSON file is refused with exit 2 and one error line.
Exits 77 (skipped) when the script says matplotlib is missing.

    tests/sweep_plot_check.py scripts/plot_sweep.py tests/data/sweep_sample.json out.png
"""
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
    sys.exit(f"plot_sweep.py exited {rc}")
with open(png, "rb") as f:
    head = f.read(8)
if head != b"\x89PNG\r\n\x1a\n" or os.path.getsize(png) < 1000:
    sys.exit(f"{png}: not a PNG image or empty ({os.path.getsize(png)} bytes)")
print(f"{png}: {os.path.getsize(png)} bytes")


def timed(sample):
    """The sample as `sweep --cost` would write it: step_ms in every row (made up from its iterations:
    a fixed cost plus one per iteration), a quantile refused batches make infinite left out, and the
    recommendation by time."""
    sample["costs"] = [{"file": "example.json", "model": "deepseek-v3", "tp": 8, "dtype": "bf16", "gpu": "NVIDIA H200",
                        "attention": "flash (example)", "merge": "fused (example)", "timing": "eager",
                        "date": "2026-12-01"}]
    for r in sample["rows"]:
        it = r["iterations"]
        r["step_ms"] = {k: 40 + 6.1 * it[k] for k in ("mean", "p50", "p90", "p99", "max")}
        if r.get("refused_share", 0) > 0.005:
            del r["step_ms"]["p99"], r["step_ms"]["max"]
    rec = sample.get("recommendation") or {"quantile": 0.99, "memory_budget_bytes": None, "groups": []}
    rec.pop("max_iterations", None)
    rec.update({"objective": "time", "within": 0.05})
    sample["recommendation"] = rec
    return sample


# With predicted times: the second panel, and no max_iterations in a recommendation by time.
with tempfile.TemporaryDirectory() as tmp:
    with open(data) as f:
        sample = timed(json.load(f))
    if not any("p99" not in r["step_ms"] for r in sample["rows"]):
        sample["rows"][0]["step_ms"].pop("p99")  # at least one infinite p99
    src, out = os.path.join(tmp, "timed.json"), os.path.join(tmp, "timed.png")
    with open(src, "w") as f:
        json.dump(sample, f)
    p = subprocess.run([sys.executable, script, src, "-o", out], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"timed.json: plot_sweep.py exited {p.returncode} (stderr: {p.stderr.strip()})")
    with open(out, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n" or os.path.getsize(out) < 1000:
            sys.exit(f"{out}: not a PNG image or empty")
    print(f"timed.json: {os.path.getsize(out)} bytes")
    # Rows that repeat a buffer size (one series priced twice) and a title with a $: drawn, not a traceback.
    sample["rows"] += [dict(r, step_ms={k: v + 1 for k, v in r["step_ms"].items()}) for r in sample["rows"]]
    with open(src, "w") as f:
        json.dump(sample, f)
    p = subprocess.run([sys.executable, script, src, "-o", out, "--title", "$\\frac{$ 5$"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"repeated rows: plot_sweep.py exited {p.returncode} (stderr: {p.stderr.strip()})")

# Malformed input: not JSON, and JSON that is not a sweep. Neither may leave an image behind.
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "bad.png")
    for name, text in (("truncated.json", '{"source": "x", "rows": [{"policy": '),
                       ("not_a_sweep.json", '{"rows": [{"kernel": "fast", "median_us": 3}]}'),
                       ("bad_step_ms.json", '{"rows": [{"policy": "packed", "buffer_tokens": 4096, "iterations": '
                                            '{"mean": 1, "p50": 1, "p90": 1, "p99": 1, "max": 1}, "step_ms": {"p99": "x"}}]}'),
                       ("no_rows.json", '{"source": "x", "rows": []}')):
        bad = os.path.join(tmp, name)
        with open(bad, "w") as f:
            f.write(text)
        p = subprocess.run([sys.executable, script, bad, "-o", out], capture_output=True, text=True)
        if p.returncode != 2:
            sys.exit(f"{name}: plot_sweep.py exited {p.returncode}, expected 2 (stderr: {p.stderr.strip()})")
        lines = p.stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith(f"mlaplan: error: plot_sweep.py: {bad}: "):
            sys.exit(f"{name}: expected one line 'mlaplan: error: plot_sweep.py: {bad}: ...', got: {p.stderr!r}")
        if os.path.exists(out):
            sys.exit(f"{name}: an image was written for bad input")
        print(f"{name}: {lines[0]}")
    # Bad arguments and an image that cannot be written: one line too.
    for args, want in (([data, "-o", out, "--stat", "p42"], "--stat"), ([data], "-o/--output"),
                       ([data, "-o", os.path.join(tmp, "missing", "x.png")], "cannot write the image")):
        p = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
        lines = p.stderr.strip().splitlines()
        if p.returncode == 77:
            break  # matplotlib is missing: the image is never drawn
        if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("mlaplan: error: plot_sweep.py: ") or want not in lines[0]:
            sys.exit(f"{args}: expected exit 2 and one line naming {want}, got {p.returncode}: {p.stderr!r}")
        print(f"{' '.join(args[1:])}: {lines[0]}")
