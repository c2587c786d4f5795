"""python -m mlaplan.prefill SCENARIO.json --model deepseek-v3 --tp 8 --policy all

Runs one MLA layer's prefill for each batch of a scenario file as each engine does, on random inputs
of unit scale, times it and checks it against one-shot attention.

Exit status: 0 ok, 1 a policy's output missed one-shot attention by more than the tolerance, 2 bad
usage or input, 3 a device failure (out of memory included), 130 interrupted.
"""
from __future__ import annotations

import argparse
import platform
import sys
from typing import List, Optional

from .. import _cli
# The parser pieces, outputs and exit handling live in _cli (torch-free, shared with mlaplan.calibrate);
# named here too, for the modules and scripts that take them from this one.
from .._cli import (KERNELS, SETTLE_MS, Parser, UsageError, _count, _positive, _positive_list,  # noqa: F401
                    _seconds, claim_outputs, exit_with, write_output)
from . import cpu_speed, merge
from .schedule import SGLANG_PATHS, TRTLLM_PATHS, policy_title

EPILOG = """examples:
  python -m mlaplan.prefill batch.json --model deepseek-v3 --tp 8 --policy all
  python -m mlaplan.prefill batch.json --tp 8 --buffer-tokens 8192,16384,65536,131072,262144 --format json -o runs.json
  python -m mlaplan.prefill scenarios/worked-example.json --model deepseek-v2-lite --device cpu --reps 0
  python -m mlaplan.prefill batch.json --tp 8 --policy engines,vllm+fused --buffer-tokens 65536

policies (the engine that runs each one's plan; docs/prefill.md). The engines by name, as mlaplan run takes them:
vllm (packed), sglang (even-split/sglang), trtllm (packed/trtllm), max; engines: those four; variants: the
five engines' policies below; all: those and waves.
  max                MAX: cache and new tokens streamed together, a position mask in the chunk holding new tokens
  packed             vLLM since PR 50613: each chunk's own requests attend it
  even-split         vLLM before PR 50613: every prefill attends every chunk
  even-split/sglang  SGLang: one-shot, absorbed or chunked, as its dispatch picks (--sglang-path)
  packed/trtllm      TensorRT-LLM: the whole context at once on SM90, the chunk loop on SM100 (--trtllm-path)
  waves              mlaplan's own (docs/policies.md), run by vLLM's packed loop; waves/h<heads>-s<slots> for
                     another launch shape than 16 heads on 132 SMs (e.g. waves/h128-s132 at TP 1)
  guided:COST.json   mlaplan's own: per batch, the plan the cost file prices cheapest on vLLM's packed loop, or
                     the whole context at once where it fits the buffer and is cheaper (guided/eager:COST.json:
                     by eager time)
  NAME+fused         NAME's plan in mlaplan's own loop: each step's gather, up-projection and K concat one kernel
                     (all+fused: every policy so; packed/trtllm+fused: the one-shot path so)

exit status: 0 ok, 1 a policy missed one-shot attention by more than --tolerance, 2 bad usage or input,
3 device failure (out of memory included), 130 interrupted."""


_tolerance = _positive("number", "1e-2")


