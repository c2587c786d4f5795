"""Which probe of the host's speed follows a host-bound layer's eager time from moment to moment.

The eager timings scale each run's host costs by a CPU probe taken beside it (cpu_speed: a fixed
pure-Python loop), which followed the dispatch only in part (docs/cost-model.md). This times, in
rounds a little apart, a host-bound layer (a short-chat step of 40 sequences under vLLM's packed plan,
DeepSeek-V3 TP 8, FlashAttention-3; the executor's eager time and its dispatch behind a sleeping GPU)
between probes of three shapes, each taken just before and just after it:
- python: cpu_speed's loop (what the records keep as cpu_probe_ms);
- launches: 200 bare torch launches on a one-element CUDA tensor, the host's issue time;
- layer: the host's issue time of another, small layer through the same executor (8 sequences, the
  even split, one iteration: a different plan from the one timed), mlaplan.prefill.dispatch_probe,
  what eager records keep as dispatch_probe_ms.
For each, prints the correlation with the layer's times and the spread the layer's eager time keeps
once scaled by the probe (p50 and p90 of |t / probe / median - 1|), against its spread unscaled.
With --interleave the layer's probe is also taken before each timed repetition (and after the last),
and `layer, each rep` is the median of those probes, beside `layer, ends`, the mean of the first and last.

  python scripts/experiments/probe_tracking.py [--rounds 150] [--json OUT.json]   # on a CUDA GPU
"""
import statistics
import time

import numpy as np
import torch

from mlaplan.prefill import cpu_speed, dispatch_probe
from mlaplan.prefill.executor import execute
from mlaplan.prefill.timing import time_eager, time_eager_probed, time_host
from warmed_layer import warmed_layer
from saved_runs import Parser, dumps, run, write_files

TIMED = ([300 + 37 * i for i in range(40)], [200] * 40, "packed", 16384)


def launches_ms(t, n=200):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        t.add_(1)
    ms = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    return ms


def spread(v):
    v = np.asarray(v) / np.median(v) - 1
    return float(np.quantile(np.abs(v), 0.5)), float(np.quantile(np.abs(v), 0.9))


def main():
    ap = Parser()
    ap.add_argument("--rounds", type=int, default=150)
    ap.add_argument("--pause-s", type=float, default=0.2)
    ap.add_argument("--json")
    ap.add_argument("--interleave", action="store_true")
    args = ap.parse_args()
    timed = warmed_layer(*TIMED)
    tiny = torch.zeros(1, device="cuda")
    probes = {"python": cpu_speed.current_ms, "launches": lambda: min(launches_ms(tiny), launches_ms(tiny)),
              "layer": lambda: dispatch_probe.probe_ms(timed)}
    for f in probes.values():  # first calls out of the way
        f()
    rows = []
    t0 = time.monotonic()
    for _ in range(args.rounds):
        before = {k: f() for k, f in probes.items()}
        if args.interleave:  # as eager records are timed (timing.time_eager_probed), each probe kept
            each = []

            def kept():
                each.append(probes["layer"]())
                return each[-1]

            samples, _ = time_eager_probed(lambda: execute(timed), 5, 1, 0.0, kept)
            eager = statistics.median(samples)
        else:
            eager = statistics.median(time_eager(lambda: execute(timed), True, 5, 1))
        host = time_host(lambda: execute(timed), 3)
        after = {k: f() for k, f in probes.items()}
        rows.append({"t_s": time.monotonic() - t0, "eager_ms": eager,
                     "host_ms": statistics.median(host) if host else None,
                     **{k: (before[k] + after[k]) / 2 for k in probes},
                     **{k + "_change": after[k] / before[k] - 1 for k in probes},
                     **({"layer, ends": (each[0] + each[-1]) / 2, "layer, each rep": statistics.median(each)}
                        if args.interleave else {})})
        time.sleep(args.pause_s)
    if args.json:  # the figures first, so that a failed print leaves them
        doc = {"rounds": args.rounds, "pause_s": args.pause_s, "timed": TIMED,
               "reference": [dispatch_probe.CACHE, dispatch_probe.NEW, dispatch_probe.POLICY, dispatch_probe.BUFFER_TOKENS],
               "rows": rows}
        write_files({args.json: dumps(doc)}, "--json")
    ok = [r for r in rows if r["host_ms"] is not None]
    eager = np.asarray([r["eager_ms"] for r in ok])
    host = np.asarray([r["host_ms"] for r in ok])
    print(f"{len(ok)} of {args.rounds} rounds over {rows[-1]['t_s']:.0f} s; eager p10/p50/p90 "
          f"{np.quantile(eager, 0.1):.3f}/{np.median(eager):.3f}/{np.quantile(eager, 0.9):.3f} ms")
    e50, e90 = spread(eager)
    print(f"{'probe':15} {'p50 ms':>8} {'corr eager':>11} {'corr host':>10} {'eager spread p50/p90':>22}   "
          f"(unscaled {100 * e50:.1f}%/{100 * e90:.1f}%)")
    for k in [*probes, *(["layer, ends", "layer, each rep"] if args.interleave else [])]:
        v = np.asarray([r[k] for r in ok])
        s50, s90 = spread(eager / v)
        print(f"{k:15} {np.median(v):8.3f} {np.corrcoef(eager, v)[0, 1]:+11.2f} {np.corrcoef(host, v)[0, 1]:+10.2f} "
              f"{100 * s50:>13.1f}%/{100 * s90:.1f}%")


if __name__ == "__main__":
    run(main)
