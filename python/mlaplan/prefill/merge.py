"""Merging partial attention by log-sum-exp: state <- merge(state, part) for some rows of the state.

For each row and head, with the LSEs s (state) and p (part), m = max(s, p):
    out = (exp(s - m) * o_state + exp(p - m) * o_part) / (exp(s - m) + exp(p - m))
    lse = m + log(exp(s - m) + exp(p - m))
An LSE of +inf means the row had no keys (FlashAttention returns +inf there; vLLM PR 49294 fixed the
same thing) and is read as -inf; a side without keys adds nothing whatever its output holds (cuDNN
leaves NaN there), and a row with no keys on either side becomes (0, -inf).

On CUDA it is one fused Triton kernel, as vLLM's merge_attn_states is; on the
CPU, or with fused=False (the eager form an engine without a fused kernel runs), plain torch ops.
Both compute in float32 and store the state in its own dtype: bf16 as the engines keep it (each merge
rounds it), or float32 (`--state fp32`: nothing rounds between merges), whatever the part's dtype.
"""
from __future__ import annotations

from typing import Optional, Union

import torch

Rows = Union[slice, torch.Tensor]

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU-only installs: the eager form serves
    triton = None

if triton is not None:

    @triton.jit
    def _weights(s_lse, p_lse):
        """Each side's weight over their sum (ws * inv, wp * inv), ws and wp themselves (0: a side without
        keys, which adds nothing whatever its output holds), and the merged LSE.
        The merge is in place and a row's LSE is one value every warp of its program reads but one thread
        stores: without a barrier between, a late warp could read the merged LSE as the state's and weigh
        its part of the row wrongly (seen on an H100: about 1 merge in 300 of the waves plan off, up to
        8.8e-2 in the check)."""
        inf = float("inf")
        p_lse = tl.where(p_lse == inf, -inf, p_lse)
        s_lse = tl.where(s_lse == inf, -inf, s_lse)
        m = tl.maximum(s_lse, p_lse)
        m = tl.where(m == -inf, 0.0, m)
        ws = tl.exp(s_lse - m)
        wp = tl.exp(p_lse - m)
        total = ws + wp
        inv = tl.where(total == 0.0, 0.0, 1.0 / total)
        return ws, wp, ws * inv, wp * inv, tl.where(total == 0.0, -inf, m + tl.log(total))

    @triton.jit
    def _merge_kernel(
        o_ptr, o_st, o_sh, lse_ptr, lse_sh, lse_st,
        p_ptr, p_st, p_sh, plse_ptr, plse_sh, plse_st,
        rows_ptr, row0,
        HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr, HAS_ROWS: tl.constexpr,
    ):
        # A program a (row, head), its HEAD_DIM values: what every loop runs, and the cost files were calibrated on.
        i = tl.program_id(0)
        h = tl.program_id(1)
        if HAS_ROWS:
            r = tl.load(rows_ptr + i).to(tl.int64)
        else:
            r = row0 + i
        ws, wp, fs, fp, new_lse = _weights(tl.load(lse_ptr + h * lse_sh + r * lse_st),
                                           tl.load(plse_ptr + h * plse_sh + i * plse_st))
        d = tl.arange(0, BLOCK)
        keep = d < HEAD_DIM
        so = tl.load(o_ptr + r * o_st + h * o_sh + d, mask=keep, other=0.0).to(tl.float32)
        po = tl.load(p_ptr + i.to(tl.int64) * p_st + h * p_sh + d, mask=keep, other=0.0).to(tl.float32)
        out = tl.where(ws > 0.0, so * fs, 0.0) + tl.where(wp > 0.0, po * fp, 0.0)
        tl.debug_barrier()  # every warp has read the state's LSE before one thread overwrites it (_weights' note)
        tl.store(o_ptr + r * o_st + h * o_sh + d, out.to(o_ptr.dtype.element_ty), mask=keep)
        tl.store(lse_ptr + h * lse_sh + r * lse_st, new_lse)

    @triton.jit
    def _merge_tiled_kernel(
        o_ptr, o_st, o_sh, lse_ptr, lse_sh, lse_st,
        p_ptr, p_st, p_sh, plse_ptr, plse_sh, plse_st,
        rows_ptr, row0, n,
        HEADS: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
        BLOCK_R: tl.constexpr, HAS_ROWS: tl.constexpr,
    ):
        # BLOCK_R rows of the part by BLOCK_H heads: a (row, head) pair a lane of j, its HEAD_DIM values along d.
        j = tl.arange(0, BLOCK_R * BLOCK_H)
        i = tl.program_id(0) * BLOCK_R + j // BLOCK_H
        h = tl.program_id(1) * BLOCK_H + j % BLOCK_H
        valid = (i < n) & (h < HEADS)
        i = i.to(tl.int64)
        if HAS_ROWS:
            r = tl.load(rows_ptr + i, mask=valid, other=0).to(tl.int64)
        else:
            r = row0 + i
        inf = float("inf")
        ws, wp, fs, fp, new_lse = _weights(tl.load(lse_ptr + h * lse_sh + r * lse_st, mask=valid, other=-inf),
                                           tl.load(plse_ptr + h * plse_sh + i * plse_st, mask=valid, other=-inf))
        d = tl.arange(0, BLOCK_D)
        keep = valid[:, None] & (d < HEAD_DIM)[None, :]
        at_o = o_ptr + (r * o_st + h * o_sh)[:, None] + d[None, :]
        so = tl.load(at_o, mask=keep, other=0.0).to(tl.float32)
        po = tl.load(p_ptr + (i * p_st + h * p_sh)[:, None] + d[None, :], mask=keep, other=0.0).to(tl.float32)
        out = (tl.where((ws > 0.0)[:, None], so * fs[:, None], 0.0)
               + tl.where((wp > 0.0)[:, None], po * fp[:, None], 0.0))
        tl.debug_barrier()  # as in _merge_kernel: the state's LSE read by every warp before it is overwritten
        tl.store(at_o, out.to(o_ptr.dtype.element_ty), mask=keep)
        tl.store(lse_ptr + h * lse_sh + r * lse_st, new_lse, mask=valid)


