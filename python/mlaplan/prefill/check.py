"""Every engine's output against one-shot attention on random batches, and the same with a planted
off-by-one in the plan's tables, which the check must catch.

    python -m mlaplan.prefill.check --batches 200 --device cuda      # the GPU gate (scripts/gpu-check.sh)
    python -m mlaplan.prefill.check --batches 20 --device cpu --small

Exit status: 0 every run within the tolerance and the planted defect caught, 1 otherwise, 2 bad usage.
"""
from __future__ import annotations

import argparse
import math
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, List, Optional

import numpy as np
import torch

from . import schedule as schedule_mod
from .attention import KERNELS, kernel_title
from .executor import execute, prepare
from .inputs import PrefillInputs, host_page_table, random_inputs
from .measure import errors
from .model import MlaDims
from .reference import one_shot
from .schedule import ENGINES, build_schedule

# Every engine, and each of the other paths an engine can take, so all of them are checked.
VARIANTS = [(e, {}) for e in ENGINES] + [
    ("even-split/sglang", {"sglang_path": "chunked"}),
    ("even-split/sglang", {"sglang_path": "one-shot"}),
    ("even-split/sglang", {"sglang_path": "absorbed"}),
    ("packed/trtllm", {"trtllm_path": "sm90"}),
    ("packed/trtllm", {"trtllm_path": "sm100"}),
]
# The variants that read the plan's tables (the one-shot paths take every row at once).
TABLE_VARIANTS = [(e, {}) for e in ("max", "packed", "even-split")] + [
    ("even-split/sglang", {"sglang_path": "chunked"}),
    ("packed/trtllm", {"trtllm_path": "sm100"}),
]
PAGE_SIZES = (1, 16, 64, 128, 256)


@dataclass
class Batch:
    cache: List[int]
    new: List[int]
    page_size: int
    buffer_tokens: int

    @property
    def offsets(self) -> List[int]:
        return [0] + np.cumsum(self.new).tolist()


