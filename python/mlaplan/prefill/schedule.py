"""What each engine runs for one MLA layer's prefill, built from mlaplan's plan for its policy.

A schedule is a list of steps, built on the host before anything is timed, as engines build their
attention metadata ahead of the step. A step gathers latent rows from the paged cache into the
buffer (or takes the new tokens' own latent rows), up-projects them, runs one or two varlen attention
launches and merges the results by log-sum-exp into a running state. docs/prefill.md says, with the
engines' code, why each engine's steps are what they are here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np
import torch

from .. import engine_path, plan_policy, InfeasibleBatch
from .attention import VarlenCall, make_call
from .inputs import Lengths, flat_rows

# The engines, mlaplan's own policies, their aliases and engine_named, which reads a name: in _cli, where
# calibrate's and validate's saved runs are read without torch (docs/policies.md).
from .._cli import ALIASES, ENGINES, GROUPS, OWN_POLICIES, POLICIES, POLICY_CHOICES, engine_named  # noqa: F401
ENGINE_TITLES = {
    "max": "MAX",
    "packed": "vLLM, packed (since PR 50613)",
    "even-split": "vLLM, even split (before PR 50613)",
    "even-split/sglang": "SGLang",
    "packed/trtllm": "TensorRT-LLM",
}
ENGINE_TITLES["waves"] = "mlaplan's waves (vLLM's packed loop)"
ENGINE_TITLES["guided"] = "mlaplan's guided (vLLM's packed loop, or one shot where its cost file says so)"
# mlaplan's own loop: NAME+fused runs NAME's plan with the up-projection fused with the gather and K's
# layout (executor.prepare's up_projection="fused", fused_up.py).
FUSED = "+fused"
FUSED_TITLE = "in mlaplan's fused loop (gather, up-projection and K in one kernel)"
SGLANG_PATHS = ("auto", "chunked", "one-shot", "absorbed")
TRTLLM_PATHS = ("auto", "sm90", "sm100")
# SGLang's defaults: SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD, and the one-shot path's token limit.
SGLANG_PREFIX_THRESHOLD = 8192


@dataclass
class Attend:
    """One attention launch of a step and where its rows merge into the state."""

    call: VarlenCall
    q0: int                       # queries q[q0 : q0 + n] when q_rows is None
    q_rows: Optional[torch.Tensor]  # else these query rows (int64), gathered
    k0: int                       # the call's keys are buffer rows k0 .. k0 + call.n_k - 1

    @property
    def rows(self):
        return slice(self.q0, self.q0 + self.call.n_q) if self.q_rows is None else self.q_rows


@dataclass
class Step:
    label: str                    # "chunk 3", "new tokens", "whole context"
    new_tokens: bool              # the new tokens' own latent rows, not a gather from the cache
    rows: Optional[torch.Tensor]  # latent cache rows to gather, in buffer order (int64)
    n_rows: int
    attends: List[Attend]
    target: str                   # the state it writes: "out" or "context"
    take: bool = False            # the target's first write: the attention output becomes it, no merge
    absorbed: bool = False        # MLA over the latent rows themselves (SGLang's absorbed path)


@dataclass
class Schedule:
    engine: str
    path: str                     # "chunked" or the engine's other path: "one-shot", "absorbed", "sm90", ...
    steps: List[Step]
    iterations: int               # chunks the policy streams the context in (0 on one-shot paths)
    buffer_rows: int              # the gather buffer's rows: the most any step gathers
    empty_targets: tuple = ()     # states that start as "no keys" (LSE -inf) and are merged into
    final_merge: bool = False     # merge "context" into "out" at the end (vLLM)
    result: str = "out"

    @property
    def merges(self) -> int:
        n = sum(len(s.attends) for s in self.steps if not s.take)
        return n + int(self.final_merge)

    def merges_per_query(self, new_tokens: int) -> np.ndarray:
        """[new_tokens] int64: how many LSE merges each query row's running state goes through, as
        execute runs them: one per merged launch that holds the row (a step that is taken as it is
        merges nothing), and vLLM's final merge. A merge where the row has no keys on one side is
        counted too: the loop runs it (and it rounds nothing). C++'s merges_per_query counts the same
        from the plan tables (policy_cost.hpp)."""
        edges = np.zeros(new_tokens + 1, dtype=np.int64)  # +1 / -1 at a slice's ends, summed below
        gathered = np.zeros(new_tokens, dtype=np.int64)
        for step in self.steps:
            if step.take:
                continue
            for a in step.attends:
                if a.q_rows is None:
                    edges[a.q0] += 1
                    edges[a.q0 + a.call.n_q] -= 1
                else:
                    np.add.at(gathered, a.q_rows.cpu().numpy(), 1)
        return np.cumsum(edges[:-1]) + gathered + int(self.final_merge)


def merge_stats(counts) -> tuple:
    """(max, p99) of merges per query row, p99 by nearest rank as the CLI's quantiles; (0, 0) for no rows."""
    v = np.sort(np.asarray(counts, dtype=np.int64))
    if v.size == 0:
        return 0, 0
    rank = min(max(int(math.ceil(0.99 * v.size)), 1), v.size)
    return int(v[-1]), int(v[rank - 1])