# The tiled kernel's values a program, each operand: 2 rows of 16 heads x 128 at DeepSeek-V3 TP 8 (at TP 1, one
# row and 32 heads), 8 KB of bf16 in 16-byte pieces, 32 values a thread of 4 warps. A program a (row, head), 131K
# programs for 8K queries, ran the merge at 2.6-2.9x its bytes' time in every loop on an H100 (7dbbb04). Every
# loop keeps that kernel: on the H100 the tiled one was faster only at 8,192 rows (58-69 us against 83-102) and
# slower at 128-4,096 (docs/data/prefill-fused-h100-2026-12-07), and the cost files were calibrated on it.
MERGE_TILE = 4096


def _merge_fused(o, lse, part_o, part_lse, rows: Rows, tiled: bool = False) -> None:
    n, heads, dim = part_o.shape[0], part_o.shape[1], o.shape[2]
    if n == 0:
        return
    has_rows = isinstance(rows, torch.Tensor)
    args = (o, o.stride(0), o.stride(1), lse, lse.stride(0), lse.stride(1),
            part_o, part_o.stride(0), part_o.stride(1), part_lse, part_lse.stride(0), part_lse.stride(1),
            rows if has_rows else o, 0 if has_rows else rows.start)
    block_d = triton.next_power_of_2(dim)
    if not tiled:
        _merge_kernel[(n, heads)](*args, HEAD_DIM=dim, BLOCK=block_d, HAS_ROWS=has_rows)
        return
    block_h = min(triton.next_power_of_2(heads), max(1, MERGE_TILE // block_d))
    block_r = max(1, MERGE_TILE // (block_h * block_d))
    _merge_tiled_kernel[(triton.cdiv(n, block_r), triton.cdiv(heads, block_h))](
        *args, n, HEADS=heads, HEAD_DIM=dim, BLOCK_H=block_h, BLOCK_D=block_d, BLOCK_R=block_r, HAS_ROWS=has_rows,
        num_warps=4)


def _merge_eager(o, lse, part_o, part_lse, rows: Rows) -> None:
    inf = float("inf")
    idx = rows if isinstance(rows, torch.Tensor) else torch.arange(rows.start, rows.stop, device=o.device)
    s = lse.index_select(1, idx)
    s = torch.where(s == inf, -inf, s)
    p = torch.where(part_lse == inf, -inf, part_lse.float())
    m = torch.maximum(s, p)
    m = torch.where(m == -inf, torch.zeros_like(m), m)
    ws, wp = torch.exp(s - m), torch.exp(p - m)
    total = ws + wp
    inv = torch.where(total == 0, torch.zeros_like(total), 1.0 / total)
    so = o.index_select(0, idx).float()
    po = part_o[..., : o.shape[2]].float()
    # A side without keys adds nothing, whatever its output holds (cuDNN leaves NaN there).
    term = lambda x, w: torch.where((w > 0).t()[..., None], x * (w * inv).t()[..., None], 0.0)  # noqa: E731
    out = term(so, ws) + term(po, wp)
    o.index_copy_(0, idx, out.to(o.dtype))
    lse.index_copy_(1, idx, torch.where(total == 0, torch.full_like(total, -inf), m + torch.log(total)))


def merge_into(o: torch.Tensor, lse: torch.Tensor, part_o: torch.Tensor, part_lse: torch.Tensor, rows: Rows,
               fused: Optional[bool] = None, tiled: bool = False) -> None:
    """Merges part (o [n, heads, >= D], lse [heads, n]) into rows of the state (o [T, heads, D], lse
    [heads, T] float32), in place. rows: a slice of n rows, or a tensor of n row indices. tiled: the fused
    kernel takes a few rows and heads a program, not one (row, head) (MERGE_TILE says where it is faster)."""
    if fused is None:
        fused = o.is_cuda and triton is not None
    if fused:
        _merge_fused(o, lse, part_o, part_lse, rows, tiled)
    else:
        _merge_eager(o, lse, part_o, part_lse, rows)
