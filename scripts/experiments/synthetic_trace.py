#!/usr/bin/env python3
"""A synthetic Mooncake-format trace of N requests (default 10^7, about 1.2 GB), for timing the
replay at scale (docs/performance.md, "Trace replay"): Poisson arrivals of about 2,800 requests a
second, lognormal input lengths (mu 7, sigma 1), and 60% of requests starting with one of the last
1,000 shared prefixes (one request in a thousand starts a new one); the rest of each prompt is fresh
blocks of 512 tokens.

    python3 scripts/experiments/synthetic_trace.py OUT.jsonl [N]
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/, for script_errors
from script_errors import Parser, fail, replacing, run  # noqa: E402


def main():
    ap = Parser(prog="scripts/experiments/synthetic_trace.py", description=__doc__.split("\n")[0])
    ap.add_argument("out", metavar="OUT.jsonl")
    ap.add_argument("n", type=int, nargs="?", default=10_000_000, metavar="N", help="requests, 1 to 10^9 (10^7)")
    a = ap.parse_args()
    if not 1 <= a.n <= 10**9:
        fail(f"N {a.n}: give 1 to 1,000,000,000 requests")
    random.seed(1)
    next_id, popular, t = 0, [], 0.0
    # Streamed to a temporary file renamed over OUT once whole: a trace cut short (Ctrl-C, a full disk)
    # would time something else.
    with replacing(a.out, "OUT.jsonl") as f:
        for _ in range(a.n):
            t += random.expovariate(1 / 0.36)
            length = int(random.lognormvariate(7.0, 1.0)) + 1
            blocks = (length + 511) // 512
            ids = list(random.choice(popular)[:blocks]) if popular and random.random() < 0.6 else []
            while len(ids) < blocks:
                ids.append(next_id)
                next_id += 1
            if random.random() < 0.001 and len(ids) >= 2:
                popular = (popular + [ids])[-1000:]
            f.write('{"timestamp": %.3f, "input_length": %d, "output_length": 1, "hash_ids": [%s]}\n'
                    % (t, length, ", ".join(map(str, ids))))
    print(f"{a.n} requests, {next_id} distinct blocks", file=sys.stderr)


if __name__ == "__main__":
    run(main)
