"""Varlen attention with its log-sum-exp: on CUDA FlashAttention-3 (fa3.py: V as it is, what vLLM and
SGLang run on SM90), FlashAttention-2 through `torch.nn.attention.varlen.varlen_attn` or cuDNN SDPA;
ATen's CPU flash kernel on the CPU.

FlashAttention-2 and the CPU kernel take Q and K of the same head dimension and V padded to it, as vLLM
pads V on FA2-class kernels (`_flash_attn_varlen_diff_headdims`). Causal attention is aligned bottom-right: the last query of a
sequence sees its last key, as in FlashAttention and the engines' new-token attention. The LSE is
natural-log, float32, laid out [heads, tokens]. A sequence with no keys gets what the kernel gives
(FlashAttention: LSE +inf); the merge reads +inf as "no keys" (merge.py).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Optional, Tuple

import torch

from . import fa3
# auto: what the engines run on this GPU (resolve_kernel); flash: FlashAttention-2, V padded. Defined
# in _cli, which the commands' parsers read without torch.
from .._cli import KERNEL_TITLES, KERNELS


@dataclass
class VarlenCall:
    """One varlen attention launch: sequence i's queries are rows cu_q[i]:cu_q[i+1] of the call's
    queries, its keys rows cu_k[i]:cu_k[i+1] of the call's keys. The host copies (cu_q_host,
    cu_k_host) are for the CPU kernel and the checks; the device tensors are what the GPU kernel reads."""

    cu_q: torch.Tensor
    cu_k: torch.Tensor
    cu_q_host: list
    cu_k_host: list
    max_q: int
    max_k: int
    causal: bool

    @property
    def aligned(self) -> bool:
        """Whether top-left and bottom-right causal alignment agree: every sequence has as many keys
        as queries (or the call is not causal). Worked out once, at the first launch."""
        if not hasattr(self, "_aligned"):
            self._aligned = not self.causal or all(
                self.cu_q_host[i + 1] - self.cu_q_host[i] == self.cu_k_host[i + 1] - self.cu_k_host[i]
                for i in range(len(self.cu_q_host) - 1))
        return self._aligned

    @property
    def n_q(self) -> int:
        return self.cu_q_host[-1]

    @property
    def n_k(self) -> int:
        return self.cu_k_host[-1]


def make_call(q_lens, k_lens, causal: bool, device) -> VarlenCall:
    """cu_seqlens for sequences of q_lens queries and k_lens keys (host lists), on `device`."""
    cu_q, cu_k = [0], [0]
    for a, b in zip(q_lens, k_lens):
        assert not causal or a <= b, "a causal sequence has at least as many keys as queries"
        cu_q.append(cu_q[-1] + int(a))
        cu_k.append(cu_k[-1] + int(b))
    as_tensor = lambda v: torch.tensor(v, dtype=torch.int32, device=device)  # noqa: E731
    return VarlenCall(as_tensor(cu_q), as_tensor(cu_k), cu_q, cu_k, max(q_lens, default=0), max(k_lens, default=0), causal)


def _varlen_attn_adapter():
    """torch.nn.attention.varlen.varlen_attn, called the way this torch spells the LSE request and
    causality (torch 2.11 and later spell them differently)."""
    try:
        from torch.nn.attention import varlen
    except ImportError:
        return None
    fn = varlen.varlen_attn
    params = inspect.signature(fn).parameters

    def call(q, k, v, c: VarlenCall, scale: float, seqused_k=None):
        kwargs = {"scale": scale}
        if seqused_k is not None:
            if "seqused_k" not in params:
                raise RuntimeError("seqused_k: this torch's varlen_attn does not take it (torch 2.15 does); install "
                                   "FlashAttention-3 (pip install fa3-fwd) or a newer torch")
            kwargs["seqused_k"] = seqused_k
        if "return_aux" in params:
            kwargs["return_aux"] = varlen.AuxRequest(lse=True)
        else:
            kwargs["return_lse"] = True
        if "window_size" in params:
            kwargs["window_size"] = (-1, 0) if c.causal else (-1, -1)
        else:
            kwargs["is_causal"] = c.causal
        out, lse = fn(q, k, v, c.cu_q, c.cu_k, c.max_q, c.max_k, **kwargs)
        return out, lse

    return call


_VARLEN = None


def _cpu_attention(q, k, v, c: VarlenCall, scale: float, seqused_k=None):
    """ATen's CPU flash kernel, one sequence at a time, with an additive mask for bottom-right causal;
    seqused_k (a tensor, read here): sequence i's keys are its first seqused_k[i] only."""
    heads, width = q.shape[1], v.shape[2]
    used = None if seqused_k is None else seqused_k.tolist()
    out = q.new_zeros((c.n_q, heads, width))
    lse = torch.full((heads, c.n_q), float("inf"), dtype=torch.float32)  # no keys: +inf, as FlashAttention gives
    for i in range(len(c.cu_q_host) - 1):
        q0, q1, k0, k1 = c.cu_q_host[i], c.cu_q_host[i + 1], c.cu_k_host[i], c.cu_k_host[i + 1]
        if used is not None:
            k1 = min(k1, k0 + max(int(used[i]), 0))
        if q1 == q0 or k1 == k0:
            continue
        mask = None
        if c.causal:  # make_call keeps nq <= nk, so every query sees at least one key
            nq, nk = q1 - q0, k1 - k0
            visible = torch.ones((nq, nk), dtype=torch.bool).tril(diagonal=nk - nq)
            mask = torch.zeros((nq, nk), dtype=q.dtype).masked_fill(~visible, float("-inf"))
        o, l = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q[q0:q1].transpose(0, 1)[None], k[k0:k1].transpose(0, 1)[None], v[k0:k1].transpose(0, 1)[None],
            0.0, False, attn_mask=mask, scale=scale)
        out[q0:q1] = o[0].transpose(0, 1)
        lse[:, q0:q1] = l[0].float()
    return out, lse


