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
import json
import os
import re
import tempfile

from script_errors import Parser, fail, run, run_mlaplan

REQUESTS, MIN_CACHED, MARKS = 2000, 4096, (30, 50, 70, 90)


def gen(mlaplan, *args, explain=lambda line: line):
    out = run_mlaplan(mlaplan, ["gen", "--page-size", "64", *args], explain(f"mlaplan gen {' '.join(args)}"), explain)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("scenarios"), list):
        fail(f"--mlaplan {mlaplan}: its gen printed no scenario file; give an mlaplan binary (build/mlaplan)")
    return doc


def main():
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("seed", type=int)
    ap.add_argument("first", type=int, help="the trace's first request replayed (1-based)")
    ap.add_argument("out_dir")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--mlaplan", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "mlaplan"))
    a = ap.parse_args()
    try:
        with open(a.trace) as f:
            lines = f.readlines()[a.first - 1 : a.first - 1 + REQUESTS]
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{a.trace}: {getattr(e, 'strerror', None) or e}; give Mooncake's conversation_trace.jsonl")
    if a.first < 1 or len(lines) < REQUESTS:
        fail(f"{a.trace}: requests {a.first} to {a.first + REQUESTS - 1} are not all there ({len(lines)} from {a.first}); "
             "give a FIRST of 1 or more that leaves 2,000 requests")
    docs = {w: gen(a.mlaplan, "--workload", w, "--seed", str(a.seed), "--batches", "4") for w in ("short-chat", "coding-agent")}
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as part:
        part.writelines(lines)
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
    # Written only once all three are drawn, each to a temporary file then renamed, after every target is
    # known to take a file: a failure leaves none of them.
    targets = {name: os.path.join(a.out_dir, f"{name}.json") for name in docs}
    for path in targets.values():
        if os.path.lexists(path) and not os.path.isfile(path):
            fail(f"{path}: not a regular file; give a folder whose {os.path.basename(path)} can be written")
    written = []
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.makedirs(a.out_dir, exist_ok=True)
        for name, doc in docs.items():
            # Beside the file a symlink points to, which is replaced in its place: the link stays.
            real = os.path.realpath(targets[name])
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(real), prefix=f".{name}.", suffix=".json")
            written.append(tmp)
            # The mode a file it replaces had, else what open() would give (mkstemp's is 0600).
            os.chmod(tmp, os.stat(real).st_mode & 0o7777 if os.path.exists(real) else 0o666 & ~umask)
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f, indent=2)
                f.write("\n")
        for tmp, path in zip(written, targets.values()):
            os.replace(tmp, os.path.realpath(path))
    except OSError as e:
        for tmp in written:
            if os.path.exists(tmp):
                os.remove(tmp)
        fail(f"{a.out_dir}: {e.strerror}; give a folder that can be written")


if __name__ == "__main__":
    run(main)
