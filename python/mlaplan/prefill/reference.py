"""One-shot attention over each sequence's whole context, in float32: what every policy's chunks
must add up to. Written from the definition (softmax(q k^T * scale) v with the causal mask by
position) so that it shares nothing with the executor but the inputs."""
from __future__ import annotations

from typing import Tuple

import torch

from .inputs import PrefillInputs, flat_rows, host_page_table


def one_shot(x: PrefillInputs, max_scores: int = 1 << 28, weights: str = "bf16",
             engine_gemm: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """(out [T, heads, v_head], lse [heads, T]) in float32. Queries go in blocks of at most
    max_scores / (heads * keys) rows, so a 256K-token context does not need its whole score matrix.
    weights="fp8": K and V as an FP8 kv_b_proj makes them (the executor's weights="fp8"): the weight's
    128 x 128 blocks and each row's 128-column groups quantized to e4m3, then multiplied exactly; with
    engine_gemm, multiplied by the engines' block GEMM instead (fused_up.linear_fp8, as the executor's
    unfused loops run it: cuBLAS's, whose sums within a block are at the tensor core's precision), so a
    loop is judged apart from its GEMM's rounding, which fused_up.block_gemm_error_ok bounds."""
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")  # no TF32: the reference is float32 throughout
    try:
        return _one_shot(x, max_scores, weights, engine_gemm)
    finally:
        torch.set_float32_matmul_precision(precision)


def loop_references(x: PrefillInputs, weights: str = "bf16"):
    """{"fused": ..., "unfused": ...}: the one-shot attention each up-projection's loops are judged against
    (schedule.split_loop's second name). Both are one_shot(x, weights=weights), the same tensors, unless
    weights is fp8 and the engines' block GEMM is cuBLAS's (fused_up.block_gemm_backend), when the engines'
    loops get K and V from that GEMM (engine_gemm) and mlaplan's fused loop the exact product."""
    exact = one_shot(x, weights=weights)
    engines = exact
    if weights == "fp8":
        from .fused_up import block_gemm_backend

        if block_gemm_backend(x.device, *x.kv_b_proj.shape) != "float32 dequantized":
            engines = one_shot(x, weights=weights, engine_gemm=True)
    return {"fused": exact, "unfused": engines}


def _one_shot(x: PrefillInputs, max_scores: int, weights: str, engine_gemm: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    d, n = x.dims, x.lengths
    table = host_page_table(x)
    cache = x.kv_cache.view(-1, d.latent).float()
    w = x.kv_b_proj.float()
    fp8 = weights == "fp8"
    if fp8:  # the quantizers are defined once, with the kernel (fused_up); the products here are float32's
        from .fused_up import dequantize, linear_fp8, quantize_activation, quantize_kv_b_proj

        wq, ws = quantize_kv_b_proj(x.kv_b_proj)
        w = dequantize(wq, ws, torch.float32)
    elif weights != "bf16":
        raise ValueError(f"weights: {weights!r}; choose bf16 or fp8")
    q_all = x.q.float()
    out = torch.zeros((n.new_tokens, d.heads, d.v_head), dtype=torch.float32, device=x.device)
    lse = torch.full((d.heads, n.new_tokens), float("-inf"), dtype=torch.float32, device=x.device)
    for b in range(n.batch_size):
        cached, new, total = int(n.cache[b]), int(n.new[b]), int(n.total[b])
        if new == 0:
            continue
        rows = torch.as_tensor(flat_rows(table, n.page_size, b, 0, total), device=x.device)
        latent = cache.index_select(0, rows)
        if fp8 and engine_gemm:  # the rows back in the cache's dtype (exact), as the executor gathers them
            kv = linear_fp8(latent[:, : d.kv_lora].to(x.kv_cache.dtype), wq, ws).float()
        else:
            lora = dequantize(*quantize_activation(latent[:, : d.kv_lora]), torch.float32) if fp8 else latent[:, : d.kv_lora]
            kv = lora @ w.t()
        kv = kv.view(total, d.heads, d.qk_nope + d.v_head)
        k = torch.cat((kv[..., : d.qk_nope], latent[:, None, d.kv_lora :].expand(-1, d.heads, -1)), dim=-1)
        v = kv[..., d.qk_nope :]
        k_h, v_h = k.transpose(0, 1), v.transpose(0, 1)  # [heads, total, D]
        q0 = int(n.q_start[b])
        block = max(1, min(new, max_scores // max(1, d.heads * total)))
        for i in range(0, new, block):
            j = min(new, i + block)
            q = q_all[q0 + i : q0 + j].transpose(0, 1)  # [heads, rows, D]
            scores = (q @ k_h.transpose(1, 2)) * d.scale
            position = torch.arange(cached + i, cached + j, device=x.device)[:, None]
            scores = scores.masked_fill(torch.arange(total, device=x.device)[None, :] > position, float("-inf"))
            l = torch.logsumexp(scores, dim=-1)
            out[q0 + i : q0 + j] = (torch.exp(scores - l[..., None]) @ v_h).transpose(0, 1)
            lse[:, q0 + i : q0 + j] = l
    return out, lse
