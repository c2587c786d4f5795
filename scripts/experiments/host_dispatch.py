"""Where the executor's host time goes: one eager layer of a mid-size packed step under cProfile,
with the GPU held busy so that no call waits for it, beside the host cost of a bare torch launch.

  python scripts/experiments/host_dispatch.py            # on a CUDA GPU; prints the top functions
"""
import cProfile
import io
import pstats
import time

import numpy as np
import torch

from mlaplan.prefill.executor import execute, prepare
from mlaplan.prefill.inputs import host_page_table, random_inputs
from mlaplan.prefill.model import model_dims
from mlaplan.prefill.schedule import build_schedule

dims = model_dims("deepseek-v3", 8)
cache, new = [200_000, 50_000, 3_000], [4000, 3000, 1192]
x = random_inputs(cache, np.concatenate([[0], np.cumsum(new)]), 64, dims, torch.bfloat16, "cuda", 1)
s = build_schedule("packed", x.lengths, host_page_table(x), 16384, None, torch.device("cuda"))
p = prepare(x, s, True, "fa3")
for _ in range(3):
    execute(p)
torch.cuda.synchronize()
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
print(f"one layer ({s.iterations} iterations, {len(s.steps)} steps): host {1e3 * (time.perf_counter() - t0):.2f} ms under cProfile")
torch.cuda.synchronize()
out = io.StringIO()
pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
print(out.getvalue())
