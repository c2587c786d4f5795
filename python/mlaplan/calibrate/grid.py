"""The calibration's shapes: random batches under random policies and buffers, spread so that every
term of the cost model varies on its own (few and many sequences, short and long contexts, few and
many iterations, every engine's query pattern)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import List, Sequence

import numpy as np

from .. import cost_features
from ..prefill.check import random_batch
from ..prefill.schedule import ENGINES

# Past this many iterations a point costs more device time than it teaches the fit.
MAX_ITERATIONS = 256


@dataclass
class Point:
    cache: List[int]
    new: List[int]
    page_size: int
    buffer_tokens: int
    policy: str

    @property
    def offsets(self) -> List[int]:
        return [0] + np.cumsum(self.new).tolist()

    def as_dict(self) -> dict:
        return asdict(self)


def features(p: Point, heads: int, sms: int = 132, blocks_per_sm: int = 1, tile_queries: int = 128) -> dict:
    """The cost terms of the point as `sweep --cost` counts them (max: as many chunks as it needs)."""
    return cost_features(np.asarray(p.cache, dtype=np.uint32), np.asarray(p.offsets, dtype=np.uint32), p.page_size,
                         p.buffer_tokens, p.policy, heads, sms, blocks_per_sm, tile_queries)


def make_grid(points: int, seed: int, heads: int, max_total_context: int = 1 << 20, max_buffer: int = 1 << 19,
              policies: Sequence[str] = ENGINES, page_sizes=(16, 64, 128)) -> List[Point]:
    """`points` shapes: B up to 64, contexts log-uniform up to 256K (scaled to max_total_context),
    new tokens up to 4K each and 16K in all, a buffer log-uniform from 1K (or 1/256 of the batch) up
    to twice the batch, and a policy; shapes a policy refuses or that need more than MAX_ITERATIONS
    are drawn again."""
    rng = np.random.default_rng(seed)
    out: List[Point] = []
    while len(out) < points:
        b = random_batch(rng, max_total_context=max_total_context, max_new=4096, max_total_new=16384,
                         page_sizes=page_sizes)
        total = sum(b.cache) + sum(b.new)
        low = max(1024, total // 256)
        high = max(low + 1, min(max_buffer, 2 * total))
        buffer = int(math.exp(rng.uniform(math.log(low), math.log(high))))
        buffer = max(b.page_size, buffer // b.page_size * b.page_size)
        p = Point(b.cache, b.new, b.page_size, buffer, str(rng.choice(list(policies))))
        try:
            f = features(p, heads)
        except ValueError:  # refused by the policy (max infeasible needs no cap here; even-split's share of 0)
            continue
        if f["per_iteration_us"] > MAX_ITERATIONS:
            continue
        out.append(p)
    return out
