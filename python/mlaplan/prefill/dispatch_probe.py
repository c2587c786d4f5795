"""The host's dispatch speed now: how long the host takes to issue one fixed small layer through the
executor, with the measured layer's model, kernel, merge and running-state dtype.

cpu_speed's pure-Python loop follows the host's speed only in part. On the H200's host, over 150
rounds, a host-bound short-chat layer's eager time kept a spread of 14% at the median (32% at p90)
once divided by that loop's time, and 5% (23%) once divided by this probe's taken before and after
it; unscaled it spread 19% (45%). Taken before each timed repetition, the probes' median left 4%
(10%) in another session, where the loop left 8% (32%) and the time spread 7% (50%)
(scripts/experiments/probe_tracking.py, docs/cost-model.md). Dispatch runs torch's dispatcher, the
attention kernel's Python wrappers and the driver, whose code and data the loop does not touch, so a
slow moment for one need not be one for the other. Eager records keep this probe beside the loop's
(`dispatch_probe_ms`, timing.time_eager_probed), and a host fit states its costs at it where every
run has it.
"""
from __future__ import annotations

import time
from typing import Dict, Tuple

import numpy as np
import torch

from .executor import Prepared, execute, prepare
from .inputs import host_page_table, random_inputs
from .schedule import build_schedule

# The layer: 8 sequences of 500-1,207 cached and 64 new tokens, pages of 64, the even split at a
# buffer that holds them all: one iteration, 8 launches with V as it is (the gather; an up-projection,
# a concat and an attention for the cache and for the new tokens; the merge), 10 with V padded.
# Small, so the probe costs about a millisecond.
CACHE = [500 + 101 * i for i in range(8)]
NEW = [64] * 8
PAGE_SIZE = 64
POLICY, BUFFER_TOKENS = "even-split", 65536

_layers: Dict[Tuple, Prepared] = {}


def _layer(p: Prepared) -> Prepared:
    """The probe's layer for p's model, dtype, device, kernel, merge and state: prepared once a process,
    and run three times so that no first-call cost falls in a probe."""
    x = p.x
    key = (x.dims, x.q.dtype, x.device, p.kernel, p.fused_merge, p.state)
    if key not in _layers:
        ref = random_inputs(CACHE, np.concatenate([[0], np.cumsum(NEW)]), PAGE_SIZE, x.dims, x.q.dtype, x.device, 1)
        s = build_schedule(POLICY, ref.lengths, host_page_table(ref), BUFFER_TOKENS, None, x.device)
        layer = prepare(ref, s, p.fused_merge, p.kernel, p.state)
        for _ in range(3):
            execute(layer)
        torch.cuda.synchronize()
        _layers[key] = layer
    return _layers[key]


def _issue_ms(layer: Prepared) -> float:
    torch.cuda.synchronize()  # the GPU idle, so that no launch waits for it
    t0 = time.perf_counter()
    execute(layer)
    ms = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    return ms


def probe_ms(p: Prepared) -> float:
    """The faster of two issues of the probe's layer for p (one alone may catch an interrupt), in ms.
    CUDA only: on the CPU the launches are the work itself."""
    layer = _layer(p)
    return min(_issue_ms(layer), _issue_ms(layer))