def kernel_title(kernel: str) -> str:
    """What reports and cost files name the kernel: for fa3, the build that runs."""
    if kernel == "fa3":
        build, _ = fa3.find()
        return f"fa3 (FlashAttention-3, {build.title if build else 'no build'}, V unpadded)"
    return KERNEL_TITLES[kernel]


def resolve_kernel(kernel: str, device) -> Tuple[str, Optional[str]]:
    """(the kernel that runs, a note line or None) for --attention on `device`. auto: FlashAttention-3
    on SM90 where a build imports (vLLM's and SGLang's choice there), else FlashAttention-2 with a note.
    ValueError where fa3 is asked for and cannot run."""
    if kernel not in KERNELS:
        raise ValueError(f"--attention {kernel}: unknown kernel; choose {', '.join(KERNELS)}")
    device = torch.device(device)
    if device.type != "cuda":  # ATen's CPU kernel runs whatever was asked, but not in FA3's name
        if kernel == "fa3":
            raise ValueError("--attention fa3: FlashAttention-3 runs on SM90 GPUs (H100, H200); on the CPU ATen's "
                             "flash kernel runs: use --attention auto")
        return ("flash" if kernel == "auto" else kernel), None
    major = torch.cuda.get_device_capability(device)[0]
    build, why = fa3.find()
    if kernel == "fa3":
        if major != 9:
            raise ValueError(f"--attention fa3: FlashAttention-3 runs on SM90 (H100, H200); this GPU is SM{major}0: "
                             "use --attention auto or flash")
        if build is None:
            raise ValueError(f"--attention fa3: {why}")
        return "fa3", None
    if kernel != "auto":
        return kernel, None
    if major == 9 and build is not None:
        return "fa3", None
    reason = why if major == 9 else f"the engines run other kernels on SM{major}0 (docs/prefill.md)"
    return "flash", f"--attention auto: FlashAttention-2 (flash) runs: {reason}"


def _cudnn_attention(q, k, v, c: VarlenCall, scale: float):
    """cuDNN's varlen SDPA (torch.ops.aten._cudnn_attention_forward): V of its own head dimension, no
    padding. Its causal mask is aligned top-left, which is bottom-right only where every sequence has
    as many keys as queries; other causal calls go to FlashAttention-2 with V padded, as do calls
    whose Q, K or V spans 2^31 bytes or more. A sequence with
    no keys gets LSE -inf here (cuDNN's value for such rows is not documented), as vLLM PR 49294 marks
    empty context rows before merging."""
    # On the H200, cuDNN gave wrong rows for a 951K-row chunk (16 heads x 192: 2^31 elements and
    # more) and then for chunks of 540K-816K rows, whose K is under 2^31 elements but over 2^31
    # bytes: its ragged offsets are taken to be 32-bit byte offsets, and such calls go to
    # FlashAttention-2.
    if not c.aligned or max(t.numel() * t.element_size() for t in (q, k, v)) >= 2**31:
        return _VARLEN(q, k, pad_v(v, q.shape[-1]), c, scale)
    out, lse = torch.ops.aten._cudnn_attention_forward(
        q, k, v, None, c.cu_q, c.cu_k, c.max_q, c.max_k, True, 0.0, c.causal, False, scale=scale)[:2]
    lse = lse.reshape(c.n_q, q.shape[1]).t()
    empty = getattr(c, "empty_rows", None)
    if empty is None:
        rows = [r for i in range(len(c.cu_q_host) - 1) if c.cu_k_host[i + 1] == c.cu_k_host[i]
                for r in range(c.cu_q_host[i], c.cu_q_host[i + 1])]
        empty = c.empty_rows = torch.tensor(rows, dtype=torch.int64, device=q.device)
    if empty.numel():
        lse = lse.index_fill(1, empty, float("-inf"))
    return out, lse


