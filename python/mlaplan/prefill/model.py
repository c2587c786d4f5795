"""The attention dimensions of one MLA layer on one tensor-parallel rank."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .. import _mlaplan


@dataclass(frozen=True)
class MlaDims:
    """One rank's share of an MLA layer: `heads` local heads (num_attention_heads / tp)."""

    name: str
    heads: int
    qk_nope: int
    qk_rope: int
    v_head: int
    kv_lora: int
    layers: int = 1

    @property
    def qk_head(self) -> int:
        return self.qk_nope + self.qk_rope

    @property
    def latent(self) -> int:
        """Values per latent cache row: kv_lora (kv_c) then qk_rope (k_pe)."""
        return self.kv_lora + self.qk_rope

    @property
    def scale(self) -> float:
        """The softmax scale, 1/sqrt(qk_nope + qk_rope) (DeepSeek's YaRN mscale is left out)."""
        return self.qk_head**-0.5


def model_dims(model: str = "deepseek-v3", tp: int = 1, config: Optional[str] = None, heads: Optional[int] = None) -> MlaDims:
    """A preset (`mlaplan.prefill.model_names()`) or a Hugging Face config.json, on one of `tp` ranks;
    `heads` overrides the local head count (small CPU runs). Bad values raise ValueError naming them."""
    d = _mlaplan.model_dims(model, config or "")
    total = int(d["num_heads"])
    if tp < 1 or total % tp:
        divisors = ", ".join(str(t) for t in range(1, total + 1) if total % t == 0)
        raise ValueError(f"--tp {tp}: {d['title']} has {total} attention heads; choose a TP that divides it ({divisors})")
    local = total // tp
    if heads is not None:
        if heads < 1 or heads > total:  # more would be no rank of this model, and sizes the inputs past any memory
            raise ValueError(f"--heads {heads}: {d['title']} has {total} attention heads; give 1 to {total} local heads")
        local = heads
    return MlaDims(
        name=str(d["title"]),
        heads=local,
        qk_nope=int(d["qk_nope_head_dim"]),
        qk_rope=int(d["qk_rope_head_dim"]),
        v_head=int(d["v_head_dim"]),
        kv_lora=int(d["kv_lora_rank"]),
        layers=int(d["num_layers"]),
    )


def model_names() -> list:
    return list(_mlaplan.model_names())
