"""The calibration's shapes: random batches under random policies and buffers, spread so that every
term of the cost model varies on its own (few and many sequences, short and long contexts, few and
many iterations, every engine's query pattern, a few queries per sequence and thousands)."""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Dict, Iterable, List, Sequence

import numpy as np

from .. import _mlaplan, cost_features
from .._cli import ENGINES

# Past this many iterations a point costs more device time than it teaches the fit.
MAX_ITERATIONS = 256
# What a guided policy's cost file keeps in its private copy (priced_policy): the fields the C++ reader takes.
COST_FIELDS = ("format", "version", "model", "tp", "dtype", "gpu", "compute_capability", "kernels", "timing", "date",
               "geometry", "coefficients", "host")
_GUIDES: Dict[tuple, str] = {}  # (path, its identity) -> the private copy
# The executor's paths that take the batch whole (TensorRT-LLM on SM90, SGLang's one-shot and
# absorbed paths), which the cost model prices as the cost file's GPU dispatches them.
WHOLE_PATHS = ("sm90", "one-shot", "absorbed")


@dataclass
class Point:
    cache: List[int]
    new: List[int]
    page_size: int
    buffer_tokens: int
    policy: str
    workload: str = ""  # a workload's batch (scenario_points): its file's name and the scenario's
    scenario: str = ""

    @property
    def offsets(self) -> List[int]:
        return [0] + np.cumsum(self.new).tolist()

    @cached_property
    def arrays(self):
        """(cache lengths, row offsets) as the C++ pricing takes them, built on first use: a fit prices
        one point many times. Past 32 bits is the C++ check's to name (OverflowError here otherwise)."""
        offsets = np.concatenate(([0], np.cumsum(np.asarray(self.new, dtype=np.uint64))))
        if len(self.cache) and max(self.cache) >= 2**32 or offsets[-1] >= 2**32:
            raise ValueError(f"{int(offsets[-1])} new tokens, or a cache length, past 2^32 - 1; the tables are 32-bit")
        return np.asarray(self.cache, dtype=np.uint32), offsets.astype(np.uint32)

    def as_dict(self) -> dict:
        d = asdict(self)
        del d["workload"], d["scenario"]  # recorded as the measurement's own fields where set
        return d


def priced_policy(policy: str) -> str:
    """The policy as the C++ pricing takes it: guided:PATH (guided/eager:PATH) with PATH read once, by the
    package's bounded reader (which a signal stops on a FIFO), into a private copy of the fields the
    cost reader takes. A fit prices each record many times, and the C++ reads a guided file at every
    pricing: a 200 MiB file took seconds each time. ValueError naming PATH where it is no cost file."""
    head, sep, path = policy.partition(":")
    if not sep or head.lower() not in ("guided", "guided/eager") or not path:
        return policy
    import os

    try:
        st = os.stat(path)
        key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        key = (path,)  # the reader names what is wrong with it
    if key not in _GUIDES:
        _GUIDES[key] = _private_copy(path)
    return f"{head}:{_GUIDES[key]}"


def _private_copy(path: str) -> str:
    import atexit
    import json
    import shutil
    import tempfile

    from .._files import read_json

    doc = read_json(path, "a cost file (python -m mlaplan.calibrate writes one)")
    if isinstance(doc, dict):
        doc = {k: doc[k] for k in COST_FIELDS if k in doc}
    folder = tempfile.mkdtemp(prefix="mlaplan-guide-")
    atexit.register(shutil.rmtree, folder, True)
    copy = os.path.join(folder, "cost.json")
    with open(copy, "w") as f:
        json.dump(doc, f)
    try:
        _mlaplan.read_cost_model(copy)
    except ValueError as e:
        raise ValueError(str(e).replace(copy, path)) from None
    return copy


def _named(call, policy: str):
    """call(the policy as priced), its errors naming the policy's own file, not its private copy."""
    priced = priced_policy(policy)
    try:
        return call(priced)
    except ValueError as e:
        raise ValueError(str(e).replace(priced.partition(":")[2], policy.partition(":")[2]) if priced != policy else str(e)) from None


def features(p: Point, heads: int, sms: int = 132, blocks_per_sm: int = 1, tile_queries: int = 128, sm: int = 0,
             scheduler: str = "grid", small_gemm_rows: int = 0) -> dict:
    """The cost terms of the point as `sweep --cost` counts them (max: as many chunks as it needs), on
    the path its engine takes on a GPU of compute capability sm (90: SM90; 0: every policy's loop),
    the attention's blocks handed out by `scheduler` (grid: FlashAttention-2; sorted: FlashAttention-3)."""
    cache, offsets = p.arrays
    f = _named(lambda policy: cost_features(cache, offsets, p.page_size, p.buffer_tokens, policy, heads, sms, blocks_per_sm,
                                            tile_queries, sm=sm, scheduler=scheduler, small_gemm_rows=small_gemm_rows),
                   p.policy)
    return {k: v for k, v in f.items() if k != "path"}


def eager_us(p: Point, coefficients: dict, launch_us: dict, pad_v: bool, heads: int, sms: int = 132, blocks_per_sm: int = 1,
             tile_queries: int = 128, sm: int = 0, scheduler: str = "grid", small_gemm_rows: int = 0) -> float:
    """The point's layer priced eagerly, as `run --cost --timing eager` prices it: the two clocks over
    its launches on the path `features` counts, with the coefficients and host costs given."""
    cache, offsets = p.arrays
    return _named(lambda policy: _mlaplan.cost_eager(cache, offsets, p.page_size, p.buffer_tokens, policy, coefficients, launch_us,
                                                     pad_v, heads, sms, blocks_per_sm, tile_queries, sm, scheduler,
                                                     small_gemm_rows), p.policy)["eager_us"]


