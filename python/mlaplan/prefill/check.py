"""Every engine's output against one-shot attention on random batches, and the same with a planted
off-by-one in the plan's tables, which the check must catch.

    python -m mlaplan.prefill.check --batches 200 --device cuda      # the GPU gate (scripts/gpu-check.sh)
    python -m mlaplan.prefill.check --batches 20 --device cpu --small

One batch in four is also run at a small buffer (16-384 rows), where a query row's running state is
merged thousands of times. Every run is judged row by row against tolerance + MERGE_C * merges * u,
u the unit roundoff of the running state (2^-8 in bf16; docs/prefill.md, "Many merges").

Exit status: 0 every run within the tolerance and the planted defect caught, 1 otherwise, 2 bad usage.
"""
from __future__ import annotations

import argparse
import math
import sys
import textwrap
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, List, Optional

import numpy as np
import torch

from . import schedule as schedule_mod
from .attention import KERNELS, kernel_title
from .executor import execute, prepare
from .inputs import PrefillInputs, host_page_table, random_inputs
from .executor import state_dtype
from .measure import MERGE_C, UNIT_ROUNDOFF, errors, merge_tolerance
from .model import MlaDims
from .reference import loop_references
from .report import wrap
from .schedule import FUSED, POLICIES, build_schedule, engine_named, merge_stats, split_loop

# Every engine and mlaplan's own policy, and each of the other paths an engine can take, so all of
# them are checked.
VARIANTS = [(e, {}) for e in POLICIES] + [
    ("even-split/sglang", {"sglang_path": "chunked"}),
    ("even-split/sglang", {"sglang_path": "one-shot"}),
    ("even-split/sglang", {"sglang_path": "absorbed"}),
    ("packed/trtllm", {"trtllm_path": "sm90"}),
    ("packed/trtllm", {"trtllm_path": "sm100"}),
]
# The variants that read the plan's tables (the one-shot paths take every row at once).
TABLE_VARIANTS = [(e, {}) for e in ("max", "packed", "even-split", "waves")] + [
    ("even-split/sglang", {"sglang_path": "chunked"}),
    ("packed/trtllm", {"trtllm_path": "sm100"}),
]


def fused(variants):
    """The variants in mlaplan's own loop too (NAME+fused), but the absorbed path, which up-projects nothing."""
    return list(variants) + [(e + FUSED, p) for e, p in variants if p.get("sglang_path") != "absorbed"]


def loops(variants, device, dims: MlaDims, dtype=torch.bfloat16):
    """The variants to check on `device`: in mlaplan's fused loop too where its kernel runs (fused_up);
    elsewhere the fused loop runs the engines' own up-projection, bit for bit, and would check it twice."""
    from .fused_up import why_reference

    probe = torch.empty(0, dims.latent, dtype=dtype, device=device)
    return fused(variants) if why_reference(probe, dims) is None else list(variants)
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


SMALL_BUFFERS = (16, 384)  # the small buffers' range, in rows
SMALL_SHARE = 4           # one batch in SMALL_SHARE is also run at a small buffer