def random_batch(rng: np.random.Generator, max_batch: int = 64, max_context: int = 256 * 1024,
                 max_total_context: int = 1 << 20, max_new: int = 1024, max_total_new: int = 4096,
                 page_sizes=PAGE_SIZES) -> Batch:
    """B in 1..max_batch; contexts log-uniform up to max_context (one in six empty), scaled down to
    max_total_context in all; new tokens log-uniform up to max_new (one in ten none), max_total_new in
    all; a page size from page_sizes; a buffer from 1/16 of the padded total up (at most 16 MAX chunks),
    often no page multiple."""
    b = int(rng.integers(1, max_batch + 1))
    log_uniform = lambda hi: int(math.exp(rng.uniform(0, math.log(hi))))  # noqa: E731
    cache = np.array([0 if rng.random() < 1 / 6 else log_uniform(max_context) for _ in range(b)], dtype=np.int64)
    if cache.sum() > max_total_context:
        cache = cache * max_total_context // cache.sum()
    new = np.array([0 if rng.random() < 0.1 else log_uniform(max_new) for _ in range(b)], dtype=np.int64)
    if new.sum() > max_total_new:
        new = new * max_total_new // new.sum()
    if new.sum() == 0:
        new[0] = 1
    page = int(rng.choice(page_sizes))
    total = int(((cache + new + page - 1) // page * page).sum())
    low = max(256, total // 16)
    buffer = int(math.exp(rng.uniform(math.log(low), math.log(max(low, 2 * total) + 1))))
    if rng.random() < 0.5:
        buffer = max(page, buffer // page * page)
    return Batch(cache.tolist(), new.tolist(), page, buffer)


@contextmanager
def planted_off_by_one() -> Iterator[None]:
    """Plans whose tables read one token too early in the first chunk where a sequence continues
    (cache_offsets - 1): one key counted twice, its last one never. Restored on exit."""
    real = schedule_mod.plan_policy

    def broken(*args, **kwargs):
        plan = real(*args, **kwargs)
        co = plan.tables.cache_offsets
        for c, b in zip(*np.nonzero(co > 0)):
            bro = plan.tables.buffer_row_offsets
            if bro[c, b + 1] > bro[c, b]:  # the sequence has rows in this chunk: shift where they start
                co[c, b] -= 1
                break
        return plan

    schedule_mod.plan_policy = broken
    try:
        yield
    finally:
        schedule_mod.plan_policy = real


def check_batch(x: PrefillInputs, buffer_tokens: int, tolerance: float, variants=VARIANTS, fused_merge=None,
                kernel: str = "auto") -> list:
    """[(engine, path, max |error|, max |LSE error|, ok)] for each variant; refusals as (engine, 'refused: ...')."""
    ref = one_shot(x)
    table = host_page_table(x)
    out = []
    for engine, paths in variants:
        try:
            s = build_schedule(engine, x.lengths, table, buffer_tokens, None, x.device, **paths)
        except ValueError as e:
            out.append((engine, "refused: " + str(e), None, None, True))
            continue
        o, l = execute(prepare(x, s, fused_merge, kernel))
        err, lse_err, ok = errors(o, l, *ref, tolerance)
        out.append((engine, s.path, err, lse_err, ok))
    return out


def planted_batch(dims: MlaDims, dtype, device, seed: int) -> PrefillInputs:
    """Short contexts, where one key more or less moves the output by more than any tolerance."""
    return random_inputs([5, 9, 0, 7], [0, 3, 6, 8, 12], 1, dims, dtype, device, seed)


def main(argv: Optional[List[str]] = None) -> int:
    from .__main__ import attention_kernel
    from .model import model_dims

    p = argparse.ArgumentParser(prog="python -m mlaplan.prefill.check", description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--model", default="deepseek-v3")
    p.add_argument("--tp", type=int, default=8)
    p.add_argument("--small", action="store_true", help="CPU-sized batches: B <= 8, contexts <= 2,000, 64 new tokens")
    p.add_argument("--attention", choices=KERNELS, default="auto",
                   help="the attention kernel on CUDA (default auto: FlashAttention-3 on SM90 where a build imports)")
    p.add_argument("--skip", type=int, default=0, help="draw but do not run the first SKIP batches (to resume)")
    args = p.parse_args(argv)
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    tolerance = 1e-2 if dtype == torch.bfloat16 else 1e-4
    dims = model_dims(args.model, args.tp)
    kernel = attention_kernel(args.attention, device)
    rng = np.random.default_rng(args.seed)
    worst = {}
    failures = 0
    runs = 0
    above = 0  # runs whose max |error| passes the tolerance though every element is within atol + rtol |ref|
    for i in range(args.batches):
        kw = dict(max_batch=8, max_context=2000, max_total_context=6000, max_new=64, max_total_new=128) if args.small else {}
        batch = random_batch(rng, **kw)
        if i < args.skip:
            continue
        if i and i % 25 == 0:
            print(f"... {i} batches, {runs} runs, {failures} failing", flush=True)
        x = random_inputs(batch.cache, batch.offsets, batch.page_size, dims, dtype, device, args.seed + i)
        for engine, path, err, lse_err, ok in check_batch(x, batch.buffer_tokens, tolerance, kernel=kernel):
            if err is None:
                continue
            runs += 1
            key = f"{engine} ({path})"
            worst[key] = max(worst.get(key, 0.0), err)
            above += ok and err > tolerance
            if not ok:
                failures += 1
                print(f"FAIL batch {i}: {engine} ({path}) max |error| {err:.3e} > {tolerance}: B={len(batch.cache)} "
                      f"page {batch.page_size} buffer {batch.buffer_tokens} cache {batch.cache} new {batch.new}")
        del x
    print(f"{args.batches - args.skip} random batches (of seed {args.seed}, from {args.skip}), {runs} runs, {dims.name} with {dims.heads} local heads, {dtype}, {device}"
          f"{', ' + kernel_title(kernel) if device.type == 'cuda' else ''}:")
    for key, err in sorted(worst.items()):
        print(f"  {key:34} worst max |error| {err:.3e}")
    print(f"runs failing |out - ref| <= {tolerance:g} (1 + |ref|): {failures}; "
          f"runs with max |error| above {tolerance:g} (at |ref| > 0): {above}")
    with planted_off_by_one():
        planted = check_batch(planted_batch(dims, dtype, device, args.seed), 8, tolerance, TABLE_VARIANTS,
                              kernel=kernel)
    missed = [f"{e} ({p})" for e, p, err, _, ok in planted if err is not None and ok]
    caught = sum(1 for _, _, err, _, ok in planted if err is not None and not ok)
    print(f"planted off-by-one in the tables: caught in {caught} of {caught + len(missed)} runs"
          + (f"; MISSED by {', '.join(missed)}" if missed else ""))
    return 1 if failures or missed else 0


if __name__ == "__main__":
    from .__main__ import entry  # one mlaplan: error: line and exit 2 for bad input, as the command's

    sys.exit(entry(command=main))