def parser() -> Parser:
    p = Parser(prog="python -m mlaplan.prefill", description=__doc__.split("\n\n")[1].replace("\n", " "),
               epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", metavar="SCENARIO.json", help="a scenario file: one batch or {\"scenarios\": [...]} (mlaplan gen writes them)")
    p.add_argument("--model", metavar="NAME", help="a model preset (default deepseek-v3; docs/models.md)")
    p.add_argument("--model-config", metavar="FILE", help="a Hugging Face config.json of an MLA model instead of --model")
    p.add_argument("--tp", type=_count(1, 1024), metavar="N", help="tensor-parallel ranks: local heads = num_attention_heads / TP (default 1)")
    p.add_argument("--heads", type=_count(1), metavar="N",
                   help="local heads, instead of num_attention_heads / TP (small CPU runs; at most the model's heads)")
    p.add_argument("--policy", default="all", metavar="LIST",
                   help="all (default), engines, variants or a comma list of the policies below (vllm, sglang, trtllm, max: "
                        "the engines by name)")
    p.add_argument("--buffer-tokens", type=_positive_list, metavar="N[,N...]",
                   help="buffer sizes in rows (default: each scenario's buffer_token_size)")
    p.add_argument("--max-chunks", type=_count(1, 1 << 20), metavar="N", help="cap MAX's chunks, as MAX does (default: as many as the batch needs)")
    p.add_argument("--sglang-path", choices=SGLANG_PATHS, default="auto",
                   help="SGLang's attention path (default auto: as its dispatch picks it)")
    p.add_argument("--trtllm-path", choices=TRTLLM_PATHS, default="auto",
                   help="TensorRT-LLM's path (default auto: the GPU's; sm100 on the CPU)")
    p.add_argument("--device", default="auto", metavar="DEV", help="auto (default: cuda where there is a GPU), cuda, cuda:N or cpu")
    p.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), help="default bf16 on CUDA, fp32 on the CPU")
    p.add_argument("--reps", type=_count(0), default=10, metavar="N",
                   help="timed runs; the median is reported (default 10; 0: check only; at most 1000000)")
    p.add_argument("--warmup", type=_count(0), default=3, metavar="N", help="untimed runs first (default 3; at most 1000000)")
    p.add_argument("--settle-ms", type=_count(0), default=SETTLE_MS, metavar="MS", help="on the GPU, run each timing back to back this long first, so it sees the sustained clock (default 250; docs/cost-model.md)")
    p.add_argument("--cpu-wait-s", type=_count(0, 3600), default=cpu_speed.WAIT_S, metavar="S", help=cpu_speed.HELP)
    p.add_argument("--no-graph", action="store_true", help="leave out the CUDA-graph replay timing")
    p.add_argument("--attention", choices=KERNELS, default="auto",
                   help="the attention kernel on CUDA: auto (the default: what the engines run on this GPU, "
                        "FlashAttention-3 on SM90 where a build imports, else flash with a note), fa3 (FlashAttention-3, "
                        "V as it is: flash_attn_interface, fa3-fwd, vLLM's or SGLang's build), flash (FlashAttention-2 "
                        "through varlen_attn, V padded to the QK dimension as vLLM pads it there) or cudnn (cuDNN SDPA, "
                        "V as it is; about 65 ms of wall time per attention call on an H200, whatever the shape: "
                        "a loop of N chunks pays N x 65 ms, docs/prefill.md)")
    p.add_argument("--merge", choices=("fused", "eager"), default="fused",
                   help="the LSE merge: one fused Triton kernel (default on CUDA) or eager torch ops")
    p.add_argument("--weights", choices=("bf16", "fp8"), default="bf16",
                   help="kv_b_proj as the checkpoint holds it: bf16 (default), or e4m3 with 128 x 128 block scales (DeepSeek-V3's "
                        "FP8 checkpoint, run as the engines run it: activations quantized per token group, a block-scaled GEMM)")
    p.add_argument("--state", choices=("bf16", "fp16", "fp32"),
                   help="the running output's dtype across merges (default: --dtype's, bf16 on CUDA, as the engines "
                        "keep it; fp32 keeps it in float32 and rounds once at the end; bf16 on fp32 inputs emulates "
                        "the engines' rounding on the CPU)")
    p.add_argument("--no-roofline", action="store_true",
                   help="leave out the peak probe and each part's limit (the second table per batch): the probe, a "
                        "dense GEMM (8192^3 on the GPU) and a 1 GiB copy, each run back to back --settle-ms and timed "
                        "10 times, takes about a second on the GPU once per command (a fraction of one on the CPU)")
    p.add_argument("--no-check", action="store_true", help="leave out the comparison with one-shot attention")
    p.add_argument("--tolerance", type=_tolerance, metavar="TOL",
                   help="every element within TOL * (1 + |one-shot|) of one-shot attention (default 1e-2; 1e-4 in fp32)")
    p.add_argument("--seed", type=_count(0, 2**64 - 1), default=1, metavar="N", help="seed of the random inputs (default 1)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (atomically; - is stdout) instead of stdout")
    p.add_argument("--json", metavar="FILE", help="also write the JSON report to FILE (atomically)")
    p.add_argument("--nvtx", action="store_true",
                   help="NVTX ranges in the timed runs too (for Nsight Systems; the profiled run always has them)")
    p.add_argument("--trace", metavar="FILE.json",
                   help="a Chrome/Perfetto trace of the profiled run (one scenario, buffer and policy)")
    return p