def estimated_steps(cache, new, page: int, buffer: int) -> int:
    """About the most steps any engine's loop takes for the batch at `buffer` rows (SGLang's share is
    buffer // B rows of every context per chunk, vLLM's rounded down to the page; the packed loops and
    MAX stream the total): the small buffers' contexts are scaled down until it is within a cap."""
    cache = np.asarray(cache, dtype=np.int64)
    b, longest = len(cache), int(cache.max(initial=0))
    padded = int(((cache + np.asarray(new) + page - 1) // page * page).sum())
    steps = [padded // buffer + b, int(cache.sum()) // max(1, buffer // page * page) + b]
    steps.append(-(-longest // max(1, buffer // b)))
    with_context = int((cache > 0).sum())
    share = buffer // max(with_context, 1) // page * page
    if share:
        steps.append(-(-longest // share))
    return max(steps)


def small_buffer_batch(rng: np.random.Generator, max_steps: int, **kw) -> Batch:
    """A random batch (random_batch's draws) at a buffer log-uniform in SMALL_BUFFERS, with a page size
    no larger than it, its contexts scaled down until no engine's loop takes more than about max_steps
    steps (a 64-row buffer over 40 sequences took SGLang's loop 19,765 steps)."""
    buffer = int(math.exp(rng.uniform(math.log(SMALL_BUFFERS[0]), math.log(SMALL_BUFFERS[1] + 1))))
    pages = [p for p in kw.pop("page_sizes", PAGE_SIZES) if p <= buffer]
    batch = random_batch(rng, page_sizes=pages, **kw)
    cache = np.asarray(batch.cache, dtype=np.int64)
    while cache.sum() and estimated_steps(cache, batch.new, batch.page_size, buffer) > max_steps:
        cache = cache * 3 // 4
    if rng.random() < 0.5:
        buffer = max(batch.page_size, buffer // batch.page_size * batch.page_size)
    return Batch(cache.tolist(), batch.new, batch.page_size, buffer)


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


@dataclass
class Judged:
    """One variant's run: its error, the merges of its query rows, and the verdicts."""

    engine: str
    path: str                 # or "refused: why"
    err: Optional[float] = None
    lse_err: Optional[float] = None
    ok: bool = True           # within the bound it was judged by (the merge bound, or the flat tolerance)
    flat_ok: bool = True      # within the flat tolerance * (1 + |ref|)
    merges_max: int = 0       # merges of a query row: the most, and p99
    merges_p99: int = 0
    widened: bool = False     # some row's merge allowance reached the flat tolerance (the bound at least doubled)


def judge_batch(x: PrefillInputs, buffer_tokens: int, tolerance: float, variants=VARIANTS, fused_merge=None,
                kernel: str = "auto", state=None, merge_bound: bool = True, weights: str = "bf16") -> List[Judged]:
    """Every variant against one-shot attention. merge_bound: each query row within tolerance +
    MERGE_C * merges * u of its state's dtype (measure.merge_tolerance), else the flat tolerance.
    weights: kv_b_proj's (executor.WEIGHTS), one-shot's K and V made alike; under fp8 SGLang's absorbed
    path, which takes bf16 halves of the weight into the queries, is left out; each loop is judged against
    its up-projection's one-shot (reference.loop_references: under fp8 the engines' loops against K and V
    from their own block GEMM where it is cuBLAS's)."""
    refs = loop_references(x, weights)
    if weights == "fp8":  # SGLang's dispatch may pick its absorbed path (auto)
        variants = [(e, p) for e, p in variants
                    if not (split_loop(e)[0] == "even-split/sglang" and p.get("sglang_path", "auto") in ("auto", "absorbed"))]
    table = host_page_table(x)
    st = state_dtype(state, x.q.dtype)
    out = []
    for engine, paths in variants:
        policy, up_projection = split_loop(engine)
        try:
            s = build_schedule(policy, x.lengths, table, buffer_tokens, None, x.device, **paths)
        except ValueError as e:
            out.append(Judged(engine, "refused: " + str(e)))
            continue
        o, l = execute(prepare(x, s, fused_merge, kernel, state, up_projection, weights))
        merges = s.merges_per_query(x.lengths.new_tokens)
        bound = merge_tolerance(tolerance, merges, st, x.device)
        r = refs[up_projection]
        err, lse_err, flat_ok = errors(o, l, *r, tolerance)
        ok = errors(o, l, *r, bound)[2] if merge_bound else flat_ok
        widened = bool(merge_bound and merges.size and (bound.max().item() >= 2 * tolerance))
        out.append(Judged(engine, s.path, err, lse_err, ok, flat_ok, *merge_stats(merges), widened))
    return out


def check_batch(x: PrefillInputs, buffer_tokens: int, tolerance: float, variants=VARIANTS, fused_merge=None,
                kernel: str = "auto", state=None, merge_bound: bool = True) -> list:
    """[(engine, path, max |error|, max |LSE error|, ok)] for each variant (judge_batch); refusals as
    (engine, 'refused: ...', None, None, True)."""
    return [(j.engine, j.path, j.err, j.lse_err, j.ok)
            for j in judge_batch(x, buffer_tokens, tolerance, variants, fused_merge, kernel, state, merge_bound)]


def planted_batch(dims: MlaDims, dtype, device, seed: int) -> PrefillInputs:
    """Short contexts, where one key more or less moves the output by more than any tolerance."""
    return random_inputs([5, 9, 0, 7], [0, 3, 6, 8, 12], 1, dims, dtype, device, seed)


def say(line: str) -> None:
    """A line of the report within 120 columns (report.wrap), flushed: the check runs for minutes."""
    print("\n".join(wrap(line)), flush=True)


def main(argv: Optional[List[str]] = None) -> int:
    from .__main__ import Parser, _count, _device, attention_kernel
    from .model import model_dims

    # The commands' parser: a bad value is one `mlaplan: error:` line and exit 2.
    # The help is the module's docstring: its summary (Parser fills it), its examples and its exit statuses.
    summary, examples, *_, statuses = __doc__.split("\n\n")
    p = Parser(prog="python -m mlaplan.prefill.check", description=summary,
               epilog="examples:\n" + textwrap.indent(textwrap.dedent(examples), "  ") + "\n\n"
                      + statuses.strip().replace("Exit status", "exit status"),
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", type=_count(1), default=200, help="random batches to check (default 200)")
    p.add_argument("--seed", type=_count(0), default=1, help="the batches' random seed (default 1)")
    p.add_argument("--device", default="auto", metavar="DEV",
                   help="auto (default: cuda where there is a GPU), cuda, cuda:N or cpu")
    p.add_argument("--model", default="deepseek-v3", help="the model preset whose heads and dims are run (default deepseek-v3)")
    p.add_argument("--tp", type=_count(1), default=8, help="tensor parallelism: local heads = heads / TP (default 8)")
    p.add_argument("--small", action="store_true",
                   help="CPU-sized batches: B <= 8, contexts <= 2,000, 64 new tokens (on the CPU, without it a batch "
                   "takes minutes)")
    p.add_argument("--attention", choices=KERNELS, default="auto",
                   help="the attention kernel on CUDA (default auto: FlashAttention-3 on SM90 where a build imports)")
    p.add_argument("--guide", metavar="COST.json",
                   help="also check guided:COST.json, mlaplan's policy that chooses each batch's plan by that cost file")
    p.add_argument("--skip", type=_count(0), default=0, help="draw but do not run the first SKIP batches (to resume)")
    p.add_argument("--dtype", choices=("bf16", "fp32"), help="default bf16 on CUDA, fp32 on the CPU")
    p.add_argument("--state", choices=("bf16", "fp16", "fp32"),
                   help="the running output's dtype across merges (default: --dtype's, as the engines keep it)")
    p.add_argument("--weights", choices=("bf16", "fp8"), default="bf16",
                   help="kv_b_proj as the checkpoint holds it: bf16 (default), or e4m3 with 128 x 128 block scales (DeepSeek-V3's "
                        "FP8 checkpoint; the reference's K and V made alike)")
    p.add_argument("--max-steps", type=_count(1), help="the small buffers' batches are scaled to about this many steps at "
                   "most (default 2000: on an H200 a batch of 20,000 steps ran the five engines for minutes)")
    args = p.parse_args(argv)
    device = _device(torch, args.device)
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype or ("bf16" if device.type == "cuda" else "fp32")]
    tolerance = 1e-2 if dtype == torch.bfloat16 else 1e-4
    state = state_dtype(args.state, dtype)
    dims = model_dims(args.model, args.tp)
    kernel = attention_kernel(args.attention, device)
    rng = np.random.default_rng(args.seed)
    worst = {}
    failures = runs = small_runs = widened = needed = 0
    above = 0  # runs whose max |error| passes the tolerance though every element is within atol + rtol |ref|
    most = (0, "")  # the most merges of a query row in a run, and where
    kw = dict(max_batch=8, max_context=2000, max_total_context=6000, max_new=64, max_total_new=128) if args.small else {}
    max_steps = args.max_steps or 2000
    variants = VARIANTS
    if args.guide:
        try:
            engine_named("guided:" + args.guide)  # reads the file: a bad one stops here with the reason
        except ValueError as e:
            p.error(f"--guide: {e}")
        variants = VARIANTS + [("guided:" + args.guide, {})]
    variants = loops(variants, device, dims, dtype)
    for i in range(args.batches):
        batch = random_batch(rng, **kw)
        # The small buffers draw from their own generator, so the batches above are those of earlier
        # versions of the check (the documented H200 runs) for the same seed.
        extra = np.random.default_rng([args.seed, i])
        small = small_buffer_batch(extra, max_steps, **kw) if extra.random() < 1 / SMALL_SHARE else None
        if i < args.skip:
            continue
        if i and i % 25 == 0:
            say(f"... {i} batches, {runs} runs, {failures} failing")
        for b in (batch, small):
            if b is None:
                continue
            x = random_inputs(b.cache, b.offsets, b.page_size, dims, dtype, device, args.seed + i)
            for j in judge_batch(x, b.buffer_tokens, tolerance, variants, kernel=kernel, state=args.state, weights=args.weights):
                if j.err is None:
                    continue
                runs += 1
                small_runs += b is small
                key = f"{j.engine} ({j.path})"
                worst[key] = max(worst.get(key, 0.0), j.err)
                above += j.ok and j.err > tolerance
                widened += j.widened
                needed += j.ok and not j.flat_ok
                if j.merges_max > most[0]:
                    most = (j.merges_max, f"batch {i}, {key} at {b.buffer_tokens} rows, max |error| {j.err:.3e}")
                if not j.ok:
                    failures += 1
                    say(f"FAIL batch {i}: {key} max |error| {j.err:.3e} > {tolerance} + {MERGE_C} x "
                        f"{j.merges_max} merges x u: B={len(b.cache)} page {b.page_size} buffer {b.buffer_tokens} "
                        f"cache {b.cache} new {b.new}")
            del x
    say(f"{args.batches - args.skip} random batches (seed {args.seed}, from {args.skip}), {runs} runs: {dims.name}, "
        f"{dims.heads} local heads, {str(dtype).replace('torch.', '')}, running state {str(state).replace('torch.', '')}, "
        f"on {device}")
    if device.type == "cuda":
        say(f"attention: {kernel_title(kernel)}")
    say("worst max |error| of each engine and path:")
    for key, err in sorted(worst.items()):
        say(f"  {key:34} {err:.3e}")
    u = UNIT_ROUNDOFF[state]
    say(f"runs at small buffers ({SMALL_BUFFERS[0]}-{SMALL_BUFFERS[1]} rows, one batch in {SMALL_SHARE}): {small_runs}")
    say(f"the most merges of a query row: {most[0]:,}{' (' + most[1] + ')' if most[1] else ''}")
    say(f"merge bound: each query row within ({tolerance:g} + {MERGE_C:g} x merges x {u:.3g}) (1 + |ref|)")
    say(f"runs judged by it (a row's allowance at least {tolerance:g}): {widened}, of them outside the flat "
        f"{tolerance:g} (1 + |ref|): {needed}")
    say(f"runs failing the merge bound: {failures}; runs with max |error| above {tolerance:g} (at |ref| > 0): {above}")
    with planted_off_by_one():
        planted = judge_batch(planted_batch(dims, dtype, device, args.seed), 8, tolerance, loops(TABLE_VARIANTS, device, dims, dtype),
                              kernel=kernel, state=args.state, weights=args.weights)
    missed = [f"{j.engine} ({j.path})" for j in planted if j.err is not None and j.ok]
    caught = sum(1 for j in planted if j.err is not None and not j.ok)
    say(f"planted off-by-one in the tables (judged by the merge bound, at most "
        f"{max((j.merges_max for j in planted), default=0)} merges a row): caught in {caught} of {caught + len(missed)} runs"
        + (f"; MISSED by {', '.join(missed)}" if missed else ""))
    # The answer in one line, last, where a CI log's reader looks.
    verdict = "FAIL" if failures or missed else "PASS"
    say(f"check: {verdict}: {runs - failures} of {runs} runs within the merge bound of one-shot attention; the planted "
        f"off-by-one caught in {caught} of {caught + len(missed)}")
    return 1 if verdict == "FAIL" else 0


if __name__ == "__main__":
    from .__main__ import entry, exit_with  # one mlaplan: error: line and exit 2 for bad input, as the command's

    exit_with(entry(command=main))