def _policy_items(text: str) -> List[str]:
    """The --policy list's items, stripped; an empty one refused as the CLI refuses it."""
    names = [t.strip() for t in text.split(",")]
    if not any(names):
        raise ValueError("--policy: give a policy; " + POLICY_CHOICES)
    if not all(names):
        raise ValueError(f"--policy {text}: an empty item in the list; name a policy between each two commas, or remove "
                         f"the extra comma")
    return names


def policy_files(text: str) -> List[str]:
    """The cost files the --policy list names (guided:FILE), as spelled: the command's inputs, which no
    output may overwrite. Read nothing; parse_engines checks them."""
    return [path for head, colon, path in (split_loop(t)[0].partition(":") for t in _policy_items(text)) if colon and path]


def split_loop(name: str) -> Tuple[str, str]:
    """(the policy, the up-projection) a name runs: NAME+fused, NAME's plan in mlaplan's own loop."""
    return (name[: -len(FUSED)], "fused") if name.lower().endswith(FUSED) else (name, "unfused")


def policy_title(name: str) -> str:
    """What a policy name runs, in words (ENGINE_TITLES; +fused: in mlaplan's loop)."""
    policy, up = split_loop(name)
    title = ENGINE_TITLES.get(policy, ENGINE_TITLES.get(policy.split(":")[0].split("/")[0], policy))
    return title + (", " + FUSED_TITLE if up == "fused" else "")


def parse_engines(text: str, loops: bool = False) -> List[str]:
    """A comma list of policies, engines by name (vllm: packed) and the words all, engines and variants
    (docs/prefill.md); with `loops`, each may end in +fused (all+fused: every policy so). ValueError names
    a bad one."""
    names = _policy_items(text)
    out: List[str] = []
    for n in names:
        base, up = split_loop(n)
        if up == "fused" and not loops:
            raise ValueError(f"--policy {n}: +fused is the executor's own loop (python -m mlaplan.prefill); here, name "
                             f"the policy alone")
        if not base.strip():
            raise ValueError(f"--policy {n}: name the policy whose plan the fused loop runs, e.g. packed+fused or all+fused")
        try:
            named = GROUPS.get(base.strip().lower()) or (engine_named(base),)
        except ValueError as e:  # the item as given, suffix included
            raise ValueError(str(e).replace(f"--policy {base}:", f"--policy {n}:", 1)) from None
        for e in named:
            e = e + FUSED if up == "fused" else e
            if e not in out:
                out.append(e)
    return out


def _ids(values, device) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values, dtype=np.int64), device=device)


def _chunks(tables, b_count: int):
    """(chunk, [(b, start, n, buffer row)]) for each used chunk of the tables."""
    bro, co, lens = (np.asarray(t, dtype=np.int64) for t in tables[:3])
    for c in range(lens.shape[0]):
        if lens[c] <= 0:
            continue
        segs = []
        for b in range(b_count):
            n = int(bro[c, b + 1] - bro[c, b])
            if n > 0:
                segs.append((b, int(co[c, b]), n, int(bro[c, b])))
        yield c, segs, int(lens[c])


def _gather_rows(table, n: Lengths, segs, device) -> torch.Tensor:
    parts = [flat_rows(table, n.page_size, b, s, k) for b, s, k, _ in segs]
    return _ids(np.concatenate(parts) if parts else np.zeros(0), device)


def _all_queries_call(n: Lengths, k_lens, causal: bool, device) -> Attend:
    return Attend(make_call(n.new.tolist(), list(k_lens), causal, device), 0, None, 0)


def _new_tokens_step(n: Lengths, target: str, take: bool, device) -> Step:
    return Step("new tokens", True, None, n.new_tokens, [_all_queries_call(n, n.new.tolist(), True, device)], target, take)


