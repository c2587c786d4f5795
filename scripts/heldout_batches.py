#!/usr/bin/env python3
"""Draws a held-out batch set for validating cost files (docs/data/cost-validation/seed-N/): `mlaplan gen`
of the short-chat and coding-agent presets (that seed, pages of 64, four steps each) and four steps of
the Mooncake conversation trace's requests FIRST to FIRST + 1,999 replayed through an unlimited prefix
cache, each the first step with at least 4,096 cached tokens from 30%, 50%, 70% and 90% of the way.

  scripts/heldout_batches.py SEED FIRST OUT_DIR --trace conversation_trace.jsonl [--mlaplan build/mlaplan]

The trace is Mooncake's FAST25-release/traces/conversation_trace.jsonl (github.com/kvcache-ai/Mooncake).
Seed 81's set is SEED 81, FIRST 6001; seed 91's, SEED 91, FIRST 8001; seed 131's, SEED 131, FIRST 5001.
The Mooncake steps depend on FIRST alone: a FIRST another set used gives that set's steps again.
"""
import os
import re
import tempfile

from script_errors import Parser, dumps, fail, mlaplan_json, read_lines, run, write_files

REQUESTS, MIN_CACHED, MARKS = 2000, 4096, (30, 50, 70, 90)


def gen(mlaplan, *args, explain=lambda line: line):
    """The scenarios mlaplan gen printed, each with what is read of it checked."""
    label = explain(f"mlaplan gen {' '.join(args)}")
    out = mlaplan_json(mlaplan, ["gen", "--page-size", "64", *args], label, "an mlaplan binary (build/mlaplan) as --mlaplan")
    scenarios = out["scenarios"].list()
    for s in scenarios:
        for c in s["cache_lengths"].list():
            c.number(low=0, integer=True)
    return {"scenarios": [s.value for s in scenarios]}


def main():
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("seed", type=int)
    ap.add_argument("first", type=int, help="the trace's first request replayed (1-based)")
    ap.add_argument("out_dir")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--mlaplan", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "mlaplan"))
    a = ap.parse_args()
    if a.first < 1:
        fail(f"FIRST: {a.first} is below 1; give the trace's first request replayed, from 1")
    lines = read_lines(a.trace, "Mooncake's conversation_trace.jsonl")[a.first - 1 : a.first - 1 + REQUESTS]
    if len(lines) < REQUESTS:
        fail(f"{a.trace}: requests {a.first} to {a.first + REQUESTS - 1} are not all there ({len(lines)} from {a.first}); "
             "give a FIRST of 1 or more that leaves 2,000 requests")
    docs = {w: gen(a.mlaplan, "--workload", w, "--seed", str(a.seed), "--batches", "4") for w in ("short-chat", "coding-agent")}
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as part:
        part.writelines(line + "\n" for line in lines)
        part.flush()
        # mlaplan reads the requests from a temporary file: its errors name the trace and the trace's line.
        at = re.compile(re.escape(part.name) + r"(:(\d+))?")
        steps = gen(a.mlaplan, "--replay", part.name, explain=lambda line: at.sub(
            lambda m: a.trace + (f":{int(m.group(2)) + a.first - 1}" if m.group(2) else ""), line))["scenarios"]
    picked = []
    for i, mark in enumerate(MARKS):
        at = len(steps) * mark // 100
        k = next((k for k in range(at, len(steps)) if sum(steps[k]["cache_lengths"]) >= MIN_CACHED), None)
        if k is None:
            fail(f"{a.trace}: no step from {mark}% on has {MIN_CACHED:,} cached tokens; replay other requests")
        s = dict(steps[k], name=f"mooncake-replay-{i}")
        s["description"] = (f"Mooncake conversation trace, requests {a.first:,} to {a.first + REQUESTS - 1:,} replayed through "
                            f"an unlimited prefix cache: step {k + 1} of {len(steps)}, the first with at least {MIN_CACHED:,} "
                            f"cached tokens from {mark}% on; mlaplan gen --replay")
        picked.append(s)
    docs["mooncake-replay"] = {"scenarios": picked}
    # Written only once all three are drawn, and all or none of them.
    try:
        os.makedirs(a.out_dir, exist_ok=True)
    except OSError as e:
        fail(f"{a.out_dir}: cannot make the folder ({e.strerror}); give OUT_DIR in a writable folder")
    write_files({os.path.join(a.out_dir, f"{name}.json"): dumps(doc, indent=2) + "\n" for name, doc in docs.items()}, "OUT_DIR")


if __name__ == "__main__":
    run(main)
