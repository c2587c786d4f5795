"""When, inside each part of the executor's loop, the host issues its kernels: the Python before a
part's first launch and after its last. Eager time's two clocks charge a launch's whole host cost
before it; a call that launches early and then returns through layers of Python (FlashAttention-3's
wrapper: torch.library's custom op, autograd, about 235 us a call) lets the device start sooner, which
shows on short steps, where the device waits for the first launches (docs/cost-model.md, "Launch
stamps"). Runs each layer eagerly under torch's profiler with the executor's part ranges, and prints
per part the medians of: the range's host time, the time from its start to its first kernel launch
(the runtime's launch call), from its last launch's return to its end, and its launches. The
profiler adds a few microseconds to each op, so the figures are the shape of a call, not its cost.

  python scripts/experiments/launch_timeline.py [--runs 20] [--json OUT.json]   # on a CUDA GPU
"""
import bisect
import os
import re
import statistics
import sys
from collections import defaultdict

import torch

from mlaplan.prefill.__main__ import _count
from mlaplan.prefill.executor import RANGE_PREFIX, execute
from mlaplan.prefill.timing import quiet_profiler
from saved_runs import Parser, dumps, fail, run, write_files
from warmed_layer import first_batch, warmed_layer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The host-bound layer the probe experiments time, and seed 101's first Mooncake step (5 sequences,
# 11,008 cached and 8,192 new tokens) at a buffer that holds it: one iteration, device-bound but short.
SHORT_CHAT = ([300 + 37 * i for i in range(40)], [200] * 40, "packed", 16384)
MOONCAKE = os.path.join(ROOT, "docs", "data", "cost-validation", "seed-101", "mooncake-replay.json")
# The runtime's and the driver's launch calls (cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel...).
LAUNCH_CALL = re.compile(r"^(cuda|cu)Launch|LaunchKernel")


def mooncake_layer():
    return (*first_batch(MOONCAKE), "packed", 65536)


def timeline(layer, runs: int) -> dict:
    p = warmed_layer(*layer)
    cpu = torch.autograd.DeviceType.CPU
    with quiet_profiler():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(runs):
                execute(p, True)
                torch.cuda.synchronize()
        events = prof.events()
    calls = sorted((e.time_range.start, e.time_range.end) for e in events if e.device_type == cpu and LAUNCH_CALL.search(e.name))
    if not calls:
        fail("the profiler recorded no kernel launch calls; run it on a CUDA GPU with a torch that profiles CUDA")
    starts = [a for a, _ in calls]
    parts = defaultdict(lambda: defaultdict(list))
    for e in events:
        if e.device_type != cpu or not e.name.startswith(RANGE_PREFIX):
            continue
        a, b = e.time_range.start, e.time_range.end
        inside = [c for c in calls[bisect.bisect_left(starts, a):bisect.bisect_right(starts, b)] if c[1] <= b]
        if not inside:
            continue
        got = parts[e.name[len(RANGE_PREFIX):]]
        got["range_us"].append(b - a)
        got["before_first_us"].append(inside[0][0] - a)
        got["after_last_us"].append(b - inside[-1][1])
        got["launches"].append(len(inside))
    return {part: {k: statistics.median(v) for k, v in got.items()} | {"ranges": len(got["range_us"])} for part, got in parts.items()}


def main():
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=_count(1, 1000), default=20, help="profiled runs of each layer (default 20)")
    ap.add_argument("--json", help="write the medians here")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        fail("no CUDA GPU: the launches it times are the GPU's")
    out = {}
    for name, layer in (("short-chat, 40 sequences, packed at 16K", SHORT_CHAT), ("Mooncake, seed 101's first step, packed at 64K", mooncake_layer())):
        out[name] = timeline(layer, a.runs)
        print(f"{name}: per part, medians over {a.runs} runs (us)")
        print(f"  {'part':<12} {'range':>8} {'to 1st launch':>14} {'after last':>11} {'launches':>9}")
        for part, m in out[name].items():
            print(f"  {part:<12} {m['range_us']:8.1f} {m['before_first_us']:14.1f} {m['after_last_us']:11.1f} {m['launches']:9.0f}")
    if a.json:
        doc = {"command": " ".join(sys.argv), "device": torch.cuda.get_device_name(), "torch": torch.__version__, "layers": out}
        write_files({a.json: dumps(doc, indent=1)}, "--json")


if __name__ == "__main__":
    run(main)
