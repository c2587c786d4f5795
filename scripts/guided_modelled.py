#!/usr/bin/env python3
"""The modelled table of docs/policies.md: `guided` against the best engine by the cost model, a row
per cost file, timing and workload. Each row runs `mlaplan sweep --format json` over MAX, packed, the
two even splits and guided (guided/eager under eager timing) at 8K-64K rows and 16M, and gives each
buffer's best engine and guided as their mean layer time over the one-chunk bound (the lower of
packed's and the even split's means at 16M rows), and the share of the best engine's excess guided
removes, averaged over the four buffers (a buffer where the best engine is within 0.5% of the bound
counts as met, all removed).

    scripts/guided_modelled.py MLAPLAN LABEL=COST.json[,eager] ... -- NAME SWEEP-SOURCE-ARGS [-- NAME ...]

e.g. `scripts/guided_modelled.py build/mlaplan "FA3, eager=costs/h200/deepseek-v3-tp8-bf16-fa3.json,eager"
-- coding-agent --workload coding-agent --batches 2000 -- "Mooncake trace" --replay conversation_trace.jsonl
--batches 10000`. Prints Markdown rows on stdout, the NAME in the workload column.
"""
import sys

from script_errors import cell, fail, mlaplan_json, run

BUFFERS = (8192, 16384, 32768, 65536)
WHOLE = 16777216
ENGINES = {"max": "MAX", "packed": "packed", "even-split/vllm": "even split", "even-split/sglang": "SGLang"}
MET = 0.005


def sweep(exe, cost, timing, source):
    guided = "guided/eager" if timing == "eager" else "guided"
    # --max-model-len at its most for a workload: the rows keep its long contexts, which --model would
    # cap at DeepSeek-V3's 163,840 tokens (scenario files keep their batches as they are).
    uncapped = ["--max-model-len", "4294967296"] if {"--workload", "--lengths", "--replay"} & set(source) else []
    args = ["sweep", *source, "--model", "deepseek-v3", "--tp", "8", *uncapped, "--cost", cost, "--timing", timing,
            "--policy", ",".join([*ENGINES, guided]), "--buffer-tokens", ",".join(map(str, (*BUFFERS, WHOLE))), "--format", "json"]
    mean = {}
    out = mlaplan_json(exe, args, f"mlaplan sweep with {cost}", "MLAPLAN, an mlaplan binary (build/mlaplan)")
    for r in out["rows"].list():
        ms = r.get("layer_ms")  # absent where batches were refused (MAX past max_chunks)
        if ms is not None and isinstance(ms.value, dict):
            ms = ms.get("mean")
        if ms is not None:
            policy = r["policy"].text().split(":")[0].replace("guided/eager", "guided")
            mean[(policy, r["buffer_tokens"].number(low=1, integer=True))] = ms.number(above=0)
    return mean


def row(mean, label):
    def at(policy, buffer):
        if (policy, buffer) not in mean:
            fail(f"{label}: no mean layer time for {policy} at {buffer:,} rows; give MLAPLAN, an mlaplan binary (build/mlaplan)")
        return mean[(policy, buffer)]

    bound = min(at("packed", WHOLE), at("even-split/vllm", WHOLE))
    cells, removed, met = [], [], 0
    for b in BUFFERS:
        over = {p: mean[(p, b)] / bound - 1 for p in ENGINES if (p, b) in mean}
        if not over:
            at("packed", b)
        best = min(over, key=over.get)
        g = at("guided", b) / bound - 1
        cells.append(f"{ENGINES[best]} {over[best]:+.1%} / " + (f"**{g:+.1%}**" if g <= over[best] else f"{g:+.1%}"))
        if over[best] <= MET:
            met += 1
            removed.append(1.0)
        else:
            removed.append((over[best] - g) / over[best])
    share = sum(removed) / len(removed)
    return cells, f"{share:.0%}" + (f" ({met} met)" if met else "")


def main(argv):
    if len(argv) < 4 or "--" not in argv:
        fail("usage: scripts/guided_modelled.py MLAPLAN LABEL=COST.json[,eager] ... -- NAME SWEEP-SOURCE-ARGS [-- ...]")
    exe, rest = argv[1], argv[2:]
    cut = rest.index("--")
    files, sources = rest[:cut], [[]]
    for a in rest[cut + 1:]:
        if a == "--":
            sources.append([])
        else:
            sources[-1].append(a)
    if any(len(source) < 2 for source in sources):
        fail("each source after -- is a NAME and the sweep's source arguments, e.g. -- coding-agent --workload coding-agent")
    for f in files:
        label, _, spec = f.partition("=")
        cost, _, timing = spec.partition(",")
        if not label or not cost:
            fail(f"{f!r}: give LABEL=COST.json or LABEL=COST.json,eager")
        for source in sources:
            if timing not in ("", "graph", "eager"):
                fail(f"{f!r}: the timing after the comma is graph or eager")
            cells, share = row(sweep(exe, cost, timing or "graph", source[1:]), f"mlaplan sweep with {cost}")
            print(f"| {cell(label)} | {cell(source[0])} | " + " | ".join(cells) + f" | {share} |")


if __name__ == "__main__":
    run(lambda: main(sys.argv))