def _whole_context_step(n: Lengths, table, device, label: str, absorbed: bool = False) -> Step:
    """Every sequence's cached and new rows in one gather and one causal attention (TensorRT-LLM's
    forward_context_with_cached_kv on SM90, SGLang's one-shot and absorbed paths)."""
    segs = [(b, 0, int(t), 0) for b, t in enumerate(n.total.tolist()) if t > 0]
    rows = _gather_rows(table, n, segs, device)
    return Step(label, False, rows, int(rows.shape[0]), [_all_queries_call(n, n.total.tolist(), True, device)],
                "out", True, absorbed)


def _context_steps(n: Lengths, table, tables, queries: str, target: str, first_takes: bool, device) -> List[Step]:
    """The chunked-context loop over a context-only policy's tables. queries: "all" (every prefill's
    queries attend every chunk, with no keys where a sequence has none in it) or "own" (only the
    chunk's own requests: vLLM's packed loop, where they are a contiguous run; waves' groups may skip
    a member whose share rounds to nothing, and their queries are then gathered)."""
    steps = []
    for c, segs, length in _chunks(tables, n.batch_size):
        rows = _gather_rows(table, n, segs, device)
        if queries == "all":
            k_lens = np.zeros(n.batch_size, dtype=np.int64)
            for b, _, k, _ in segs:
                k_lens[b] = k
            attend = _all_queries_call(n, k_lens.tolist(), False, device)
        else:
            bs = [b for b, _, _, _ in segs]
            call = make_call(n.new[bs].tolist(), [k for _, _, k, _ in segs], False, device)
            if bs == list(range(bs[0], bs[-1] + 1)):
                attend = Attend(call, int(n.q_start[bs[0]]), None, 0)
            else:
                q_rows = np.concatenate([np.arange(n.q_start[b], n.q_start[b] + n.new[b], dtype=np.int64) for b in bs])
                attend = Attend(call, int(q_rows[0]) if q_rows.size else 0, _ids(q_rows, device), 0)
        take = first_takes and not steps and attend.q0 == 0 and attend.call.n_q == n.new_tokens
        steps.append(Step(f"chunk {c}", False, rows, length, [attend], target, take))
    return steps


def _max_steps(n: Lengths, table, tables, device) -> List[Step]:
    """MAX streams cache and new tokens together, each sequence padded to whole pages. In the chunk
    that holds some of a sequence's new tokens, a query at position p sees the keys at positions <= p
    (padding rows, past the sequence's end, are seen by none). That mask is split exactly into a
    bottom-right causal launch (the queries inside the chunk's key range) and a full one (the queries
    after it, and sequences whose keys are all cached)."""
    steps = []
    for c, segs, length in _chunks(tables, n.batch_size):
        rows = _gather_rows(table, n, segs, device)
        parts = {False: [], True: []}  # causal? -> [(query row, count, key row, count)]
        for b, s, k, at in segs:
            cb, tot, q0 = int(n.cache[b]), int(n.total[b]), int(n.q_start[b])
            e = min(s + k, tot)  # keys at positions s .. e - 1 are real tokens
            if e <= s or n.new[b] == 0:
                continue
            if e <= cb:
                parts[False].append((q0, tot - cb, at, e - s))
                continue
            first = max(cb, s)  # queries before s see none of these keys
            parts[True].append((q0 + first - cb, e - first, at, e - s))
            if e < tot:
                parts[False].append((q0 + e - cb, tot - e, at, e - s))
        attends = [_segments_attend(parts[causal], causal, device) for causal in (False, True) if parts[causal]]
        steps.append(Step(f"chunk {c}", False, rows, length, attends, "out"))
    return steps


def _segments_attend(segs, causal: bool, device) -> Attend:
    """One launch over (query row, queries, key row, keys) segments in buffer order; a gap between
    two segments' keys is covered by a segment with no queries, so cu_seqlens stays contiguous."""
    q_lens, k_lens, q_rows = [], [], []
    k0 = segs[0][2]
    at = k0
    for qr, qn, kr, kn in segs:
        if kr > at:
            q_lens.append(0)
            k_lens.append(kr - at)
        q_lens.append(qn)
        k_lens.append(kn)
        q_rows.append(np.arange(qr, qr + qn, dtype=np.int64))
        at = kr + kn
    rows = np.concatenate(q_rows)
    contiguous = bool(np.all(np.diff(rows) == 1))
    call = make_call(q_lens, k_lens, causal, device)
    return Attend(call, int(rows[0]), None if contiguous else _ids(rows, device), k0)


