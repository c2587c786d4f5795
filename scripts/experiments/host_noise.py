"""How much the host's dispatch of one eager layer varies over a minute, and whether pinning the
process to one CPU with Python's garbage collector off steadies it: two host-bound layers (a
short-chat step of 40 sequences under vLLM's packed plan, a coding-agent step under the even split at
8K rows; DeepSeek-V3 TP 8, FlashAttention-3), each timed in rounds that alternate the two settings,
so that whatever else the machine does falls on both alike.

  python scripts/experiments/host_noise.py [--rounds 40] [--json OUT.json]   # on a CUDA GPU
"""
import gc
import os
import statistics
import time

import numpy as np

from mlaplan.prefill.executor import execute
from mlaplan.prefill.timing import time_eager, time_host
from warmed_layer import warmed_layer
from saved_runs import Parser, dumps, run, write_files

LAYERS = {
    "short-chat packed": ([300 + 37 * i for i in range(40)], [200] * 40, "packed", 16384),
    "coding-agent even split 8K": ([67733, 130224, 137232, 250000, 90000], [1172, 5824, 596, 400, 200], "even-split", 8192),
}


def main():
    ap = Parser()
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--pause-s", type=float, default=0.5)
    ap.add_argument("--json")
    args = ap.parse_args()
    layers = {name: (lambda p=warmed_layer(*layer): execute(p)) for name, layer in LAYERS.items()}
    cpus = sorted(os.sched_getaffinity(0))
    settings = {"as is": (None, True), "one CPU, gc off": ({cpus[-1]}, False)}
    out = {name: {s: {"host_ms": [], "eager_ms": []} for s in settings} for name in layers}
    t0 = time.monotonic()
    for r in range(args.rounds):
        for sname, (aff, gc_on) in (settings.items() if r % 2 == 0 else reversed(list(settings.items()))):
            os.sched_setaffinity(0, aff or set(cpus))
            gc.enable() if gc_on else gc.disable()
            for lname, fn in layers.items():
                h = time_host(fn, 3)
                e = time_eager(fn, True, 3, 1)
                out[lname][sname]["host_ms"].append(statistics.median(h) if h else None)
                out[lname][sname]["eager_ms"].append(statistics.median(e))
        os.sched_setaffinity(0, set(cpus))
        gc.enable()
        time.sleep(args.pause_s)
    # The figures first, so that a failed print leaves them.
    if args.json:
        write_files({args.json: dumps({"rounds": args.rounds, "pause_s": args.pause_s, "layers": out})}, "--json")
    print(f"{args.rounds} rounds in {time.monotonic() - t0:.0f} s; {len(cpus)} CPUs; {os.cpu_count()} on the machine")
    for lname, by in out.items():
        for sname, d in by.items():
            for k, v in d.items():
                v = np.asarray([a for a in v if a is not None])
                if v.size == 0:  # time_host gives None where the host waited for the GPU anyway
                    print(f"{lname:28} {sname:16} {k:9} no honest sample (the host waited for the GPU)")
                    continue
                p10, p50, p90 = np.quantile(v, [0.1, 0.5, 0.9])
                print(f"{lname:28} {sname:16} {k:9} p10 {p10:7.3f}  p50 {p50:7.3f}  p90 {p90:7.3f} ms  (p90-p10)/p50 {(p90 - p10) / p50:6.1%}")

if __name__ == "__main__":
    run(main)
