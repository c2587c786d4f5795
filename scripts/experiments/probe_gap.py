"""Whether the dispatch probe before each timed repetition makes a device-bound layer's eager time
shorter. The probe issues a small layer with the GPU idle first, so the GPU rests a millisecond or two
before each repetition; a FlashAttention-3 step that holds the card at its power cap may then start
at a higher clock. On the held-out runs measured with the probe (seeds 91 and 101), the eager time
of device-bound coding-agent steps fell below their graph time in 35-63% of the runs, against 7-38%
in the runs of seeds 71 and 81, measured without it (docs/cost-model.md, "Where it stands").

Times two layers of DeepSeek-V3 TP 8 with FA3, in rounds: seed 101's first coding-agent step (10
sequences, 845,413 cached and 8,192 new tokens) under packed at 128K rows, a device-bound step of
about 50 ms, and its second Mooncake step (one sequence of 7,033 cached and 8,192 new tokens) under
packed at 8K rows, a step of a millisecond or two. The eager model prices the held-out Mooncake runs
3-6% long at the median with FA3 and within 1.5% with FlashAttention-2, and such steps ran 6-8%
faster in their first replays after a pause than sustained (docs/cost-model.md, "Sustained clocks"). Each round times each layer
eagerly without probes (its repetitions back to back), eagerly with the probe before each repetition
(as calibration and validation time it), the same with the layer run back to back for REHEAT_MS
after each probe, and replayed as a graph, in an order that turns each round; each after the usual
250 ms settle. Prints, per layer, the median ratios of the probed eager times to the unprobed and of
each eager time to the graph's, and how many rounds each way. If the probe's rest speeds the step up
and the reheat takes that back, the timed eager runs should reheat.

  python scripts/experiments/probe_gap.py [--rounds 8] [--json OUT.json]   # on a CUDA GPU
"""
import os
import statistics

import numpy as np
import torch

from mlaplan.prefill import dispatch_probe
from mlaplan.prefill.__main__ import _count
from mlaplan.prefill.executor import execute
from mlaplan.prefill.timing import SETTLE_MS, time_eager, time_eager_probed, time_graph
from saved_runs import Parser, dumps, fail, run, write_files
from warmed_layer import first_batch, warmed_layer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED_101 = os.path.join(ROOT, "docs", "data", "cost-validation", "seed-101")
LAYERS = {"coding-agent-0, packed at 131072": (os.path.join(SEED_101, "coding-agent.json"), 0, "packed", 131072),
          "mooncake-replay-1, packed at 8192": (os.path.join(SEED_101, "mooncake-replay.json"), 1, "packed", 8192)}
REPS = 5
REHEAT_MS = 100  # FlashAttention-3 draws the card to its power cap within about 0.1 s (timing.SETTLE_MS)


def timings(p) -> dict:
    fn = lambda: execute(p)  # noqa: E731
    probe = lambda: dispatch_probe.probe_ms(p)  # noqa: E731
    return {
        "eager": lambda: statistics.median(time_eager(fn, True, REPS, 1, SETTLE_MS)),
        "eager, probed": lambda: statistics.median(time_eager_probed(fn, REPS, 1, SETTLE_MS, probe)[0]),
        "eager, probed, reheated": lambda: statistics.median(time_eager_probed(fn, REPS, 1, SETTLE_MS, probe,
                                                                               reheat_ms=REHEAT_MS)[0]),
        "graph": lambda: statistics.median(time_graph(fn, REPS, 1, SETTLE_MS)),
    }


def main():
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=_count(1, 1000), default=8, help="rounds of the four timings of each layer (default 8)")
    ap.add_argument("--json", help="write each round's times here")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        fail("no CUDA GPU: the gap it times is the GPU's")
    out = {"model": "DeepSeek-V3 TP 8, FA3", "reps": REPS, "settle_ms": SETTLE_MS, "reheat_ms": REHEAT_MS,
           "device": torch.cuda.get_device_name(), "layers": {}}
    for layer, (path, index, policy, buffer) in LAYERS.items():
        ways = timings(warmed_layer(*first_batch(path, index), policy, buffer))
        names = list(ways)
        rows = []
        for r in range(a.rounds):
            order = names[r % len(names):] + names[: r % len(names)]
            rows.append({name: ways[name]() for name in order} | {"order": order})
        out["layers"][layer] = rows
        print(f"{layer}: {a.rounds} rounds; medians: " + ", ".join(
            f"{name} {statistics.median(x[name] for x in rows):.3f} ms" for name in names))
        for name in ("eager, probed", "eager, probed, reheated"):
            v = np.asarray([x[name] / x["eager"] for x in rows])
            print(f"  {name} / eager: median {np.median(v):.4f} (p10 {np.quantile(v, 0.1):.4f}, p90 "
                  f"{np.quantile(v, 0.9):.4f}), below 1 in {int((v < 1).sum())} of {a.rounds} rounds")
        for name in names[:-1]:
            v = np.asarray([x[name] / x["graph"] for x in rows])
            print(f"  {name} / graph: median {np.median(v):.4f}, below 1 in {int((v < 1).sum())} of {a.rounds} rounds")
    if a.json:
        write_files({a.json: dumps(out, indent=1)}, "--json")


if __name__ == "__main__":
    run(main)
