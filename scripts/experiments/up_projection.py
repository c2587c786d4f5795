"""Where the up-projection's time goes on a GPU: kv_b_proj's GEMM on the gathered latent rows (a
strided view, as engines pass it, and contiguous), the K concat and the V padding, for one chunk of
ROWS rows of DeepSeek-V3 at TP 8 (16 heads), bf16. CUDA events, median of 20 after 5 warm-ups, timed
as the prefill executor times (mlaplan.prefill.timing, so the installed package must be importable).
Usage: python3 scripts/experiments/up_projection.py [ROWS]"""
import statistics
import sys

import torch

from mlaplan.prefill.timing import time_eager

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
heads, nope, rope, v_dim, lora = 16, 128, 64, 128, 512
g = torch.Generator(device="cuda").manual_seed(0)
latent = torch.randn(rows, lora + rope, device="cuda", generator=g).bfloat16()
w = (torch.rand(heads * (nope + v_dim), lora, device="cuda", generator=g) * 2 - 1).mul(lora**-0.5).bfloat16()
dense = latent[:, :lora].contiguous()


def time_ms(fn):
    return statistics.median(time_eager(fn, cuda=True, reps=20, warmup=5))


kv = torch.nn.functional.linear(latent[:, :lora], w).view(rows, heads, nope + v_dim)
k_nope, v = kv.split([nope, v_dim], dim=-1)
cases = {
    "GEMM, strided latent view": lambda: torch.nn.functional.linear(latent[:, :lora], w),
    "GEMM, contiguous latent": lambda: torch.nn.functional.linear(dense, w),
    "K concat (k_nope | k_pe)": lambda: torch.cat((k_nope, latent[:, None, lora:].expand(-1, heads, -1)), dim=-1),
    "V padded to 192": lambda: torch.nn.functional.pad(v, [0, nope + rope - v_dim]),
}
print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {rows:,} rows, {heads} heads, bf16")
print("| step | ms | ns per row |\n| --- | ---: | ---: |")
for name, fn in cases.items():
    ms = time_ms(fn)
    extra = f" ({2 * rows * lora * heads * (nope + v_dim) / ms / 1e9:.0f} TFLOP/s)" if name.startswith("GEMM") else ""
    print(f"| {name}{extra} | {ms:.3f} | {ms * 1e6 / rows:.1f} |")
