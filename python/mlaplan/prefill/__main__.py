"""python -m mlaplan.prefill SCENARIO.json --model deepseek-v3 --tp 8 --policy all

Runs one MLA layer's prefill for each batch of a scenario file as each engine does, on random inputs
of unit scale, times it and checks it against one-shot attention.

Exit status: 0 ok, 1 a policy's output missed one-shot attention by more than the tolerance, 2 bad
usage or input, 3 a device failure (out of memory included), 130 interrupted.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import errno
import signal
import sys
import threading
from typing import List, Optional

from .. import _files
from . import cpu_speed, merge
from .attention import KERNELS
from .schedule import SGLANG_PATHS, TRTLLM_PATHS
from .timing import SETTLE_MS

EPILOG = """examples:
  python -m mlaplan.prefill batch.json --model deepseek-v3 --tp 8 --policy all
  python -m mlaplan.prefill batch.json --tp 8 --buffer-tokens 8192,16384,65536,131072,262144 --format json -o runs.json
  python -m mlaplan.prefill scenarios/worked-example.json --model deepseek-v2-lite --device cpu --reps 0

policies (the engine that runs each one's plan; docs/prefill.md):
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

exit status: 0 ok, 1 a policy missed one-shot attention by more than --tolerance, 2 bad usage or input,
3 device failure (out of memory included), 130 interrupted."""


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, as the C++ tool does
        raise UsageError(message)


def _positive_list(text: str) -> List[int]:
    """A comma list as the CLI's --buffer-tokens takes it: decimal digits, no empty item."""
    items = text.split(",")
    if any(not t.strip() for t in items):
        raise argparse.ArgumentTypeError(f"{text!r}: an empty item in the list; give numbers separated by single commas, "
                                         f"e.g. 8192,65536")
    return [_count(1, 2**31 - 1)(t.strip()) for t in items]


def _count(low: int, high: int = 1_000_000):
    """A whole number in decimal digits from low to high, as the CLI reads counts (no sign, exponent,
    fraction or underscore; past the range refused, never clamped)."""
    def parse(text: str) -> int:
        if not re.fullmatch(r"[0-9]+", text):
            raise argparse.ArgumentTypeError(f"{text!r} is not written in digits; give a whole number from {low} to {high}")
        v = int(text)
        if not low <= v <= high:
            raise argparse.ArgumentTypeError(f"{text} is outside the range; give a whole number from {low} to {high}")
        return v
    return parse


def _positive(what: str, example: str):
    """A parser of a positive, finite number (nan, inf, 0 and negatives refused), named as `what`."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = -1.0
        if not 0 < v < float("inf"):
            raise argparse.ArgumentTypeError(f"{text!r}: expected a positive {what}, e.g. {example}")
        return v
    return parse


_tolerance = _positive("number", "1e-2")
_seconds = _positive("number of seconds", "170")  # --max-seconds


def parser() -> Parser:
    p = Parser(prog="python -m mlaplan.prefill", description=__doc__.split("\n\n")[1].replace("\n", " "),
               epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", metavar="SCENARIO.json", help="a scenario file: one batch or {\"scenarios\": [...]} (mlaplan gen writes them)")
    p.add_argument("--model", metavar="NAME", help="a model preset (default deepseek-v3; docs/models.md)")
    p.add_argument("--model-config", metavar="FILE", help="a Hugging Face config.json of an MLA model instead of --model")
    p.add_argument("--tp", type=_count(1, 1024), metavar="N", help="tensor-parallel ranks: local heads = num_attention_heads / TP (default 1)")
    p.add_argument("--heads", type=_count(1), metavar="N",
                   help="local heads, instead of num_attention_heads / TP (small CPU runs; at most the model's heads)")
    p.add_argument("--policy", default="all", metavar="LIST", help="all (default) or a comma list of the policies below")
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
    p.add_argument("--state", choices=("bf16", "fp16", "fp32"),
                   help="the running output's dtype across merges (default: --dtype's, bf16 on CUDA, as the engines "
                        "keep it; fp32 keeps it in float32 and rounds once at the end; bf16 on fp32 inputs emulates "
                        "the engines' rounding on the CPU)")
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


def claim_outputs(args, inputs, outputs) -> None:
    """Before any work, as the CLI does (docs/interface.md, "Output files"): every input claimed,
    then each (path, option) of `outputs`: one that is an input or another output, a folder, or one
    whose folder cannot take a file is refused. `inputs`: (path, what) pairs."""
    files = _files.outputs()
    for path, what in inputs:
        files.claim_input(path, what)
    for path, option in outputs:
        if path == "-" and option != "-o":
            raise UsageError(f"{option} -: stdout takes the report; give {option} a file name")
        if path != "-":
            files.claim_output(path, option)


def write_output(path: Optional[str], text: str) -> None:
    """The report into its claimed output (committed when the command succeeds), or stdout."""
    if path is None or path == "-":
        _files.write_stdout(text)
    else:
        _files.outputs().stage(path, text)


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
    from .reference import one_shot
    from .inputs import host_page_table
    from .executor import state_dtype
    from .schedule import ENGINE_TITLES, build_schedule, parse_engines

    try:
        engines = parse_engines(args.policy)
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
        "timing": (f"median of {args.reps} after {args.warmup} warm-up runs"
                   + (f" and {args.settle_ms} ms back to back" if device.type == "cuda" and args.settle_ms else "")
                   + (f"; eager at the host CPU's full speed (waiting up to {args.cpu_wait_s} s)"
                      if device.type == "cuda" and args.cpu_wait_s else "")
                   if args.reps else "none (--reps 0)"),
    }
    batches, failed, device_failed = [], False, False
    for s in scenarios:
        cache = s["cache_lengths"]
        offsets = s["input_row_offsets"]
        x = random_inputs(cache, offsets, int(s["page_size"]), dims, dtype, device, args.seed)
        n = x.lengths
        title = (f"{s['name']}: {n.batch_size} sequences, {int(n.cache.sum()):,} cached + {n.new_tokens:,} new tokens, "
                 f"page size {n.page_size}")
        reference = None if args.no_check else one_shot(x)
        runs = []
        for buffer in buffers_for(s):
            for engine in engines:
                run = measure_mod.Run(s["name"], buffer, engine)
                try:
                    sched = build_schedule(engine, n, host_page_table(x), buffer, args.max_chunks, device,
                                           sglang_path=args.sglang_path, trtllm_path=args.trtllm_path)
                except ValueError as e:
                    run.refused = str(e)
                    runs.append(run)
                    continue
                try:
                    measure_mod.run_one(x, sched, run, reference, tolerance, args.reps, args.warmup,
                                        not args.no_graph, args.merge == "fused" and device.type == "cuda", args.trace,
                                        args.nvtx, kernel, settle_ms=args.settle_ms, state=args.state,
                                        cpu_wait_s=args.cpu_wait_s)
                except torch.cuda.OutOfMemoryError as e:
                    run.refused = "out of memory: " + str(e).splitlines()[0]
                    device_failed = True
                    torch.cuda.empty_cache()
                failed |= run.ok is False
                runs.append(run)
        batches.append({"scenario": s["name"], "title": title, "sequences": n.batch_size,
                        "cached_tokens": int(n.cache.sum()), "new_tokens": n.new_tokens, "runs": runs})
        del x, reference
    from .report import json_report, text_report

    header["policies"] = "; ".join(f"{e} = {ENGINE_TITLES.get(e, ENGINE_TITLES.get(e.split(':')[0].split('/')[0], e))}" for e in engines)
    text = (json_report if args.format == "json" else text_report)(header, batches)
    if args.json:
        write_output(args.json, json_report(header, batches))
    write_output(args.output, text)
    return 3 if device_failed else 1 if failed else 0


def _error(message: str) -> None:
    """One line on stderr, user text escaped as the CLI escapes it; a closed or full stderr changes nothing."""
    from .. import _mlaplan

    try:
        print(f"mlaplan: error: {_mlaplan.printable(message)}", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def _on_signal(signum, frame):
    # SIGTERM stops the command as Ctrl-C does (exit 130, nothing written); while the outputs are being
    # renamed into place the command finishes instead (they are all written, or none would be).
    if not _files.outputs().renaming:
        raise KeyboardInterrupt


GRACE_S = 0.3  # after a signal, how long the command has to stop by itself before _Stopper ends it


class _Stopper:
    """Ctrl-C and SIGTERM within a second even inside one long call: Python runs its handlers only
    between the main thread's steps, and one torch operation on the CPU can run for many seconds. The
    signal also wakes this thread (signal.set_wakeup_fd); where the command has not reported its stop
    GRACE_S later, the thread removes its temporaries, writes the line and ends the process (130)."""

    def __init__(self, name: str):
        self.name, self.lock, self.reported, self.done = name, threading.Lock(), False, threading.Event()
        self.read, self.write = os.pipe()
        os.set_blocking(self.write, False)
        self.previous = signal.set_wakeup_fd(self.write, warn_on_full_buffer=False)
        threading.Thread(target=self._watch, daemon=True, name="mlaplan-stop").start()

    def report(self) -> bool:
        """True for the first caller (the command or the thread): it alone writes the line."""
        with self.lock:
            first, self.reported = not self.reported, True
            return first

    def _watch(self) -> None:
        try:
            while True:
                data = os.read(self.read, 64)
                if not data:
                    return  # closed: the command ended
                if signal.SIGINT in data or signal.SIGTERM in data:
                    break
        finally:
            os.close(self.read)
        if self.done.wait(GRACE_S) or not self.report():
            return  # it stopped by itself
        if _files.outputs().abandon():  # else it is putting its outputs in place, and ends with them
            _error(f"{self.name}: interrupted; nothing written")
            os._exit(130)

    def close(self) -> None:
        self.done.set()
        signal.set_wakeup_fd(self.previous)
        os.close(self.write)


def entry(argv: Optional[List[str]] = None, command=None, name: str = "prefill") -> int:
    """Runs `command` (default this module's main) with the package's exit statuses, one-line errors
    and output files (docs/interface.md): its outputs are committed only when it returns 0 or 1 and
    its stdout was written, else removed; Ctrl-C or SIGTERM is exit 130 and one line saying what was
    stopped. mlaplan.calibrate's commands share it (`name`: the command, as the line names it)."""
    files = _files.outputs()
    main_thread = _main_thread()
    previous = [(sig, signal.signal(sig, _on_signal)) for sig in (signal.SIGINT, signal.SIGTERM)] if main_thread else []
    stopper = _Stopper(name) if main_thread else None
    try:
        code = (command or main)(argv)
        if code in (0, 1):
            _files.flush_stdout()
            files.commit()
        return code
    except UsageError as e:
        _error(str(e))
        return getattr(e, "exit_code", 2)
    except _files.DeviceError as e:
        _error(str(e))
        return 3
    except ValueError as e:  # the scenario reader's and the inputs' messages name the file and field
        _error(str(e).splitlines()[0])
        return 2
    except KeyboardInterrupt:
        if main_thread:
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C kills at once
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            previous = []
        if stopper is None or stopper.report():
            _error(f"{name}: interrupted; nothing written")
        return 130
    except MemoryError:
        _error(f"{name}: out of host memory; give smaller batches or fewer heads")
        return 3
    except OSError as e:  # a print to stdout (| head, > /dev/full) failed before the final flush
        # A stream's error names no file; a file's does, and its readers and writers report it themselves.
        if not isinstance(e, BrokenPipeError) and not (e.filename is None and e.errno in _files._IO_FAULTS) and not _stdout_broken():
            raise
        _files._abandon_stdout()
        _error(f"stdout: writing the output failed: {_files.cause(e.errno or errno.EIO, True)}; nothing written")
        return 3
    except RuntimeError as e:
        text = str(e)
        if "CUDA" in text or "cuda" in text:
            _error(f"device failure: {text.splitlines()[0]}")
            return 3
        if "can't allocate memory" in text or "DefaultCPUAllocator" in text:
            _error(f"{name}: out of host memory ({text.splitlines()[0]}); give smaller batches or fewer heads")
            return 3
        raise
    finally:
        files.discard()
        if stopper is not None:
            stopper.close()
        for sig, handler in previous:
            signal.signal(sig, handler)


def _stdout_broken() -> bool:
    try:
        sys.stdout.flush()
        return False
    except (OSError, ValueError, AttributeError):
        return True


def exit_with(code: int) -> None:
    """Ends `python -m` with the command's status. An interrupted one (130), having written nothing,
    skips the interpreter's teardown: torch's alone takes 0.4 s, past a second on a loaded machine."""
    if code == 130:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(130)
    sys.exit(code)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":
    exit_with(entry())