def _device(torch, name: str):
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        d = torch.device(name)
    except RuntimeError:
        raise UsageError(f"--device {name}: unknown device; choose auto, cuda, cuda:N or cpu")
    if d.type not in ("cuda", "cpu"):
        raise UsageError(f"--device {name}: choose auto, cuda, cuda:N or cpu")
    if d.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(f"--device {name}: torch sees no CUDA GPU here; use --device cpu")
        if d.index is not None and d.index >= torch.cuda.device_count():
            raise UsageError(f"--device {name}: there are {torch.cuda.device_count()} CUDA devices")
    return d


def _model_choice(args) -> None:
    """--model and --model-config name the model, --tp and --heads its local heads: one of each pair."""
    if args.model is not None and args.model_config is not None:
        raise UsageError("--model-config: give either --model or --model-config, not both")
    if args.tp is not None and args.heads is not None:
        raise UsageError("--heads: it sets the local heads that --tp derives; give either --tp or --heads, not both")


def attention_kernel(name: str, device) -> str:
    """The kernel --attention NAME runs on `device` (attention.resolve_kernel), its note on stderr;
    UsageError where it cannot run. The prefill, calibrate and validate commands share it."""
    from .attention import resolve_kernel

    try:
        kernel, note = resolve_kernel(name, device)
    except ValueError as e:
        raise UsageError(str(e))
    if note:
        print(f"mlaplan: note: {note}", file=sys.stderr)
    return kernel


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    _model_choice(args)
    if args.trace and args.reps == 0:
        raise UsageError("--trace: it records the profiled run of the timing, and --reps 0 times nothing; give --reps 1 "
                         "or more, or drop --trace")
    from .schedule import policy_files

    try:  # guided:FILE's file is an input too: no output may write over it
        guides = [(path, f"the cost file of --policy guided:{path}") for path in policy_files(args.policy)]
    except ValueError as e:
        raise UsageError(str(e))
    claim_outputs(args, [(args.scenario, "the scenario file"), (args.model_config, "the --model-config file")] + guides,
                  [(args.output, "-o"), (args.json, "--json"), (args.trace, "--trace")])
    import torch

    from .. import _mlaplan
    from . import measure as measure_mod
    from .inputs import random_inputs
    from .model import model_dims
    from .reference import loop_references
    from .inputs import host_page_table
    from .executor import state_dtype
    from .schedule import build_schedule, parse_engines, split_loop

    try:
        engines = parse_engines(args.policy, loops=True)
    except ValueError as e:
        raise UsageError(str(e))
    try:
        dims = model_dims(args.model or "deepseek-v3", args.tp or 1, args.model_config, args.heads)
    except ValueError as e:
        msg = str(e)
        raise UsageError(msg if msg.startswith("--") else f"--model-config: {msg}" if args.model_config else f"--model: {msg}")
    scenarios = _mlaplan.read_scenarios(args.scenario)
    if not scenarios:
        raise UsageError(f"{args.scenario}: holds no scenario (an empty \"scenarios\" list); add a scenario object to run")
    device = _device(torch, args.device)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[
        args.dtype or ("bf16" if device.type == "cuda" else "fp32")]
    tolerance = args.tolerance or (1e-4 if dtype == torch.float32 else 1e-2)
    buffers_for = lambda s: args.buffer_tokens or [int(s["buffer_token_size"])]  # noqa: E731
    if args.trace and (len(scenarios) != 1 or len(engines) != 1 or len(buffers_for(scenarios[0])) != 1):
        raise UsageError("--trace: trace one run: give one policy and one buffer size, for a file of one scenario")
    from .attention import kernel_title

    kernel = attention_kernel(args.attention, device)
    if args.merge == "fused" and device.type == "cuda" and merge.triton is None:
        raise UsageError("--merge fused: needs Triton on CUDA (pip install triton), or use --merge eager")

    header = {
        "tool": "mlaplan.prefill",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({platform.machine()})",
        "torch": torch.__version__,
        "model": f"{dims.name}, {dims.heads} local heads (TP {args.tp or 1})" if args.heads is None else f"{dims.name}, {dims.heads} local heads",
        "dtype": str(dtype).replace("torch.", ""),
        "attention": (kernel_title(kernel) if device.type == "cuda" else "ATen's CPU flash kernel"),
        "merge": args.merge if device.type == "cuda" else "eager",
        "state": str(state_dtype(args.state, dtype)).replace("torch.", ""),
        **({"weights": "kv_b_proj in FP8 (e4m3, 128 x 128 block scales), activations quantized per token group"}
           if args.weights == "fp8" else {}),
        "timing": (f"median of {args.reps} after {args.warmup} warm-up runs"
                   + (f" and {args.settle_ms} ms back to back" if device.type == "cuda" and args.settle_ms else "")
                   + (f"; eager at the host CPU's full speed (waiting up to {args.cpu_wait_s} s)"
                      if device.type == "cuda" and args.cpu_wait_s else "")
                   if args.reps else "none (--reps 0)"),
    }
    peak = None
    if args.reps and not args.no_roofline:  # once, before the runs: what this device does in this run
        from .roofline import peak as measure_peak

        peak = measure_peak(device, dtype, args.settle_ms if device.type == "cuda" else 0.0)
        header["peak"] = peak.as_dict()
    batches, failed, device_failed = [], False, False
    for s in scenarios:
        cache = s["cache_lengths"]
        offsets = s["input_row_offsets"]
        x = random_inputs(cache, offsets, int(s["page_size"]), dims, dtype, device, args.seed)
        n = x.lengths
        title = (f"{s['name']}: {n.batch_size} sequences, {int(n.cache.sum()):,} cached + {n.new_tokens:,} new tokens, "
                 f"page size {n.page_size}")
        references = None if args.no_check else loop_references(x, args.weights)
        runs = []
        for buffer in buffers_for(s):
            for engine in engines:
                run = measure_mod.Run(s["name"], buffer, engine)
                policy, up_projection = split_loop(engine)
                try:
                    sched = build_schedule(policy, n, host_page_table(x), buffer, args.max_chunks, device,
                                           sglang_path=args.sglang_path, trtllm_path=args.trtllm_path)
                except ValueError as e:
                    run.refused = str(e)
                    runs.append(run)
                    continue
                try:
                    reference = None if references is None else references[up_projection]
                    measure_mod.run_one(x, sched, run, reference, tolerance, args.reps, args.warmup,
                                        not args.no_graph, args.merge == "fused" and device.type == "cuda", args.trace,
                                        args.nvtx, kernel, settle_ms=args.settle_ms, state=args.state,
                                        cpu_wait_s=args.cpu_wait_s, up_projection=up_projection, peak=peak,
                                        weights=args.weights)
                except ValueError as e:  # what the executor cannot run so (fp8 weights on SGLang's absorbed path)
                    run.refused = str(e)
                except torch.cuda.OutOfMemoryError as e:
                    run.refused = "out of memory: " + str(e).splitlines()[0]
                    device_failed = True
                    torch.cuda.empty_cache()
                failed |= run.ok is False
                runs.append(run)
        batches.append({"scenario": s["name"], "title": title, "sequences": n.batch_size,
                        "cached_tokens": int(n.cache.sum()), "new_tokens": n.new_tokens, "runs": runs})
        del x, references
    from .report import json_report, text_report

    header["policies"] = "; ".join(f"{e} = {policy_title(e)}" for e in engines)
    text = (json_report if args.format == "json" else text_report)(header, batches)
    if args.json:
        write_output(args.json, json_report(header, batches))
    write_output(args.output, text)
    return 3 if device_failed else 1 if failed else 0


def entry(argv: Optional[List[str]] = None, command=None, name: str = "prefill") -> int:
    """Runs `command` (default this module's main) as _cli.entry does: the package's exit statuses,
    one-line errors, output files and signals (docs/interface.md)."""
    return _cli.entry(argv, command or main, name)


if __name__ == "__main__":
    exit_with(entry())
