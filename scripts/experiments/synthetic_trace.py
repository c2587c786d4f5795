#!/usr/bin/env python3
"""A synthetic Mooncake-format trace of N requests (default 10^7, about 1.2 GB), for timing the
replay at scale (docs/performance.md, "Trace replay"): Poisson arrivals of about 2,800 requests a
second, lognormal input lengths (mu 7, sigma 1), and 60% of requests starting with one of the last
1,000 shared prefixes (one request in a thousand starts a new one); the rest of each prompt is fresh
blocks of 512 tokens.

    python3 scripts/experiments/synthetic_trace.py OUT.jsonl [N]
"""
import random
import sys

out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10_000_000
random.seed(1)
next_id, popular, t = 0, [], 0.0
with open(out, "w") as f:
    for _ in range(n):
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
print(f"{n} requests, {next_id} distinct blocks", file=sys.stderr)
