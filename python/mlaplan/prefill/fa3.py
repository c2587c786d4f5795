"""FlashAttention-3's varlen forward, from whichever build imports: FlashAttention's own Hopper build
(`flash_attn_interface`), the PyPI wheel `fa3-fwd` (`fa3_fwd_interface`), or an engine's own (vLLM's
`vllm.vllm_flash_attn` at FA version 3, `sgl_kernel.flash_attn`). It is what vLLM and SGLang run on
SM90 (docs/prefill.md): Q and K of head size 192, V of 128 taken as it is, no padding.

Each build is called with its own spelling of the LSE request and returns (out [n_q, heads, D_v],
lse [heads, n_q] float32). A sequence with no keys gets LSE +inf and output 0 (measured on the H200
with fa3-fwd 0.0.3); the merge reads +inf as "no keys" (merge.py).
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple


@dataclass(frozen=True)
class Fa3Build:
    module: str       # the module that imported: "fa3_fwd_interface"
    title: str        # what the reports name: "fa3-fwd 0.0.3"
    call: Callable    # (q, k, v, cu_q, cu_k, max_q, max_k, scale, causal[, seqused_k=]) -> (out, lse)


def _version(dist: str) -> str:
    try:
        from importlib.metadata import version
        return " " + version(dist)
    except Exception:  # a build from a checkout has no distribution metadata
        return ""


def _flash_attn_interface():
    fn = importlib.import_module("flash_attn_interface").flash_attn_varlen_func

    def call(q, k, v, cu_q, cu_k, max_q, max_k, scale, causal, **seqused):
        return fn(q, k, v, cu_q, cu_k, max_q, max_k, softmax_scale=scale, causal=causal, return_attn_probs=True,
                  **seqused)[:2]
    return Fa3Build("flash_attn_interface", "FlashAttention-3 (flash_attn_interface" + _version("flash_attn_3") + ")", call)


def _fa3_fwd():
    # fa3-fwd 0.0.3's interface imports flash_attn_config, but the wheel ships fa3_fwd_config.
    config = importlib.import_module("fa3_fwd_config")
    sys.modules.setdefault("flash_attn_config", config)
    fn = importlib.import_module("fa3_fwd_interface").flash_attn_varlen_func

    def call(q, k, v, cu_q, cu_k, max_q, max_k, scale, causal, **seqused):
        return fn(q, k, v, cu_q, cu_k, max_q, max_k, softmax_scale=scale, causal=causal, return_attn_probs=True,
                  **seqused)[:2]
    return Fa3Build("fa3_fwd_interface", "fa3-fwd" + _version("fa3-fwd"), call)


def _vllm():
    mod = importlib.import_module("vllm.vllm_flash_attn")
    if hasattr(mod, "is_fa_version_supported") and not mod.is_fa_version_supported(3):
        raise ImportError("vllm_flash_attn has no FA version 3 on this GPU")
    fn = mod.flash_attn_varlen_func

    def call(q, k, v, cu_q, cu_k, max_q, max_k, scale, causal, **seqused):
        return fn(q, k, v, max_seqlen_q=max_q, cu_seqlens_q=cu_q, max_seqlen_k=max_k, cu_seqlens_k=cu_k,
                  softmax_scale=scale, causal=causal, return_softmax_lse=True, fa_version=3, **seqused)[:2]
    return Fa3Build("vllm.vllm_flash_attn", "vLLM's vllm_flash_attn at FA version 3" + _version("vllm"), call)


def _sgl_kernel():
    fn = importlib.import_module("sgl_kernel.flash_attn").flash_attn_varlen_func

    def call(q, k, v, cu_q, cu_k, max_q, max_k, scale, causal, **seqused):
        return fn(q, k, v, cu_q, cu_k, max_q, max_k, softmax_scale=scale, causal=causal, return_softmax_lse=True,
                  **seqused)[:2]
    return Fa3Build("sgl_kernel.flash_attn", "SGLang's sgl_kernel flash attention" + _version("sgl-kernel"), call)


# In this order: FlashAttention's own build first, then the wheel, then the engines'.
CANDIDATES = (_flash_attn_interface, _fa3_fwd, _vllm, _sgl_kernel)
_found: Optional[Tuple[Optional[Fa3Build], str]] = None


def find() -> Tuple[Optional[Fa3Build], str]:
    """(the first build that imports, or None; why none did). Looked for once per process."""
    global _found
    if _found is None:
        why: List[str] = []
        for make in CANDIDATES:
            try:
                _found = (make(), "")
                break
            except Exception as e:  # an import error, or a build that cannot load its kernels here
                why.append(f"{make.__name__.strip('_')}: {type(e).__name__}")
        else:
            _found = (None, "no FlashAttention-3 build imports (" + ", ".join(why) + "); pip install fa3-fwd")
    return _found


def reset() -> None:
    """Look again at the next find() (the tests install and remove fake builds)."""
    global _found
    _found = None


def attention(build: Fa3Build, q, k, v, cu_q, cu_k, max_q: int, max_k: int, scale: float, causal: bool,
              seqused_k=None):
    """(out, lse [heads, n_q] float32): the build's varlen forward, its LSE in the executor's layout.
    seqused_k (int32 [B], on the device): sequence i's keys are rows cu_k[i] .. cu_k[i] + seqused_k[i] only
    (every build takes it; left out of the call where None, as before)."""
    seqused = {} if seqused_k is None else {"seqused_k": seqused_k}
    out, lse = build.call(q, k, v, cu_q, cu_k, max_q, max_k, scale, causal, **seqused)
    if lse.dim() == 2 and lse.shape[0] == q.shape[0] and lse.shape[1] == q.shape[1] and q.shape[0] != q.shape[1]:
        lse = lse.t()  # a build that lays it out [tokens, heads]
    return out, lse.float()
