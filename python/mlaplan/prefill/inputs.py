"""The tensors of one MLA layer's prefill, as an engine holds them, and their checks.

The paged latent cache holds every token of every sequence, its cached context and its new tokens
alike, since engines write the new tokens' latent rows (kv_c | k_pe) into the cache before the
attention runs (vLLM's concat_and_cache_mla, MAX's cache store). Sequence b's token at position t is
row t % page_size of page page_table[b, t // page_size].
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch

from .model import MlaDims


class PrefillInputError(ValueError):
    """Inputs that cannot describe a prefill; the message names the argument and the fix."""


@dataclass
class Lengths:
    """The batch on the host, as engines keep it for building their metadata."""

    cache: np.ndarray      # [B] cached tokens per sequence
    new: np.ndarray        # [B] new tokens per sequence
    q_start: np.ndarray    # [B + 1] row of each sequence's first query (input_row_offsets - input_row_offsets[0])
    page_size: int

    @property
    def batch_size(self) -> int:
        return int(self.cache.shape[0])

    @property
    def total(self) -> np.ndarray:
        return self.cache + self.new

    @property
    def new_tokens(self) -> int:
        return int(self.q_start[-1])


@dataclass
class PrefillInputs:
    """q [T, heads, qk_nope + qk_rope]; kv_cache [pages, page_size, kv_lora + qk_rope]; page_table
    [B, pages per sequence] (int); kv_b_proj [heads * (qk_nope + v_head), kv_lora], the weight of
    the up-projection (torch.nn.Linear layout); the lengths on the host."""

    q: torch.Tensor
    kv_cache: torch.Tensor
    page_table: torch.Tensor
    kv_b_proj: torch.Tensor
    lengths: Lengths
    dims: MlaDims

    @property
    def device(self) -> torch.device:
        return self.q.device


def _host_ints(name: str, values: Any) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    a = np.asarray(values)
    if a.ndim != 1:
        raise PrefillInputError(f"{name}: expected a 1-D array of integers, got {a.ndim} dimensions")
    if a.size and a.dtype.kind not in "iu":
        raise PrefillInputError(f"{name}: expected integers, got {a.dtype}")
    if a.size and a.min() < 0:
        raise PrefillInputError(f"{name}: expected non-negative values, got {int(a.min())}")
    return a.astype(np.int64)


def lengths_of(cache_lengths: Any, input_row_offsets: Any, page_size: int) -> Lengths:
    cache = _host_ints("cache_lengths", cache_lengths)
    offsets = _host_ints("input_row_offsets", input_row_offsets)
    if offsets.shape[0] != cache.shape[0] + 1:
        raise PrefillInputError(
            f"input_row_offsets: expected batch_size + 1 = {cache.shape[0] + 1} values (cache_lengths has "
            f"{cache.shape[0]}), got {offsets.shape[0]}")
    new = np.diff(offsets)
    if new.size and new.min() < 0:
        b = int(np.argmin(new))
        raise PrefillInputError(f"input_row_offsets: must not decrease, but [{b}] = {offsets[b]} > [{b + 1}] = {offsets[b + 1]}")
    if page_size < 1:
        raise PrefillInputError(f"page_size: expected at least 1, got {page_size}")
    return Lengths(cache, new, offsets - offsets[0], int(page_size))


def check_inputs(x: PrefillInputs) -> None:
    """Every shape, type and page-table entry the executor relies on; PrefillInputError otherwise."""
    d, n = x.dims, x.lengths
    tensors = {"q": x.q, "kv_cache": x.kv_cache, "page_table": x.page_table, "kv_b_proj": x.kv_b_proj}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise PrefillInputError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
        if t.device != x.q.device:
            raise PrefillInputError(f"{name}: on {t.device}, but q is on {x.q.device}; put every tensor on one device")
    want = {
        "q": (n.new_tokens, d.heads, d.qk_head),
        "kv_b_proj": (d.heads * (d.qk_nope + d.v_head), d.kv_lora),
    }
    for name, shape in want.items():
        if tuple(tensors[name].shape) != shape:
            raise PrefillInputError(f"{name}: expected shape {list(shape)} for {d.name} with {d.heads} local heads and "
                                    f"{n.new_tokens} new tokens, got {list(tensors[name].shape)}")
    if x.kv_cache.ndim != 3 or x.kv_cache.shape[1] != n.page_size or x.kv_cache.shape[2] != d.latent:
        raise PrefillInputError(f"kv_cache: expected shape [pages, page_size = {n.page_size}, kv_lora + qk_rope = "
                                f"{d.latent}], got {list(x.kv_cache.shape)}")
    if not x.q.dtype.is_floating_point or x.kv_cache.dtype != x.q.dtype or x.kv_b_proj.dtype != x.q.dtype:
        raise PrefillInputError(f"q, kv_cache, kv_b_proj: expected one floating dtype, got {x.q.dtype}, "
                                f"{x.kv_cache.dtype}, {x.kv_b_proj.dtype}")
    if x.page_table.ndim != 2 or x.page_table.shape[0] != n.batch_size or x.page_table.dtype not in (torch.int32, torch.int64):
        raise PrefillInputError(f"page_table: expected an int32 or int64 tensor of shape [batch_size = {n.batch_size}, "
                                f"pages], got {x.page_table.dtype} {list(x.page_table.shape)}")
    pages_needed = -(-n.total // n.page_size)
    if n.batch_size and pages_needed.max() > x.page_table.shape[1]:
        b = int(np.argmax(pages_needed))
        raise PrefillInputError(
            f"page_table: sequence {b} holds {int(n.total[b])} tokens (cached + new), {int(pages_needed[b])} pages of "
            f"{n.page_size}, but the table has {x.page_table.shape[1]} columns; give each sequence a page for every "
            f"{n.page_size} tokens")
    table = x.page_table.detach().cpu().numpy()
    pages = x.kv_cache.shape[0]
    for b in range(n.batch_size):
        used = table[b, : pages_needed[b]]
        if used.size and (used.min() < 0 or used.max() >= pages):
            bad = int(used[(used < 0) | (used >= pages)][0])
            raise PrefillInputError(f"page_table: sequence {b} names page {bad}, but kv_cache has pages 0 .. {pages - 1}")


def host_page_table(x: PrefillInputs) -> np.ndarray:
    return x.page_table.detach().cpu().numpy().astype(np.int64)


def random_inputs(cache_lengths: Any, input_row_offsets: Any, page_size: int, dims: MlaDims,
                  dtype: torch.dtype = torch.bfloat16, device: Any = "cpu", seed: int = 0,
                  spare_pages: int = 0) -> PrefillInputs:
    """Inputs of unit scale: q and the latent cache drawn from N(0, 1); kv_b_proj initialised as
    torch.nn.Linear initialises its weight, U(-1/sqrt(kv_lora), 1/sqrt(kv_lora)), so K and V have a
    standard deviation near 0.58. Each sequence's pages are scattered over the cache in random order,
    so the gather reads through the page table as it does in an engine."""
    n = lengths_of(cache_lengths, input_row_offsets, page_size)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    pages_per_seq = -(-n.total // n.page_size)
    total_pages = int(pages_per_seq.sum()) + spare_pages
    order = torch.randperm(max(total_pages, 1), generator=gen)[:total_pages]
    width = max(int(pages_per_seq.max(initial=0)), 1)
    table = torch.zeros((n.batch_size, width), dtype=torch.int32)
    at = 0
    for b, k in enumerate(pages_per_seq.tolist()):
        table[b, :k] = order[at : at + k]
        at += k
    device = torch.device(device)
    # Drawn on the device itself where there is one (much quicker for gigabytes of cache), from one
    # generator in a fixed order, so a seed gives the same inputs on every run on that device.
    g = torch.Generator(device=device).manual_seed(seed)
    normal = lambda *shape: torch.randn(shape, generator=g, device=device).to(dtype)  # noqa: E731
    q = normal(n.new_tokens, dims.heads, dims.qk_head)
    cache = normal(max(total_pages, 1), n.page_size, dims.latent)
    bound = dims.kv_lora**-0.5
    w = (torch.rand((dims.heads * (dims.qk_nope + dims.v_head), dims.kv_lora), generator=g, device=device) * 2 - 1) * bound
    x = PrefillInputs(q=q, kv_cache=cache, page_table=table.to(device), kv_b_proj=w.to(dtype), lengths=n, dims=dims)
    return x


def flat_rows(table: np.ndarray, page_size: int, b: int, start: int, count: int) -> np.ndarray:
    """Rows of kv_cache.view(-1, latent) holding sequence b's tokens start .. start + count - 1."""
    t = np.arange(start, start + count, dtype=np.int64)
    return table[b, t // page_size] * page_size + t % page_size


def inputs_from(q: torch.Tensor, kv_cache: torch.Tensor, page_table: torch.Tensor, cache_lengths: Any,
                input_row_offsets: Any, kv_b_proj: torch.Tensor, dims: MlaDims,
                page_size: Optional[int] = None) -> PrefillInputs:
    """Wraps a caller's own tensors, checked."""
    if not isinstance(kv_cache, torch.Tensor) or kv_cache.ndim != 3:
        raise PrefillInputError("kv_cache: expected a torch.Tensor of shape [pages, page_size, kv_lora + qk_rope]")
    x = PrefillInputs(q, kv_cache, page_table, kv_b_proj,
                      lengths_of(cache_lengths, input_row_offsets, page_size or kv_cache.shape[1]), dims)
    check_inputs(x)
    return x
