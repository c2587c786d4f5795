#!/usr/bin/env python3
"""The table of docs/workloads.md ("Replaying a trace"): each Mooncake preset against its public trace
replayed, with an unlimited prefix cache and with one of 10% of the trace's distinct blocks: cached
tokens per request (p50/p90/p99), the share of input tokens cached, and the buffer that
`sweep --recommend` picks per policy at --max-iterations 2 and 4 (p99, DeepSeek-V3 at TP 8).

    scripts/replay_table.py build/mlaplan TRACES_DIR

TRACES_DIR holds conversation_trace.jsonl and synthetic_trace.jsonl from github.com/kvcache-ai/Mooncake
(FAST25-release/traces/). Prints Markdown on stdout.
"""
import math
import os
import sys

from script_errors import Field, fail, mlaplan_json, parse_json, read_lines, run

POLICIES = ["max", "packed", "packed/trtllm", "even-split/vllm", "even-split/sglang"]
BUFFERS = "4096,8192,16384,32768,65536,131072,262144,524288,1048576"
PAIRS = [("mooncake-conv", "conversation_trace.jsonl"), ("mooncake-synthetic", "synthetic_trace.jsonl")]


def quantile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, math.ceil(p * len(v)) - 1))]


BINARY = "an mlaplan binary (build/mlaplan)"


def recommended(exe, source, k):
    """The buffer per policy, and the sweep's source line (which holds a replay's statistics)."""
    out = mlaplan_json(exe, ["sweep", *source, "--batches", "100000", "--model", "deepseek-v3", "--tp", "8",
                             "--policy", "variants", "--buffer-tokens", BUFFERS, "--recommend",
                             "--max-iterations", str(k), "--format", "json"], "mlaplan sweep", BINARY)
    groups = {}
    for g in out["recommendation"]["groups"].list():
        buffer = g.get("buffer_tokens")
        groups[g["group"].text().split(" ")[0]] = buffer.number(low=1, integer=True) if buffer else None
    return [f"{groups[p]:,}" if groups.get(p) else "none" for p in POLICIES], out["source"].text()


def preset_row(exe, preset):
    # Whole requests, one per batch: the preset's draws as they are.
    gen = mlaplan_json(exe, ["gen", "--workload", preset, "--batch-size", "1", "--batches", "20000"], "mlaplan gen", BINARY)
    cached, total = [], []
    for s in gen["scenarios"].list(nonempty=True):
        c = s["cache_lengths"].list(nonempty=True)[0].number(low=0, integer=True)
        off = [x.number(low=0, integer=True) for x in s["input_row_offsets"].list()[:2]]
        cached.append(c)
        total.append(c + off[1] - off[0])
    if not sum(total):
        fail(f"mlaplan gen --workload {preset}: no tokens drawn; give {BINARY}")
    return cached, sum(cached) / sum(total)


def trace_blocks(trace):
    """The distinct block hashes of a Mooncake trace, every line checked."""
    what = f"the folder holding Mooncake's {' and '.join(n for _, n in PAIRS)} (FAST25-release/traces/)"
    blocks = set()
    for i, line in enumerate(read_lines(trace, what)):
        if line.strip():
            where = f"{trace}:{i + 1}"
            for h in Field(parse_json(line, where, what), where, what)["hash_ids"].list():
                blocks.add(h.number(low=0, integer=True))
    return blocks


def main():
    if len(sys.argv) != 3:
        fail("usage: scripts/replay_table.py build/mlaplan TRACES_DIR")
    exe, folder = sys.argv[1], sys.argv[2]
    distinct = {name: trace_blocks(os.path.join(folder, name)) for _, name in PAIRS}  # before any row is printed
    print("| requests from | prefix cache | cached p50 | p90 | p99 | input cached | "
          + " | ".join(f"{p} K=2 / K=4" for p in POLICIES) + " |")
    print("| --- | --- | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in POLICIES) + " |")
    for preset, name in PAIRS:
        trace = f"{folder}/{name}"
        cached, share = preset_row(exe, preset)
        (k2, _), (k4, _) = recommended(exe, ["--workload", preset], 2), recommended(exe, ["--workload", preset], 4)
        cells = [f"{a} / {b}" for a, b in zip(k2, k4)]
        print(f"| preset `{preset}` | (spread evenly) | {quantile(cached, .5):,} | {quantile(cached, .9):,} | "
              f"{quantile(cached, .99):,} | {100 * share:.1f}% | " + " | ".join(cells) + " |")
        blocks = distinct[name]
        for cache in (0, len(blocks) // 10 * 512):
            source = ["--replay", trace] + (["--prefix-cache-tokens", str(cache)] if cache else [])
            (k2, text), (k4, _) = recommended(exe, source, 2), recommended(exe, source, 4)
            # The replay's statistics: "N requests: X% of input tokens cached (per request: cached p50 A, p90 B, p99 C tokens; ..."
            per = text.split("cached p50 ")[1]
            p50 = int(per.split(",")[0])
            p90 = int(per.split("p90 ")[1].split(",")[0])
            p99 = int(per.split("p99 ")[1].split(" ")[0])
            share = text.split(" requests: ")[1].split("%")[0]
            cells = [f"{a} / {b}" for a, b in zip(k2, k4)]
            label = "unlimited" if not cache else f"{cache:,} tokens (10% of {len(blocks):,} blocks)"
            print(f"| trace `{name}` | {label} | {p50:,} | {p90:,} | {p99:,} | {share}% | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    run(main)
