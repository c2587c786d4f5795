"""Where cuDNN SDPA's time goes in the prefill executor (--attention cudnn): one varlen call
(DeepSeek-V3 at TP 8: 16 heads, qk 192, v 128, bf16), timed with a host clock around a synchronised
call, first at a shape never seen, then again at the same shape, then at shapes that differ only in
their cu_seqlens (the same max_q and max_k), then in max_k by one. A plan built per shape shows as
first >> repeat. Prints one line per case, milliseconds.
Usage: python3 scripts/experiments/cudnn_plan_cost.py (needs the installed package and a GPU)"""
import statistics
import time

import torch

from mlaplan.prefill.attention import make_call, varlen_attention

heads, d_qk, d_v = 16, 192, 128
dev = "cuda"


def call_ms(q_lens, k_lens):
    c = make_call(q_lens, k_lens, False, dev)
    q = torch.randn(sum(q_lens), heads, d_qk, device=dev, dtype=torch.bfloat16)
    k = torch.randn(sum(k_lens), heads, d_qk, device=dev, dtype=torch.bfloat16)
    v = torch.randn(sum(k_lens), heads, d_v, device=dev, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    varlen_attention(q, k, v, c, d_qk ** -0.5, "cudnn")
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


base_q, base_k = [512, 300, 100], [4096, 2000, 900]
first = call_ms(base_q, base_k)
repeat = [call_ms(base_q, base_k) for _ in range(5)]
same_max = [call_ms([512, 300 - i, 100 + i], [4096, 2000 - i, 900 + i]) for i in range(1, 6)]
new_max = [call_ms(base_q, [4096 + i, 2000, 900]) for i in range(1, 6)]
new_count = [call_ms(base_q + [7] * i, base_k + [64] * i) for i in range(1, 6)]
print(f"first call at a new shape: {first:.1f} ms")
print(f"the same shape again: median {statistics.median(repeat):.2f} ms")
print(f"other cu_seqlens, same max_q/max_k and totals: median {statistics.median(same_max):.2f} ms ({', '.join(f'{x:.1f}' for x in same_max)})")
print(f"max_k + 1, + 2, ...: median {statistics.median(new_max):.1f} ms ({', '.join(f'{x:.1f}' for x in new_max)})")
print(f"one more sequence each time: median {statistics.median(new_count):.1f} ms ({', '.join(f'{x:.1f}' for x in new_count)})")