def build_schedule(engine: str, n: Lengths, table: np.ndarray, buffer_tokens: int, max_chunks: Optional[int],
                   device, sglang_path: str = "auto", trtllm_path: str = "auto",
                   one_shot_tokens: Optional[int] = None) -> Schedule:
    """The steps `engine` runs for this batch with a buffer of buffer_tokens rows. max_chunks caps MAX's
    plan (None: as many as the batch needs). Raises ValueError (InfeasibleBatch for max) where the
    engine's policy refuses the batch."""
    engine = engine_named(engine)
    cache_u32 = n.cache.astype(np.uint32)
    offsets_u32 = n.q_start.astype(np.uint32)
    has_context = bool(n.cache.sum() > 0)

    def tables_for(policy: str, chunks: int = 1):
        return plan_policy(cache_u32, offsets_u32, n.page_size, buffer_tokens, chunks, policy)

    if engine == "max":
        chunks = max_chunks
        if chunks is None:
            try:
                plan = tables_for("max", 1)
            except InfeasibleBatch as e:
                plan = tables_for("max", e.min_max_chunks)
        else:
            plan = tables_for("max", chunks)
        steps = _max_steps(n, table, plan.tables, device)
        return Schedule(engine, "chunked", steps, plan.chunks_used, max((s.n_rows for s in steps), default=0),
                        empty_targets=("out",))

    if engine == "packed/trtllm":
        path = trtllm_path
        if path == "auto":
            cuda = torch.device(device).type == "cuda"
            path = "sm100" if not cuda or torch.cuda.get_device_capability(device)[0] >= 10 else "sm90"
        if path == "sm90" or not has_context:
            # SM90 (and a batch without cached context) takes the whole context at once.
            step = _whole_context_step(n, table, device, "whole context")
            return Schedule(engine, "sm90" if has_context else "no context", [step], 0, step.n_rows)
        plan = tables_for("packed/trtllm")
        steps = _context_steps(n, table, plan.tables, "all", "context", False, device)
        steps.append(_new_tokens_step(n, "context", False, device))
        return Schedule(engine, "sm100", steps, plan.chunks_used, max(s.n_rows for s in steps),
                        empty_targets=("context",), result="context")

    if engine == "even-split/sglang":
        path = sglang_path
        if path == "auto":
            # _handle_attention_backend: MHA (one-shot or chunked) for no prefix or a prefix of at least
            # the threshold, absorbed MLA in between; one-shot where the whole batch fits the capacity.
            prefix = int(n.cache.sum())
            if prefix == 0 or prefix >= SGLANG_PREFIX_THRESHOLD:
                limit = buffer_tokens if one_shot_tokens is None else one_shot_tokens
                path = "one-shot" if int(n.total.sum()) <= limit else "chunked"
            else:
                path = "absorbed"
        if path in ("one-shot", "absorbed") or not has_context:
            label = "absorbed" if path == "absorbed" else "whole context"
            step = _whole_context_step(n, table, device, label, absorbed=path == "absorbed")
            return Schedule(engine, path if has_context else "no context", [step], 0, step.n_rows)
        plan = tables_for("even-split/sglang")
        steps = [_new_tokens_step(n, "out", True, device)]
        steps += _context_steps(n, table, plan.tables, "all", "out", False, device)
        return Schedule(engine, "chunked", steps, plan.chunks_used, max(s.n_rows for s in steps))

    if engine.startswith("guided"):
        # Its own choice by its cost file (the C++ rule run and sweep price): one shot where every
        # cached and new token fits the buffer and that is cheapest, else vLLM's loop below.
        path, _ = engine_path(cache_u32, offsets_u32, n.page_size, buffer_tokens, engine, 90)
        if path == "one-shot" and has_context:
            step = _whole_context_step(n, table, device, "whole context")
            return Schedule(engine, "one-shot", [step], 0, step.n_rows)

    # vLLM: the new tokens' causal attention, the context loop into its own state, one merge at the end.
    # waves and guided run that loop over their own plans.
    own = engine == "packed" or engine.startswith(("waves", "guided"))
    policy = engine if own else "even-split/vllm"
    steps = [_new_tokens_step(n, "out", True, device)]
    if not has_context:
        return Schedule(engine, "no context", steps, 0, steps[0].n_rows)
    plan = tables_for(policy)
    if own:
        # One chunk holding every request: its output is the context's (vLLM's fast path); otherwise
        # requests without context start as zeros with LSE -inf and each chunk fills its own rows.
        ctx = _context_steps(n, table, plan.tables, "own", "context", True, device)
    else:
        ctx = _context_steps(n, table, plan.tables, "all", "context", True, device)
    empty = () if ctx and ctx[0].take else ("context",)
    steps += ctx
    return Schedule(engine, "chunked", steps, plan.chunks_used, max(s.n_rows for s in steps),
                    empty_targets=empty, final_merge=True)
