"""Executes one MLA layer's chunked-context prefill the way each engine does, from mlaplan's plan for
that engine's policy, on the GPU (or on the CPU, in float32, for small models), and checks it against
one-shot attention. Needs torch (`pip install .[torch]`). docs/prefill.md is the guide.

    import torch, mlaplan.prefill as mp
    dims = mp.model_dims("deepseek-v3", tp=8)                  # 16 local heads
    x = mp.random_inputs([40000, 0, 900], [0, 512, 1024, 1100], page_size=64, dims=dims, device="cuda")
    out, lse = mp.prefill_attention(x, policy="packed", buffer_tokens=16384)
    ref, ref_lse = mp.one_shot(x)                              # float32
    (out.float() - ref).abs().max()                            # about 1e-3 in bf16

`prefill_attention` takes the engine's tensors as they are (`inputs_from` wraps a caller's own q,
paged cache, page table, lengths and kv_b_proj weight) and returns (out [T, heads, v_head],
lse [T, heads] float32, natural log).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import sys

try:
    import torch  # noqa: F401
except ImportError as e:  # the package's other parts work without torch; this one does not
    message = "mlaplan.prefill needs torch: pip install 'mlaplan[torch]' (or install torch)"
    if sys.argv[:1] == ["-m"]:  # python -m mlaplan.prefill: one line and exit 2, as for any bad setup
        print(f"mlaplan: error: {message}", file=sys.stderr)
        sys.exit(2)
    raise ImportError(message) from e

from .executor import PARTS, execute, prepare
from .inputs import PrefillInputError, PrefillInputs, check_inputs, host_page_table, inputs_from, random_inputs
from .model import MlaDims, model_dims, model_names
from .reference import one_shot
from .schedule import ENGINE_TITLES, ENGINES, POLICIES, Schedule, build_schedule, parse_engines

__all__ = [
    "ENGINES",
    "ENGINE_TITLES",
    "POLICIES",
    "PARTS",
    "MlaDims",
    "PrefillInputError",
    "PrefillInputs",
    "Schedule",
    "inputs_from",
    "model_dims",
    "model_names",
    "one_shot",
    "parse_engines",
    "prefill_attention",
    "random_inputs",
    "schedule_for",
]


def schedule_for(x: PrefillInputs, policy: str, buffer_tokens: int, max_chunks: Optional[int] = None,
                 sglang_path: str = "auto", trtllm_path: str = "auto") -> Schedule:
    """The steps `policy`'s engine runs on these inputs (ValueError where its policy refuses the batch)."""
    if buffer_tokens < 1:
        raise PrefillInputError(f"buffer_tokens: expected at least 1, got {buffer_tokens}")
    return build_schedule(policy, x.lengths, host_page_table(x), buffer_tokens, max_chunks, x.device,
                          sglang_path=sglang_path, trtllm_path=trtllm_path)


def prefill_attention(x: PrefillInputs, policy: str = "packed", buffer_tokens: int = 65536,
                      max_chunks: Optional[int] = None, sglang_path: str = "auto", trtllm_path: str = "auto",
                      fused_merge: Optional[bool] = None, attention: str = "auto", state: Optional[str] = None) -> Tuple[Any, Any]:
    """(out [T, heads, v_head] in q's dtype, lse [T, heads] float32) of the layer's prefill attention
    as `policy`'s engine computes it with a buffer of `buffer_tokens` rows (POLICIES lists the names: the engines, ENGINES, and mlaplan's own).
    attention: the kernel on CUDA: auto (FlashAttention-3 on SM90 where a build imports, else flash), fa3,
    flash (FlashAttention-2, V padded) or cudnn (cuDNN SDPA); ValueError where it cannot run here.
    state: the running output's dtype across merges: None (q's, bf16 as the engines keep it), "fp32"
    (float32 between merges, rounded to q's dtype once at the end), "bf16" or "fp16"."""
    check_inputs(x)
    s = schedule_for(x, policy, buffer_tokens, max_chunks, sglang_path, trtllm_path)
    try:
        p = prepare(x, s, fused_merge, attention, state)
    except ValueError as e:
        raise PrefillInputError(str(e)) from None
    out, lse = execute(p)
    return out.contiguous(), lse.t()