def varlen_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, c: VarlenCall, scale: float,
                     kernel: str = "flash", seqused_k: Optional[torch.Tensor] = None):
    """(out [n_q, heads, D], lse [heads, n_q] float32) for q [n_q, heads, D], k and v [n_k, heads, D]
    (D_v = D for flash, V padded; any D_v for fa3 and cudnn). kernel: fa3, flash or cudnn (resolved:
    resolve_kernel), on CUDA. seqused_k: int32 [B] on q's device, sequence i's keys are rows cu_k[i] ..
    cu_k[i] + seqused_k[i] only, read by the kernel (FA3's and FA2's argument; cudnn has none, so FA2
    with V padded runs), so the used lengths can change on the device without the host knowing."""
    global _VARLEN
    if q.is_cuda:
        if _VARLEN is None:
            _VARLEN = _varlen_attn_adapter()
            if _VARLEN is None:
                raise RuntimeError("this torch has no torch.nn.attention.varlen.varlen_attn (torch 2.11 or later is needed on CUDA)")
        if c.n_q == 0:
            return q.new_zeros((0, q.shape[1], v.shape[2])), torch.zeros((q.shape[1], 0), device=q.device)
        if kernel == "fa3":
            build, why = fa3.find()
            if build is None:
                raise RuntimeError(f"--attention fa3: {why}")
            return fa3.attention(build, q, k, v, c.cu_q, c.cu_k, c.max_q, c.max_k, scale, c.causal, seqused_k)
        if seqused_k is not None:
            return _VARLEN(q, k, pad_v(v, q.shape[-1]), c, scale, seqused_k)
        return _cudnn_attention(q, k, v, c, scale) if kernel == "cudnn" else _VARLEN(q, k, v, c, scale)
    return _cpu_attention(q, k, v, c, scale, seqused_k)


def pad_v(v: torch.Tensor, width: int) -> torch.Tensor:
    """V zero-padded to the QK head dimension, as vLLM does before an FA2-class kernel."""
    return v if v.shape[-1] == width else torch.nn.functional.pad(v, [0, width - v.shape[-1]], value=0)



def latent_attention(q: torch.Tensor, latent: torch.Tensor, c: VarlenCall, scale: float, v_dim: int):
    """Causal (bottom-right) attention of q [n_q, heads, latent width] over the latent rows themselves,
    shared by every head: keys latent [n_k, width], values latent[:, :v_dim]. The absorbed form of MLA.
    On the CPU it is ATen's flash kernel; on CUDA torch has no kernel for a head dimension of 576
    (FlashAttention-2 stops at 256, and the memory-efficient kernel, over K broadcast to every head,
    overflows its 32-bit offsets on long contexts), so it is the plain product, softmax and product
    per sequence, in float32: exact, and slower than the MLA kernels SGLang runs there."""
    heads = q.shape[1]
    if not q.is_cuda:
        k = latent[:, None, :].expand(-1, heads, -1).contiguous()
        out, lse = _cpu_attention(q, k, k, c, scale)
        return out[..., :v_dim], lse
    return latent_attention_math(q, latent, c, scale, v_dim)


def latent_attention_math(q: torch.Tensor, latent: torch.Tensor, c: VarlenCall, scale: float, v_dim: int):
    """latent_attention written out, one sequence at a time, in float32 (any device)."""
    heads = q.shape[1]
    out = q.new_empty((c.n_q, heads, v_dim))
    lse = torch.empty((heads, c.n_q), dtype=torch.float32, device=q.device)
    for i in range(len(c.cu_q_host) - 1):
        q0, q1, k0, k1 = c.cu_q_host[i], c.cu_q_host[i + 1], c.cu_k_host[i], c.cu_k_host[i + 1]
        if q1 == q0:
            continue
        keys = latent[k0:k1].float()
        step = max(1, (1 << 28) // (heads * (k1 - k0)))  # query rows per block: scores of at most 1 GiB
        for a in range(q0, q1, step):
            b = min(q1, a + step)
            scores = torch.einsum("thd,kd->htk", q[a:b].float(), keys) * scale
            # Query a + j sits at position (k1 - k0) - (q1 - q0) + (a - q0) + j of the sequence.
            first = (k1 - k0) - (q1 - q0) + (a - q0)
            pos = torch.arange(first, first + b - a, device=q.device)[:, None]
            scores.masked_fill_(torch.arange(k1 - k0, device=q.device)[None, :] > pos, float("-inf"))
            l = torch.logsumexp(scores, dim=-1)
            out[a:b] = torch.einsum("htk,kd->thd", torch.exp(scores - l[..., None]), keys[:, :v_dim]).to(q.dtype)
            lse[:, a:b] = l
    return out, lse
