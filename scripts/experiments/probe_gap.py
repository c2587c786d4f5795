"""Whether the dispatch probe before each timed repetition makes a device-bound layer's eager time
shorter. The probe issues a small layer with the GPU idle first, so the GPU rests a millisecond or two
before each repetition; a FlashAttention-3 step that holds the card at its power cap may then start
at a higher clock. On the held-out runs measured with the probe (seeds 91 and 101), the eager time
of device-bound coding-agent steps fell below their graph time in 35-63% of the runs, against 7-38%
in the runs of seeds 71 and 81, measured without it (docs/cost-model.md, "Where it stands").

Times seed 101's first coding-agent step (10 sequences, 845,413 cached and 8,192 new tokens,
DeepSeek-V3 TP 8, FA3) under packed at 128K rows, in rounds, each round eagerly without probes,
eagerly with the probe before each repetition (as calibration and validation time it) and replayed
as a graph, in an order that turns each round; each after the usual 250 ms settle. Prints the
median ratios of the probed and unprobed eager times to each other and to the graph's, and how many
rounds each way.

  python scripts/experiments/probe_gap.py [--rounds 12] [--json OUT.json]   # on a CUDA GPU
"""
import argparse
import json
import os
import statistics

import numpy as np
import torch

from mlaplan.prefill import dispatch_probe
from mlaplan.prefill.executor import execute
from mlaplan.prefill.timing import SETTLE_MS, time_eager, time_eager_probed, time_graph
from saved_runs import fail
from warmed_layer import first_batch, warmed_layer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODING_AGENT = os.path.join(ROOT, "docs", "data", "cost-validation", "seed-101", "coding-agent.json")
REPS = 5


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=12, help="rounds of the three timings (default 12)")
    ap.add_argument("--json", help="write each round's times here")
    a = ap.parse_args()
    if a.rounds < 1:
        fail(f"--rounds {a.rounds}: give a whole number >= 1")
    if not torch.cuda.is_available():
        fail("no CUDA GPU: the gap it times is the GPU's")
    p = warmed_layer(*first_batch(CODING_AGENT), "packed", 131072)
    fn = lambda: execute(p)  # noqa: E731
    timings = {
        "eager": lambda: statistics.median(time_eager(fn, True, REPS, 1, SETTLE_MS)),
        "eager, probed": lambda: statistics.median(time_eager_probed(fn, REPS, 1, SETTLE_MS, lambda: dispatch_probe.probe_ms(p))[0]),
        "graph": lambda: statistics.median(time_graph(fn, REPS, 1, SETTLE_MS)),
    }
    names = list(timings)
    rows = []
    for r in range(a.rounds):
        order = names[r % 3:] + names[: r % 3]
        rows.append({name: timings[name]() for name in order} | {"order": order})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"layer": "seed-101 coding-agent-0, packed at 131072, DeepSeek-V3 TP 8, FA3", "reps": REPS,
                       "settle_ms": SETTLE_MS, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    probed = np.asarray([x["eager, probed"] / x["eager"] for x in rows])
    print(f"{a.rounds} rounds; medians: eager {statistics.median(x['eager'] for x in rows):.3f} ms, probed "
          f"{statistics.median(x['eager, probed'] for x in rows):.3f} ms, graph {statistics.median(x['graph'] for x in rows):.3f} ms")
    print(f"probed / unprobed eager: median {np.median(probed):.4f} (p10 {np.quantile(probed, 0.1):.4f}, p90 "
          f"{np.quantile(probed, 0.9):.4f}), below 1 in {int((probed < 1).sum())} of {a.rounds} rounds")
    for name in ("eager", "eager, probed"):
        v = np.asarray([x[name] / x["graph"] for x in rows])
        print(f"{name} / graph: median {np.median(v):.4f}, below 1 in {int((v < 1).sum())} of {a.rounds} rounds")


if __name__ == "__main__":
    main()
