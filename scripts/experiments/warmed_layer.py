"""The layer the host experiments time: one DeepSeek-V3 TP 8 layer of a batch (cache and new tokens
per sequence, pages of 64) planned by a policy at a buffer, prepared for FlashAttention-3 with the
fused merge on CUDA, and run three times so that its first timing sees no first-call costs."""
import numpy as np
import torch

from mlaplan.calibrate.grid import scenario_batches
from mlaplan.prefill.executor import Prepared, execute, prepare
from mlaplan.prefill.inputs import host_page_table, random_inputs
from mlaplan.prefill.model import model_dims
from mlaplan.prefill.schedule import build_schedule


def warmed_layer(cache, new, policy: str, buffer: int) -> Prepared:
    x = random_inputs(cache, np.concatenate([[0], np.cumsum(new)]), 64, model_dims("deepseek-v3", 8), torch.bfloat16, "cuda", 1)
    s = build_schedule(policy, x.lengths, host_page_table(x), buffer, None, torch.device("cuda"))
    p = prepare(x, s, True, "fa3")
    for _ in range(3):
        execute(p)
    torch.cuda.synchronize()
    return p


def first_batch(path: str, index: int = 0):
    """(cache tokens, new tokens) per sequence of a scenario file's first batch (or its batch `index`)."""
    for _, i, s in scenario_batches([path]):
        if i == index:
            return list(s["cache_lengths"]), s["new"]
    raise IndexError(f"{path}: no batch {index}")
