"""One CUDA graph for any batch of a bucket (issue 64, item 5): the loop's whole step captured once per
bucket and replayed for every batch that fits it, with no host sync.

A bucket is (max_batch sequences, max_new new tokens in all, max_pages pages per sequence, the cache's
page size, buffer_rows N, max_chunks M). AnyBatchLoop holds static device buffers of those sizes; load()
copies a batch's metadata and queries into them (host-to-device copies outside the graph, as an engine
updates its metadata), and step() is the graph's body:

1. The plan of the cached context (MAX's mla_prefill_plan with every input length 0: the new tokens are
   handled apart, as vLLM's loop does), into device tables bro (buffer_row_offsets) [M, B + 1], cache_offsets [M, B],
   lengths [M] and a status: on CUDA the GPU planner (mlaplan.bind's BoundPlan) launched on the current
   stream, so its tables never leave the device; on the CPU the host planner (mlaplan.plan, the same
   tables bit for bit by the contract in docs/semantics.md) written into the same buffers.
2. Per chunk, with static shapes M x N and torch ops on the device: the sequence b owning buffer row r
   (a search over bro[c]), its position cache_offsets[c, b] + r - bro[c, b] and flat cache row through
   the page table; rows past the chunk's length or at a page's padding (positions >= cache[b]) read row
   0 and are never attended, since seqused_k[c, b] = clamp(cache[b] - cache_offsets[c, b], 0, the rows
   b owns in chunk c); cu_seqlens_k = bro[c]; the row count max(lengths[c], 0).
3. The new tokens: their rows up-projected by the fused kernel (fused_up, with the count of new tokens
   in device memory) and their causal varlen attention over themselves, taken as the running state.
4. For c in 0 .. M - 1: chunk c's N rows up-projected with the chunk's row count in device memory, the
   varlen attention of all queries over them (non-causal, cu_seqlens_k = bro[c], seqused_k[c],
   max_seqlen_k = N), merged into the state by log-sum-exp.

An unused chunk (lengths[c] = -1) still launches its kernels, and none of them reads the cache or the
weight: the fused up-projection's programs read the count 0 and return at once; the attention runs with
every seqused_k 0, so each query block finds no keys and only writes its output rows (0) and their LSE
(no keys); the merge, one program a query row and head, reads that part and the state and writes the
state back unchanged. So an unused chunk costs a few launches and the memory traffic of the queries'
output and state (about 3 x max_new x heads x v_head values), not a chunk's work; step 2's table ops
run over all M x N rows whatever the batch. The bucket's M is the most chunks a batch in it may need
(status() says when a batch needed more: its tables then hold no chunk, and the output is the new
tokens' attention alone).

    python -m mlaplan.prefill.any_batch docs/data/prefill-batches/coding-agent.json --tp 8 --attention fa3

times the one graph beside the executor's per-batch graphs (scripts/gpu-check/any-batch.sh).
"""
from __future__ import annotations

import argparse
import statistics
from typing import List, Optional, Tuple

import numpy as np
import torch

import mlaplan

from .attention import VarlenCall, resolve_kernel, varlen_attention
from .executor import WEIGHTS, state_dtype
from .fused_up import fused_up_project, quantize_kv_b_proj
from .inputs import PrefillInputError, PrefillInputs, check_inputs, flat_rows, host_page_table, lengths_of
from .merge import merge_into
from .model import MlaDims