def record_sm(rec: dict) -> int:
    """The compute capability whose dispatch a measured record ran: 90 where it ran a path that takes
    the batch whole (TensorRT-LLM on SM90, SGLang's one-shot), else 0 (the policy's own loop)."""
    return 90 if rec.get("path") in WHOLE_PATHS else 0


def step_batch(rng: np.random.Generator, max_total_context: int, page_sizes) -> "object":
    """A scheduler's step: 1 to 8 sequences sharing a budget of 1K to 16K new tokens (so one
    sequence may hold thousands of queries, as token-budget batches do), contexts log-uniform up to
    512K, one in six empty, scaled down to max_total_context in all."""
    from ..prefill.check import Batch

    b = int(rng.integers(1, 9))
    budget = int(rng.choice([1024, 2048, 4096, 8192, 16384]))
    new = np.maximum(1, np.floor(rng.dirichlet(np.ones(b)) * budget)).astype(np.int64)
    cache = np.array([0 if rng.random() < 1 / 6 else int(math.exp(rng.uniform(0, math.log(512 * 1024)))) for _ in range(b)],
                     dtype=np.int64)
    if cache.sum() > max_total_context:
        cache = cache * max_total_context // cache.sum()
    return Batch(cache.tolist(), new.tolist(), int(rng.choice(page_sizes)), 0)


def make_grid(points: int, seed: int, heads: int, max_total_context: int = 1 << 20, max_buffer: int = 1 << 19,
              policies: Sequence[str] = ENGINES, page_sizes=(16, 64, 128), step_share: float = 0.5) -> List[Point]:
    """`points` shapes, a policy and a buffer each. A share `step_share` are scheduler steps
    (step_batch: few sequences, many queries each); the others B up to 64 with contexts log-uniform up
    to 256K (scaled to max_total_context) and new tokens up to 4K each and 16K in all. The buffer is
    log-uniform from 1K (or 1/256 of the batch) up to twice the batch; shapes a policy refuses or that
    need more than MAX_ITERATIONS are drawn again."""
    from ..prefill.check import random_batch  # torch's: a refit prices points and draws none

    rng = np.random.default_rng(seed)
    out: List[Point] = []
    while len(out) < points:
        if rng.random() < step_share:
            b = step_batch(rng, max_total_context, page_sizes)
        else:
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


def scenario_points(paths: Sequence[str], buffers: Sequence[int], policies: Sequence[str] = ENGINES, heads: int = 16,
                    refused: bool = False) -> List[Point]:
    """Every batch of the scenario files (mlaplan gen's, one workload each) under every policy and
    buffer: points shaped as the workloads a user prices are, drawn with other seeds than the
    held-out ones (docs/cost-model.md). Settings a policy refuses are left out, unless `refused`
    (validation measures them, to report the refusal)."""
    return [p for workload, _, s in scenario_batches(paths)
            for p in batch_points(list(s["cache_lengths"]), s["new"], int(s["page_size"]), buffers, policies, heads, refused,
                                  workload, s["name"])]


def batch_points(cache: List[int], new: List[int], page_size: int, buffers: Sequence[int], policies: Sequence[str], heads: int,
                 refused: bool = False, workload: str = "", scenario: str = "") -> List[Point]:
    """One batch under every policy at every buffer; those a policy refuses left out unless `refused`."""
    out: List[Point] = []
    for buffer in buffers:
        for policy in policies:
            p = Point(cache, new, page_size, int(buffer), policy, workload, scenario)
            if not refused:
                try:
                    features(p, heads)
                except ValueError:
                    continue
            out.append(p)
    return out


def take_turns(queues: Iterable[Sequence]) -> list:
    """The queues' items one queue at a time in turn, each queue's in its order."""
    qs = [q for q in queues if q]
    return [q[i] for i in range(max((len(q) for q in qs), default=0)) for q in qs if i < len(q)]


def grouped(points: Sequence[Point], key) -> List[List[Point]]:
    """The points in groups of equal key(point), the groups and each group's points in order."""
    groups: Dict[object, List[Point]] = {}
    for p in points:
        groups.setdefault(key(p), []).append(p)
    return list(groups.values())


def interleave_workloads(points: Sequence[Point]) -> List[Point]:
    """The points in an order whose every prefix is a smaller set of the same spread, so that a
    measurement cut short by --max-seconds keeps a share of every workload, of every batch in it and
    of every buffer and policy in each batch: the workloads take turns, within a workload its batches,
    within a batch its buffers, each buffer starting at another policy (a diagonal). Taking each
    batch whole had left a 211-point H100 calibration of Kimi-K2 with one Mooncake batch of three
    and no points at its largest buffers."""
    def batch(pts: List[Point]) -> List[Point]:
        by_buffer = grouped(pts, lambda p: p.buffer_tokens)
        return take_turns(q[i % len(q):] + q[:i % len(q)] for i, q in enumerate(by_buffer))

    return take_turns(take_turns(batch(b) for b in grouped(w, lambda p: p.scenario))
                      for w in grouped(points, lambda p: p.workload))


def scenario_batches(paths: Sequence[str]):
    """(workload, index in its file, scenario) for every scenario of the files, in order: the
    workload is the file's name, and each scenario gains `new`, its sequences' new tokens."""
    import os

    for path in paths:
        workload = os.path.splitext(os.path.basename(path))[0]
        for i, s in enumerate(_mlaplan.read_scenarios(path)):
            offsets = list(s["input_row_offsets"])
            yield workload, i, dict(s, new=[b - a for a, b in zip(offsets, offsets[1:])])
