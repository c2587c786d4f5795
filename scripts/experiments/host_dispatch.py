"""Where the executor's host time goes: one eager layer of a mid-size packed step under cProfile,
with the GPU held busy so that no call waits for it, beside the host cost of a bare torch launch.

  python scripts/experiments/host_dispatch.py            # on a CUDA GPU; prints the top functions
"""
import cProfile
import io
import pstats
import time

import torch

from mlaplan.prefill.executor import execute
from warmed_layer import warmed_layer

p = warmed_layer([200_000, 50_000, 3_000], [4000, 3000, 1192], "packed", 16384)
y = torch.zeros(1024, device="cuda")
torch.cuda._sleep(2_000_000_000 // 10)
t0 = time.perf_counter()
for _ in range(1000):
    y.add_(1)
bare = (time.perf_counter() - t0) * 1e3
torch.cuda.synchronize()
print(f"bare torch launch (y.add_(1)), GPU held busy: {bare:.1f} us each over 1000")
torch.cuda._sleep(2_000_000_000 // 4)
prof = cProfile.Profile()
t0 = time.perf_counter()
prof.enable()
execute(p)
prof.disable()
print(f"one layer ({p.schedule.iterations} iterations, {len(p.schedule.steps)} steps): host {1e3 * (time.perf_counter() - t0):.2f} ms under cProfile")
torch.cuda.synchronize()
out = io.StringIO()
pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
print(out.getvalue())