def _whole(name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise PrefillInputError(f"{name}: expected a whole number >= {low}, got {value!r}")
    return int(value)


def _context_shape(cache, page_size: int, buffer_rows: int) -> dict:
    """The planner's shape of a plan of these context lengths (no new tokens): padded_tokens and
    min_max_chunks, from the C++ planner's own closed form (plan_shape)."""
    cache = np.asarray(cache, dtype=np.uint32)
    return mlaplan._mlaplan.plan_shape(cache, np.zeros(cache.size + 1, dtype=np.uint32), page_size, buffer_rows)


def min_max_chunks(cache, page_size: int, buffer_rows: int) -> int:
    """The smallest max_chunks whose plan of these context lengths (no new tokens) fits: every padded
    token in a chunk, and every sequence starting before the last chunk's end (docs/semantics.md)."""
    return int(_context_shape(cache, page_size, buffer_rows)["min_max_chunks"])


def varlen_takes_seqused_k() -> bool:
    """Whether this torch's varlen_attn (FlashAttention-2 on CUDA) takes seqused_k."""
    import inspect

    try:
        from torch.nn.attention import varlen
    except ImportError:
        return False
    return "seqused_k" in inspect.signature(varlen.varlen_attn).parameters


class AnyBatchLoop:
    """The bucketed device-resident loop (module docstring). kv_cache [pages, page_size, latent] is the
    engine's paged cache (the bucket's page size is its page_size: the planner binds it); kv_b_proj the
    layer's weight in kv_cache's dtype; kernel: the attention on CUDA, auto (FlashAttention-3 where a
    build imports, else FlashAttention-2 with V padded) or fa3 or flash; state: the running output's
    dtype (executor.state_dtype); weights: bf16, or fp8 (kv_b_proj quantized here once to e4m3 with
    128 x 128 block scales, as executor.prepare does, and the fused kernel's FP8 path run). Bad arguments raise PrefillInputError (a ValueError) naming them."""

    def __init__(self, dims: MlaDims, kv_b_proj: torch.Tensor, kv_cache: torch.Tensor, max_batch: int, max_new: int,
                 max_pages: int, buffer_rows: int, max_chunks: int, kernel: str = "auto", state=None,
                 weights: str = "bf16"):
        if not isinstance(dims, MlaDims):
            raise PrefillInputError(f"dims: expected an MlaDims (mlaplan.prefill.model_dims), got {type(dims).__name__}")
        if not isinstance(kv_cache, torch.Tensor) or kv_cache.ndim != 3 or kv_cache.shape[2] != dims.latent \
                or not kv_cache.dtype.is_floating_point:
            got = f"{kv_cache.dtype} {list(kv_cache.shape)}" if isinstance(kv_cache, torch.Tensor) else type(kv_cache).__name__
            raise PrefillInputError(f"kv_cache: expected a floating tensor [pages, page_size, {dims.latent}], got {got}")
        want = (dims.heads * (dims.qk_nope + dims.v_head), dims.kv_lora)
        if not isinstance(kv_b_proj, torch.Tensor) or tuple(kv_b_proj.shape) != want or kv_b_proj.dtype != kv_cache.dtype \
                or kv_b_proj.device != kv_cache.device:
            got = f"{kv_b_proj.dtype} {list(kv_b_proj.shape)}" if isinstance(kv_b_proj, torch.Tensor) else type(kv_b_proj).__name__
            raise PrefillInputError(f"kv_b_proj: expected {kv_cache.dtype} {list(want)} on {kv_cache.device} (kv_cache's), "
                                    f"got {got}")
        self.dims, self.kv_b_proj, self.kv_cache = dims, kv_b_proj, kv_cache
        self.device, self.dtype = kv_cache.device, kv_cache.dtype
        self.max_batch = _whole("max_batch", max_batch)
        self.max_new = _whole("max_new", max_new)
        self.max_pages = _whole("max_pages", max_pages)
        self.buffer_rows = _whole("buffer_rows", buffer_rows)
        self.max_chunks = _whole("max_chunks", max_chunks)
        if self.buffer_rows >= 2**31:
            raise PrefillInputError(f"buffer_rows: {buffer_rows} does not fit the planner's 32 bits; give fewer than 2^31")
        self.page_size = int(kv_cache.shape[1])
        self.kernel, _ = resolve_kernel(kernel, self.device)
        if self.kernel not in ("fa3", "flash"):  # cuDNN takes no seqused_k
            raise PrefillInputError(f"kernel: {kernel!r}; the loop reads key lengths from the device (seqused_k), which "
                                    "fa3 and flash take: give auto, fa3 or flash")
        self.state = state_dtype(state, self.dtype)
        if weights not in WEIGHTS:
            raise PrefillInputError(f"weights: {weights!r}; choose one of {', '.join(WEIGHTS)}")
        self.weight = (kv_b_proj, None) if weights == "bf16" else quantize_kv_b_proj(kv_b_proj)
        cuda = self.device.type == "cuda"
        if cuda and self.kernel == "flash" and not varlen_takes_seqused_k():
            raise PrefillInputError("kernel: flash runs through this torch's varlen_attn, which takes no seqused_k "
                                    "(torch 2.15's does); install FlashAttention-3 (pip install fa3-fwd) and give auto or fa3")
        self.pad_v = self.kernel == "flash" or not cuda  # FA2 and the CPU kernel take V padded to Q's width
        b, m, n, t, d = self.max_batch, self.max_chunks, self.buffer_rows, self.max_new, dims
        i32 = dict(dtype=torch.int32, device=self.device)
        # What load() writes.
        self.cache_lengths = torch.zeros(b, **i32)
        self.input_offsets = torch.zeros(b + 1, **i32)  # the plan is of the cached context only: stays 0
        self.page_table = torch.zeros((b, self.max_pages), **i32)
        self.q = torch.zeros((t, d.heads, d.qk_head), dtype=self.dtype, device=self.device)
        self.new_rows = torch.zeros(t, dtype=torch.int64, device=self.device)
        self.cu_q = torch.zeros(b + 1, **i32)
        self.new_count = torch.zeros(1, **i32)
        # What step() writes: the planner's tables, then each chunk's rows and key lengths.
        self.bro = torch.zeros((m, b + 1), **i32)
        self.cache_offsets = torch.zeros((m, b), **i32)
        self.lengths = torch.full((m,), -1, **i32)
        self.status_words = torch.zeros(4, **i32)
        self.chunk_rows = torch.zeros((m, n), dtype=torch.int64, device=self.device)
        self.seqused_k = torch.zeros((m, b), **i32)
        self.cu_k = torch.zeros((m, b + 1), **i32)
        self.row_counts = torch.zeros((m, 1), **i32)
        # K and V of a chunk or of the new tokens; zeros, as stale rows are loaded (never weighted) by kernels
        # that read whole tiles, and must not hold NaN.
        rows = max(n, t)
        self.k_buf = torch.zeros((rows, d.heads, d.qk_head), dtype=self.dtype, device=self.device)
        self.v_buf = torch.zeros((rows, d.heads, d.qk_head if self.pad_v else d.v_head), dtype=self.dtype, device=self.device)
        self.out = torch.zeros((t, d.heads, d.v_head), dtype=self.state, device=self.device)
        self.lse = torch.full((d.heads, t), float("-inf"), dtype=torch.float32, device=self.device)
        self._r = torch.arange(n, dtype=torch.int64, device=self.device)
        self.new_tokens = 0
        self.graph = None
        self._bound = None
        if cuda:
            if not mlaplan.cuda_available():
                raise PrefillInputError("kv_cache: on CUDA the loop plans on the device, and this mlaplan was built without "
                                        "CUDA; build it with MLAPLAN_ENABLE_CUDA=ON (scripts/gpu-check/any-batch.sh does)")
            self._bound = mlaplan.bind(self.cache_lengths, self.input_offsets, self.page_size, n, m,
                                       out=(self.bro, self.cache_offsets, self.lengths, self.status_words),
                                       workspace=mlaplan.Workspace(b, m, self.device.index or 0))

    # ---- outside the graph ----------------------------------------------------------------------

    def load(self, x: PrefillInputs) -> None:
        """Copies batch x into the static buffers. x.kv_b_proj must be the loop's weight; x.kv_cache the
        loop's cache, or a cache whose pages fit it (then copied in: tests and timing, where each batch
        brings its own). A batch past the bucket raises PrefillInputError naming what is too large."""
        if not isinstance(x, PrefillInputs):
            raise PrefillInputError(f"x: expected PrefillInputs (mlaplan.prefill.inputs_from wraps tensors), got {type(x).__name__}")
        if x.dims != self.dims:
            raise PrefillInputError(f"x: dims {x.dims} differ from the loop's {self.dims}")
        check_inputs(x)
        n = x.lengths
        if x.q.dtype != self.dtype or x.q.device != self.device:
            raise PrefillInputError(f"q: {x.q.dtype} on {x.q.device}; the loop's bucket is {self.dtype} on {self.device}")
        if x.kv_b_proj.data_ptr() != self.kv_b_proj.data_ptr():
            raise PrefillInputError("kv_b_proj: not the loop's weight (the graph reads the one it was made with); pass "
                                    "the loop's kv_b_proj in the batch")
        pages = int((-(-n.total // n.page_size)).max(initial=0))  # the most pages a sequence uses
        too_large = [(name, got, most) for name, got, most in (
            ("batch_size", n.batch_size, self.max_batch), ("new_tokens", n.new_tokens, self.max_new),
            ("page_table", pages, self.max_pages)) if got > most]
        if n.page_size != self.page_size:
            raise PrefillInputError(f"page_size: {n.page_size}; the bucket's cache has pages of {self.page_size}")
        if too_large:
            name, got, most = too_large[0]
            what = " pages a sequence uses" if name == "page_table" else ""
            raise PrefillInputError(f"{name}: {got}{what} is past the bucket's {most}; make a loop for a larger bucket")
        if x.kv_cache.data_ptr() != self.kv_cache.data_ptr():
            if x.kv_cache.shape[0] > self.kv_cache.shape[0] or x.kv_cache.shape[1:] != self.kv_cache.shape[1:]:
                raise PrefillInputError(f"kv_cache: {list(x.kv_cache.shape)} does not fit the loop's cache "
                                        f"{list(self.kv_cache.shape)}")
            self.kv_cache[: x.kv_cache.shape[0]].copy_(x.kv_cache)
        b, t = n.batch_size, n.new_tokens
        table = host_page_table(x)
        cache = np.zeros(self.max_batch, dtype=np.int32)
        cache[:b] = n.cache
        width = min(table.shape[1], self.max_pages)  # columns past a sequence's pages are never read
        pages = np.zeros((self.max_batch, self.max_pages), dtype=np.int32)
        pages[:b, :width] = table[:, :width]
        cu_q = np.full(self.max_batch + 1, t, dtype=np.int32)  # sequences past b: no new tokens
        cu_q[: b + 1] = n.q_start
        rows = np.zeros(self.max_new, dtype=np.int64)  # the new tokens' cache rows (an engine's slot mapping)
        if t:
            rows[:t] = np.concatenate([flat_rows(table, n.page_size, i, int(n.cache[i]), int(n.new[i])) for i in range(b)])
        for dst, src in ((self.cache_lengths, cache), (self.page_table, pages), (self.cu_q, cu_q), (self.new_rows, rows),
                         (self.new_count, np.array([t], dtype=np.int32))):
            dst.copy_(torch.from_numpy(src), non_blocking=True)
        if t:
            self.q[:t].copy_(x.q)
        self.new_tokens = t

    def capture(self, warmup: int = 2) -> None:
        """step() captured in a CUDA graph, after warm-up runs on a side stream (as torch requires; they
        compile the kernels). Replays then serve any batch load() takes."""
        if self.device.type != "cuda":
            raise PrefillInputError(f"kv_cache: on {self.device}; a CUDA graph needs CUDA tensors (call step() on the CPU)")
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(max(warmup, 1)):
                self.step()
        torch.cuda.current_stream(self.device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.step()

    def replay(self) -> None:
        if self.graph is None:
            raise PrefillInputError("replay: nothing captured; call capture() first")
        self.graph.replay()

    def result(self, new_tokens: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        """(out [T, heads, v_head] in q's dtype, lse [heads, T] float32) of the last step or replay, copied out
        of the static buffers (the next step writes over them); T: the loaded batch's new tokens unless given."""
        t = self.new_tokens if new_tokens is None else _whole("new_tokens", new_tokens, 0)
        if t > self.max_new:
            raise PrefillInputError(f"new_tokens: {t} is past the bucket's {self.max_new}")
        return self.out[:t].to(self.dtype, copy=True), self.lse[:, :t].clone()

    def status(self) -> dict:
        """The planner's status of the last step (one host read, after it): {code, min_max_chunks,
        padded_tokens}; raises InfeasibleBatch (a ValueError naming max_chunks, with .min_max_chunks) where
        the batch's context did not fit the bucket's chunks, ValueError for the planner's other refusals."""
        s = mlaplan.decode_status(self.status_words)
        if s["code"] == mlaplan.STATUS_INFEASIBLE:
            e = mlaplan.InfeasibleBatch(
                f"max_chunks: infeasible batch: {s['padded_tokens']} padded tokens of context need {s['min_max_chunks']} "
                f"chunks of {self.buffer_rows} rows, but the bucket's max_chunks is {self.max_chunks}; make a loop with "
                f"max_chunks at least {s['min_max_chunks']}")
            e.min_max_chunks = s["min_max_chunks"]
            raise e
        if s["code"] != mlaplan.STATUS_OK:
            raise PrefillInputError(f"cache_lengths: the planner refused the batch (status code {s['code']}: 2 is a padded "
                                    "total past 32 bits); give shorter contexts")
        return s

    # ---- the graph's body -----------------------------------------------------------------------

    def step(self) -> None:
        """The plan, the chunks' tables, the new tokens and M chunks (module docstring); no host sync on CUDA."""
        self._plan()
        self._tables()
        (w, scale), d, t, n = self.weight, self.dims, self.max_new, self.buffer_rows
        cache_flat = self.kv_cache.view(-1, d.latent)
        k, v = self.k_buf, self.v_buf
        fused_up_project(cache_flat, self.new_rows, w, d, k_out=k[:t], v_out=v[:t, :, : d.v_head], check_rows=False,
                         row_count=self.new_count, kv_b_proj_scale=scale)
        out, lse = self._attend(k[:t], v[:t], self.cu_q, t, True, None)
        self.out.copy_(out[..., : d.v_head])
        self.lse.copy_(lse)
        for c in range(self.max_chunks):
            fused_up_project(cache_flat, self.chunk_rows[c], w, d, k_out=k[:n], v_out=v[:n, :, : d.v_head],
                             check_rows=False, row_count=self.row_counts[c], kv_b_proj_scale=scale)
            out, lse = self._attend(k[:n], v[:n], self.cu_k[c], n, False, self.seqused_k[c])
            merge_into(self.out, self.lse, out, lse, slice(0, t))

    def _plan(self) -> None:
        if self._bound is not None:
            self._bound(torch.cuda.current_stream(self.device).cuda_stream)
            return
        cache = self.cache_lengths.numpy()  # the CPU: the buffers are host memory, reading them syncs nothing
        shape = _context_shape(cache, self.page_size, self.buffer_rows)
        padded, need = int(shape["padded_tokens"]), int(shape["min_max_chunks"])
        try:
            p = mlaplan.plan(cache.astype(np.uint32), self.input_offsets.numpy().astype(np.uint32), self.page_size,
                             self.buffer_rows, self.max_chunks)
        except mlaplan.InfeasibleBatch as e:  # as the GPU planner reports it: no chunk, the status says why
            self.lengths.fill_(-1)
            self.status_words.copy_(torch.tensor([mlaplan.STATUS_INFEASIBLE, e.min_max_chunks, padded & 0xFFFFFFFF,
                                                  padded >> 32], dtype=torch.int64).to(torch.int32))
            return
        for dst, src in ((self.bro, p.buffer_row_offsets), (self.cache_offsets, p.cache_offsets), (self.lengths, p.buffer_lengths)):
            dst.copy_(torch.from_numpy(src.astype(np.int64)).to(torch.int32))
        self.status_words.copy_(torch.tensor([mlaplan.STATUS_OK, need, padded & 0xFFFFFFFF, padded >> 32],
                                             dtype=torch.int64).to(torch.int32))

    def _tables(self) -> None:
        """Each chunk's flat cache rows, key lengths, cu_seqlens_k and row count, from the plan's tables by
        torch ops of static shapes (M x N), on the device."""
        b, m, n, p = self.max_batch, self.max_chunks, self.buffer_rows, self.page_size
        bro, co, lens = self.bro.long(), self.cache_offsets.long(), self.lengths.long()
        cache = self.cache_lengths.long()
        r = self._r.expand(m, n).contiguous()
        used = lens > 0  # -1: an unused chunk (and every chunk of a refused plan, whose tables are not read)
        # Row r of chunk c belongs to the last sequence whose rows there start at or before r.
        owner = (torch.searchsorted(bro[:, :b].contiguous(), r, right=True) - 1).clamp_(0, b - 1)
        pos = co.gather(1, owner) + r - bro.gather(1, owner)
        real = (r < lens[:, None]) & (pos < cache[owner])  # not past the chunk, not a page's padding
        pos = torch.where(real, pos, 0)
        page = self.page_table.long().view(-1)[owner * self.max_pages + pos // p]
        self.chunk_rows.copy_(torch.where(real, page * p + pos % p, 0))
        owned = bro[:, 1:] - bro[:, :-1]
        keys = torch.minimum((cache[None, :] - co).clamp(min=0), owned)
        self.seqused_k.copy_(torch.where(used[:, None], keys, 0))
        self.cu_k.copy_(torch.where(used[:, None], bro, 0))
        self.row_counts.copy_(lens.clamp(min=0)[:, None])

    def _attend(self, k, v, cu_k: torch.Tensor, max_k: int, causal: bool, seqused_k):
        """Attention of all max_new query rows (cu_q; rows past the batch's are never read) over k, v:
        [max_new] rows out whatever the batch. On CUDA the kernel reads the sizes from the device; the
        call's host lists are the bucket's bounds. On the CPU they are read (host memory)."""
        t = self.max_new
        if self.device.type == "cuda":
            call = VarlenCall(self.cu_q, cu_k, [0, t], [0, k.shape[0]], t, max_k, causal)
            return varlen_attention(self.q, k, v, call, self.dims.scale, self.kernel, seqused_k)
        cu_q, cu_kh = self.cu_q.tolist(), cu_k.tolist()
        call = VarlenCall(self.cu_q, cu_k, cu_q, cu_kh, t, max_k, causal)
        out, lse = varlen_attention(self.q, k, v, call, self.dims.scale, self.kernel, seqused_k)
        rows = out.shape[0]  # the batch's queries: the rest have none (+inf, as FlashAttention gives no keys)
        full = out.new_zeros((t,) + tuple(out.shape[1:]))
        full[:rows] = out
        full_lse = torch.full((lse.shape[0], t), float("inf"), dtype=torch.float32)
        full_lse[:, :rows] = lse
        return full, full_lse


# ---- timing (scripts/gpu-check/any-batch.sh) ----------------------------------------------------

COLUMNS = ("rows", "M", "graph", "eager", "1 chunk", "err", "max+fused graph", "eager", "packed+fused graph", "eager")


def compare(x: PrefillInputs, buffers, kernel: str, reps: int = 10, warmup: int = 3, settle_ms: float = 0.0) -> List[tuple]:
    """Per buffer size, one row of COLUMNS (ms are medians): the loop for x's bucket (x's own sizes, M its
    plan's chunks) captured once, its replay and eager step for x, a replay for a one-chunk batch of the
    same bucket (sequence 0 with a short context, over x's cache), the error of x's replay against
    one-shot attention, and the executor's per-batch graph and eager time of max+fused and packed+fused."""
    from . import timing
    from .executor import execute, prepare
    from .measure import errors
    from .reference import one_shot
    from .schedule import build_schedule

    n, d = x.lengths, x.dims
    ref = one_shot(x)
    timed = lambda fn: statistics.median(timing.time_eager(fn, True, reps, warmup, settle_ms))  # noqa: E731
    few_new = max(int(n.new[0]), 1)
    few = PrefillInputs(x.q[:few_new], x.kv_cache, x.page_table[:1], x.kv_b_proj,
                        lengths_of([min(int(n.cache[0]), 1000)], [0, few_new], n.page_size), d)
    rows = []
    for buffer in buffers:
        m = min_max_chunks(n.cache, n.page_size, buffer)
        loop = AnyBatchLoop(d, x.kv_b_proj, x.kv_cache, n.batch_size, n.new_tokens, x.page_table.shape[1], buffer, m,
                            kernel)
        loop.load(x)
        loop.capture()
        loop.replay()
        loop.status()
        err = errors(*loop.result(), *ref, 1e-2)[0]
        graph_ms, eager_ms = timed(loop.replay), timed(loop.step)
        loop.load(few)
        few_ms = timed(loop.replay)
        del loop
        cols = []
        for policy in ("max", "packed"):
            prep = prepare(x, build_schedule(policy, n, host_page_table(x), buffer, None, x.device), kernel=kernel,
                           up_projection="fused")
            cols.append(statistics.median(timing.time_graph(lambda: execute(prep), reps, warmup, settle_ms)))
            cols.append(timed(lambda: execute(prep)))
            del prep
        rows.append((buffer, m, graph_ms, eager_ms, few_ms, err, *cols))
        torch.cuda.empty_cache()
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    from .. import _mlaplan
    from .__main__ import Parser, _count, _positive_list, attention_kernel
    from .inputs import random_inputs
    from .model import model_dims

    p = Parser(prog="python -m mlaplan.prefill.any_batch",
               description="Times one CUDA graph captured per bucket, replayed for a batch, beside the executor's "
                           "per-batch graphs of max+fused and packed+fused and their eager time (docs/prefill.md, One "
                           "graph for any batch).",
               epilog="examples:\n"
                      "  python -m mlaplan.prefill.any_batch docs/data/prefill-batches/coding-agent.json --tp 8\n"
                      "  python -m mlaplan.prefill.any_batch docs/data/prefill-batches/coding-agent.json --buffer-tokens 65536 \\\n"
                      "      --attention fa3 --reps 5",
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", metavar="SCENARIO.json", help="a file of one batch: the bucket is its size")
    p.add_argument("--model", default="deepseek-v3", help="a model preset (default deepseek-v3)")
    p.add_argument("--tp", type=_count(1, 1024), default=8, help="tensor-parallel ranks (default 8)")
    p.add_argument("--buffer-tokens", type=_positive_list, default=[16384, 32768, 65536], metavar="N[,N...]",
                   help="buffer sizes in rows (default 16384,32768,65536)")
    p.add_argument("--attention", default="auto", choices=("auto", "fa3", "flash"),
                   help="the attention kernel (default auto: FlashAttention-3 where a build imports)")
    p.add_argument("--reps", type=_count(1), default=10, help="timed runs; the median is reported (default 10)")
    p.add_argument("--warmup", type=_count(0), default=3, help="untimed runs first (default 3)")
    p.add_argument("--settle-ms", type=_count(0), default=250, help="runs back to back this long first (default 250)")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        p.error("the timing needs a CUDA GPU, and torch sees none here (on the CPU: pytest tests/python/test_any_batch.py)")
    device = torch.device("cuda")
    kernel = attention_kernel(args.attention, device)
    try:
        dims = model_dims(args.model, args.tp)
    except ValueError as e:
        p.error(str(e) if str(e).startswith("--") else f"--model: {e}")
    s = _mlaplan.read_scenarios(args.scenario)[0]
    x = random_inputs(s["cache_lengths"], s["input_row_offsets"], int(s["page_size"]), dims, torch.bfloat16, device, 1)
    n = x.lengths
    print(f"{s['name']}: {n.batch_size} sequences, {int(n.cache.sum()):,} cached + {n.new_tokens:,} new tokens, page "
          f"{n.page_size}; {dims.name}, {dims.heads} heads\n{torch.cuda.get_device_name(device)}, {kernel}; ms, the median "
          f"of {args.reps}")
    widths = (7, 3, 7, 7, 8, 8, 15, 7, 18, 7)
    print(" ".join(f"{c:>{w}}" for c, w in zip(COLUMNS, widths)))
    for row in compare(x, args.buffer_tokens, kernel, args.reps, args.warmup, args.settle_ms):
        cells = [f"{row[0]:>7}", f"{row[1]:>3}"] + [f"{v:>{w}.2f}" for v, w in zip(row[2:5], widths[2:5])]
        cells += [f"{row[5]:>8.1e}"] + [f"{v:>{w}.2f}" for v, w in zip(row[6:], widths[6:])]
        print(" ".join(cells))
    print("graph: the one graph (captured once for the bucket) replayed for the batch; eager: its step issued;\n"
          "1 chunk: the same graph replayed for a batch of one sequence that uses one chunk; err: max |out - one-shot|;\n"
          "max+fused, packed+fused: the executor's loops captured for this batch alone, and eager")
    return 0


if __name__ == "__main__":
    from .__main__ import entry, exit_with

    exit_with(entry(command=main))
