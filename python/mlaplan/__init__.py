"""mlaplan: the chunk plan of MLA prefill (MAX's mla_prefill_plan), from Python.

    import numpy as np, mlaplan
    plan = mlaplan.plan(np.array([500, 0, 100]), np.array([0, 9, 209, 229]),
                        page_size=128, buffer_token_size=512, max_chunks=4)
    plan.buffer_lengths            # array([512, 384,  -1,  -1], dtype=int32)

On CUDA arrays (torch or CuPy, int32 or uint32) the plan is enqueued on the caller's current stream
(or `stream=`), with no synchronisation; with `out=` and a `Workspace` there is no allocation either,
so the call can be captured in a CUDA graph. The status then comes back as a device array of 4 int32:
[code, min_max_chunks, padded_tokens low 32 bits, high 32 bits]; code 0 is a plan, 1 infeasible (see
min_max_chunks), 2 a padded total past 32 bits, 3 decreasing offsets; for any code but 0 every
buffer_lengths entry is -1. `decode_status` reads it on the host.

The explorer is here too: `plan_policy` plans under an engine's policy (packed, even-split, ...) and
`sweep` evaluates a workload preset (or a trace replayed) over buffer sizes and policies, as
`mlaplan sweep` does; `replay` replays a request trace through a prefix cache.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from . import _args, _mlaplan, _progress
from ._mlaplan import STATUS_BAD_OFFSETS, STATUS_INFEASIBLE, STATUS_OK, STATUS_OVERFLOW, InfeasibleBatch

__all__ = [
    "Plan",
    "PolicyPlan",
    "InfeasibleBatch",
    "Workspace",
    "plan",
    "bind",
    "plan_policy",
    "sweep",
    "replay",
    "cost_file",
    "cost_features",
    "cost_launches",
    "merges_per_query",
    "cost_terms",
    "engine_path",
    "workspace_bytes",
    "decode_status",
    "STATUS_OK",
    "STATUS_INFEASIBLE",
    "STATUS_OVERFLOW",
    "STATUS_BAD_OFFSETS",
    "cuda_available",
    "workload_names",
    "__version__",
]
__version__: str = _mlaplan.__version__


class Plan(NamedTuple):
    """The three tables, row-major by chunk (semantics.md); on CUDA, also the status array."""

    buffer_row_offsets: Any  # (max_chunks, B + 1)
    cache_offsets: Any  # (max_chunks, B)
    buffer_lengths: Any  # (max_chunks,), -1 for an unused chunk
    status: Any = None  # CUDA only: 4 int32 on the device


class PolicyPlan(NamedTuple):
    tables: Plan
    chunks_used: int
    rows_streamed: int
    tokens_streamed: int


def cuda_available() -> bool:
    """True when this build of the module has the GPU planner."""
    return bool(_mlaplan.cuda)


if _mlaplan.cuda:
    Workspace = _mlaplan.Workspace

    def workspace_bytes(max_batch_size: int, max_chunks: int) -> int:
        return _mlaplan.workspace_bytes(max_batch_size, max_chunks)

else:

    class Workspace:  # type: ignore[no-redef]
        """Planner workspace on one GPU (this build has no CUDA: constructing one raises)."""

        def __init__(self, max_batch_size: int, max_chunks: int, device: int = 0) -> None:
            raise RuntimeError("mlaplan was built without CUDA: plan on NumPy arrays, or rebuild with a CUDA toolkit")

    def workspace_bytes(max_batch_size: int, max_chunks: int) -> int:
        raise RuntimeError("mlaplan was built without CUDA")


def _host_u32(name: str, values: Any) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got {array.ndim} dimensions")
    if array.size and array.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integers, got {array.dtype}")
    if array.size and (array.min() < 0 or array.max() > 0xFFFFFFFF):
        raise ValueError(f"{name}: values must lie in 0 .. 2^32 - 1")
    return np.ascontiguousarray(array, dtype=np.uint32)


def _batch_args(cache_lengths, input_row_offsets, policy, **numbers) -> tuple:
    """The batch and policy of the cost and path calls, checked as the other calls check theirs: each
    of `numbers` (a keyword and its value) a whole number in 0 .. 2^32 - 1, or a bool where the keyword
    is a flag (True/False for unbounded and pad_v), so a wrong type is a TypeError naming its keyword
    (not nanobind's signature); the C++ layer checks what each value means."""
    if not isinstance(policy, str):
        raise TypeError(f"policy: expected a policy's name, got {type(policy).__name__} {policy!r}")
    checked = []
    for name, value in numbers.items():
        if name in ("unbounded", "pad_v"):
            if not isinstance(value, bool):
                raise TypeError(f"{name}: expected True or False, got {type(value).__name__} {value!r}")
            checked.append(value)
        elif name == "scheduler":
            checked.append(_args.name_of(name, value, ("grid", "sorted", "sectioned")))
        else:
            checked.append(_args.whole(name, value, 0, 0xFFFFFFFF))
    return (_host_u32("cache_lengths", cache_lengths), _host_u32("input_row_offsets", input_row_offsets), *checked)


def _cuda_device(x: Any) -> Optional[int]:
    """The CUDA device of a DLPack array (torch, CuPy), or None for host arrays."""
    get = getattr(x, "__dlpack_device__", None)
    if get is None:
        return None
    kind, index = get()
    return int(index) if int(kind) == 2 else None  # kDLCUDA; pinned host memory (kDLCUDAHost) is host memory


def _current_stream(x: Any) -> int:
    module = type(x).__module__
    if module.startswith("torch"):
        import torch

        return torch.cuda.current_stream(x.device).cuda_stream
    if module.startswith("cupy"):
        import cupy

        return cupy.cuda.get_current_stream().ptr
    return 0  # the legacy default stream


def _stream_handle(stream: Any) -> int:
    if isinstance(stream, int):
        return stream
    for attribute in ("cuda_stream", "ptr", "handle"):  # torch.cuda.Stream, cupy Stream, cuda-python
        if hasattr(stream, attribute):
            return int(getattr(stream, attribute))
    raise TypeError("stream: expected an int handle, a torch.cuda.Stream or a cupy.cuda.Stream")


def _empty_like(x: Any, shape: tuple, signed: bool) -> Any:
    module = type(x).__module__
    if module.startswith("torch"):
        import torch

        return torch.empty(shape, dtype=torch.int32 if signed else x.dtype, device=x.device)
    import cupy

    return cupy.empty(shape, dtype=cupy.int32 if signed else x.dtype)


def _device_args(
    cache_lengths: Any, input_row_offsets: Any, max_chunks: int, device: int, out: Any, workspace: Any
) -> tuple:
    """The device path's arrays, checked once for plan and bind: input_row_offsets on the device of
    cache_lengths, and the caller's out (four arrays) and workspace, or new ones in its framework there."""
    if _cuda_device(input_row_offsets) != device:
        raise ValueError(f"input_row_offsets: expected a CUDA array on device {device}, like cache_lengths")
    b = int(cache_lengths.shape[0])
    if workspace is None:
        workspace = _mlaplan.Workspace(b, max_chunks, device)
    if out is None:
        out = (
            _empty_like(cache_lengths, (max_chunks, b + 1), False),
            _empty_like(cache_lengths, (max_chunks, b), False),
            _empty_like(cache_lengths, (max_chunks,), True),
            _empty_like(cache_lengths, (4,), True),
        )
    if len(out) != 4:
        raise ValueError("out: expected (buffer_row_offsets, cache_offsets, buffer_lengths, status)")
    return out, workspace


def plan(
    cache_lengths: Any,
    input_row_offsets: Any,
    page_size: int,
    buffer_token_size: int,
    max_chunks: int,
    out: Optional[Sequence[Any]] = None,
    workspace: Optional[Any] = None,
    stream: Any = None,
    kernel: str = "fast",
    reference: bool = False,
) -> Plan:
    """Plans one batch: B cache lengths and B + 1 non-decreasing input row offsets.

    Host arrays (NumPy, lists): planned on the CPU; returns NumPy tables; an infeasible batch raises
    InfeasibleBatch (a ValueError with .min_max_chunks), other bad input ValueError naming the argument.
    `reference=True` uses the plain transliteration of the seed's loop instead of the closed form.

    CUDA arrays: planned on the GPU on `stream` (default: the current stream of the arrays' framework),
    asynchronously. `out=(buffer_row_offsets, cache_offsets, buffer_lengths, status)` gives the output
    arrays ((M, B + 1), (M, B), (M,), (4,); int32 or uint32) and `workspace` a Workspace sized for
    the batch; either left out is allocated here (then the call is not graph-capturable). `kernel`:
    "fast" or "max-port" (the port of MAX's kernel; "seed", its name before 2026-12-01, is accepted).
    """
    device = _cuda_device(cache_lengths)
    if device is None:
        if out is not None or workspace is not None:
            raise ValueError("out, workspace: for CUDA arrays only; host arrays are planned on the CPU")
        tables = _mlaplan.plan_host(
            _host_u32("cache_lengths", cache_lengths),
            _host_u32("input_row_offsets", input_row_offsets),
            page_size,
            buffer_token_size,
            max_chunks,
            reference,
        )
        return Plan(*tables)
    if not _mlaplan.cuda:
        raise RuntimeError("cache_lengths is a CUDA array but mlaplan was built without CUDA")
    out, workspace = _device_args(cache_lengths, input_row_offsets, max_chunks, device, out, workspace)
    handle = _current_stream(cache_lengths) if stream is None else _stream_handle(stream)
    _mlaplan.plan_device(
        cache_lengths, input_row_offsets, page_size, buffer_token_size, max_chunks, out[0], out[1], out[2], out[3],
        workspace, handle, kernel,
    )
    return Plan(*out)


def bind(
    cache_lengths: Any,
    input_row_offsets: Any,
    page_size: int,
    buffer_token_size: int,
    max_chunks: int,
    out: Optional[Sequence[Any]] = None,
    workspace: Optional[Any] = None,
    kernel: str = "fast",
) -> Any:
    """The fast path for an engine that keeps its batch in the same CUDA arrays step after step:
    checks the arrays once and returns a callable; `bound(stream_handle)` then enqueues the plan with
    no checks, allocation or synchronisation (about a microsecond of host time over C++). Write the
    next batch into the same arrays and call again; rebind when the batch size changes. The output
    arrays are `bound.tables` (a Plan, status included)."""
    device = _cuda_device(cache_lengths)
    if device is None or not _mlaplan.cuda:
        raise ValueError("cache_lengths: bind takes CUDA arrays (torch or CuPy) and a CUDA build; use plan for host arrays")
    out, workspace = _device_args(cache_lengths, input_row_offsets, max_chunks, device, out, workspace)
    bound = _mlaplan.BoundPlan(cache_lengths, input_row_offsets, page_size, buffer_token_size, max_chunks, *out,
                               workspace, kernel)
    bound.tables = Plan(*out)
    return bound


def decode_status(status: Any) -> dict:
    """The status array (4 int32, on the host or copied there) as {code, min_max_chunks, padded_tokens}."""
    values = np.asarray(status.get() if hasattr(status, "get") else (status.cpu() if hasattr(status, "cpu") else status))
    words = values.astype(np.int64) & 0xFFFFFFFF
    return {
        "code": int(np.int32(words[0])),
        "min_max_chunks": int(words[1]),
        "padded_tokens": int(words[2]) | (int(words[3]) << 32),
    }


def plan_policy(
    cache_lengths: Any,
    input_row_offsets: Any,
    page_size: int,
    buffer_token_size: int,
    max_chunks: int,
    policy: str = "packed",
) -> PolicyPlan:
    """Plans a batch under an engine's chunking policy (docs/policies.md): max, packed, packed/trtllm,
    even-split/vllm or even-split/sglang. The tables may hold more than max_chunks rows for policies
    that loop as often as needed. A refusal raises ValueError (InfeasibleBatch for max)."""
    tables, chunks, rows, tokens = _mlaplan.plan_policy(
        _host_u32("cache_lengths", cache_lengths),
        _host_u32("input_row_offsets", input_row_offsets),
        page_size,
        buffer_token_size,
        max_chunks,
        policy,
    )
    return PolicyPlan(Plan(*tables), chunks, rows, tokens)


def sweep(
    workload: str = "coding-agent",
    buffer_tokens: Sequence[int] = (4096, 16384, 65536, 262144),
    max_chunks: Sequence[int] = (16,),
    policies: str = "all",
    batches: int = 10000,
    seed: Optional[int] = None,
    page_size: int = 128,
    token_budget: int = 8192,
    max_sequences: int = 256,
    replay: Optional[str] = None,
    replay_format: str = "auto",
    replay_block_size: int = 512,
    prefix_cache_tokens: int = 0,
    step_ms: float = 0.0,
    cost=None,
    memory_limit=_args.MEMORY_LIMIT,
    timing: str = "graph",
    progress: Any = None,
    gpu: Optional[str] = None,
    model: Optional[str] = None,
    tp: Optional[int] = None,
    attention: Optional[str] = None,
    max_model_len: Optional[int] = None,
    loop: Optional[str] = None,
) -> list:
    """Iterations per batch, refusals, padding and fill of a workload preset's batches over buffer
    sizes, chunk counts and policies, one dict per setting, as `mlaplan sweep --format json` rows.
    With replay= a trace (Mooncake JSONL or Azure CSV) replayed through a prefix cache stands for the
    preset, as `sweep --replay` does; step_ms > 0 takes its arrivals (`--arrivals --step-ms`).
    cost= a cost file (or a list, one per model and TP) adds the predicted times, as `sweep --cost`
    without --model: per row its model, tp, layers, layer_ms_* and step_ms_* (mean, p50, p90, p99,
    max), iteration_overhead_share and over_lower_bound (docs/cost-model.md). timing="eager" prices
    each step with the file's host section too, as `sweep --timing eager` (the host's dispatch by the
    two clocks), and adds host_bound_share; "graph", the default, the kernels alone. gpu= ("h100",
    "h200" or the name nvidia-smi prints) prices for that GPU, as `sweep --gpu`: with cost= each file must
    have been calibrated on it (ValueError naming both), without it the shipped file for model= and tp=
    (and attention=, "fa3" by default, or "fa2"; loop=, "engine" by default, or "fused": mlaplan's own loop,
    as `--loop`) is taken, as cost_file finds it.

    max_model_len drops the requests longer than it (cached + new), as `--max-model-len` (0: none);
    left out with model=, the model's context is taken, as `sweep --model` does. The result is a list
    of the rows with .max_model_len (0: none) and .dropped (the requests dropped) set.

    Every value is checked as the CLI checks its option (ValueError naming the keyword); the batches,
    their counts and the planner's tables must fit memory_limit (bytes, or a size such as "4GiB";
    default 2 GiB, the CLI's --memory-limit), checked before forming and as batches form. seed draws
    the preset's requests (default 1); a replayed trace takes none. Ctrl-C stops the sweep
    (KeyboardInterrupt), also while a file it reads (a FIFO) waits for its writer.

    progress: None (the default) prints nothing; True prints a line on stderr every 2 s once the sweep
    has run that long ("mlaplan: sweep: 3 of 12 settings done, 8 s", in place on a terminal);
    a function is called as progress(done, total) on the calling thread whenever a setting finishes,
    at least once a second, and once at the end with every setting done; an exception it raises stops
    the sweep and is raised by it."""
    a = _args
    if replay is None:
        workload = a.name_of("workload", workload, workload_names())
        seed = 1 if seed is None else seed
    else:
        replay = a.path("replay", replay)
        if seed is not None:
            raise ValueError("seed: it draws a workload preset's requests, and a replayed trace uses none; leave seed "
                             "out with replay=")
        seed = 1
    if cost is None:
        costs = []
    elif isinstance(cost, (str, bytes, os.PathLike)):
        costs = [a.path("cost", cost)]
    elif isinstance(cost, (list, tuple)):
        costs = [a.path(f"cost[{i}]", c) for i, c in enumerate(cost)]
    else:
        raise TypeError(f"cost: expected a cost file's path or a list of them, got {type(cost).__name__} {cost!r}")
    costs = _gpu_costs(gpu, costs, model, tp, attention, loop)
    for c in costs:  # as the CLI says under the file's name (--gpu) or warns (--cost)
        missed = _mlaplan.read_cost_model(c)["heldout_missed"]
        if missed:
            warnings.warn(f"{c}: its held-out check missed the targets on {', '.join(missed)}", UserWarning, stacklevel=2)
    block_size = a.whole("replay_block_size", replay_block_size, 1, 1 << 30)
    checked = dict(
        workload=workload, batches=a.whole("batches", batches, 1, 100_000_000), seed=a.whole("seed", seed, 0, 2**64 - 1),
        page_size=a.whole("page_size", page_size, 1, 1 << 30),
        token_budget=a.whole("token_budget", token_budget, 1, 1 << 30),
        max_sequences=a.whole("max_sequences", max_sequences, 1, 1 << 24),
        buffer_tokens=a.whole_list("buffer_tokens", buffer_tokens, 1, 0x7FFFFFFF),
        max_chunks=a.whole_list("max_chunks", max_chunks, 1, 1 << 20), policies=a.policies("policies", policies),
        replay=replay or "", replay_format=a.name_of("replay_format", replay_format, ("auto", "mooncake", "azure")),
        replay_block_size=block_size,
        prefix_cache_tokens=a.prefix_cache_tokens("prefix_cache_tokens", prefix_cache_tokens, block_size),
        step_ms=a.duration_ms("step_ms", step_ms), costs=costs, memory_limit=a.memory_limit(memory_limit),
        timing=a.name_of("timing", timing, ("graph", "eager")))
    # The model's context where max_model_len is not given (model= is the preset's name, checked by
    # cost_file above), as the CLI's sweep --model.
    if max_model_len is None:
        checked["max_model_len"] = 0
        checked["context_model"] = "" if model is None else a.name_of("model", model, _mlaplan.model_names())
    else:
        checked["max_model_len"] = a.whole("max_model_len", max_model_len, 0, 1 << 32)
    if replay is None:
        for name in ("replay_format", "replay_block_size", "prefix_cache_tokens", "step_ms"):
            if checked[name] != _REPLAY_DEFAULTS[name]:
                raise ValueError(f"{name}: it sets how a trace is replayed; add replay=PATH or leave {name} out")
    tick = _progress.ticker(progress, "sweep")
    try:
        stats = {}
        rows = SweepRows(_mlaplan.sweep(**checked, progress=tick, stats=stats))
        rows.max_model_len, rows.dropped = stats["max_model_len"], stats["dropped"]
        if tick is not None:
            tick.finish(len(rows))
        return rows
    except ValueError as e:
        raise _args.reraise_by_keyword(e) from None
    finally:
        if tick is not None:
            tick.close()


class SweepRows(list):
    """sweep's rows (a list of dicts), with the max_model_len applied (0: none) and the requests it
    dropped."""

    max_model_len: int = 0
    dropped: int = 0


def _cost_roots() -> list:
    """Where the shipped cost files are: inside the package (a wheel's mlaplan/costs), then a source
    tree's costs/ (python/mlaplan/../../costs), as the CLI looks beside its executable, then in its
    source tree."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, "costs"), os.path.normpath(os.path.join(here, "..", "..", "costs"))]


def cost_file(gpu: str, model: str, tp: int, attention: str = "fa3", dtype: str = "bf16", loop: str = "engine") -> str:
    """The shipped cost file calibrated on `gpu` ("h100", "h200" or the name nvidia-smi prints, any
    case) for the model preset at `tp`, with `attention` ("fa3", what the engines run on Hopper, or
    "fa2"), `dtype` and `loop` ("engine", the engines' own loop, or "fused", mlaplan's), as `--gpu`
    (and `--loop`) find it (docs/cost-model.md, Which file). ValueError naming gpu where there is none:
    it lists the files there are and how to make one (python -m mlaplan.calibrate)."""
    if not isinstance(gpu, str):
        raise TypeError(f"gpu: expected a GPU's name, got {type(gpu).__name__} {gpu!r}")
    model = _args.name_of("model", model, _mlaplan.model_names())
    tp = _args.whole("tp", tp, 1, 1024)
    attention = _args.name_of("attention", attention, ("fa3", "fa2", "flash"))
    dtype = _args.name_of("dtype", dtype, ("bf16", "fp8"))
    return _mlaplan.find_cost_file(_cost_roots(), gpu, model, tp, dtype, attention, _up_projection(loop))


def _up_projection(loop: str) -> str:
    """loop= ("engine" or "fused", any case) as cost files spell it (kernels.up_projection)."""
    return "fused" if _args.name_of("loop", loop, ("engine", "fused")) == "fused" else "unfused"


def _gpu_costs(gpu, costs: list, model, tp, attention, loop=None) -> list:
    """sweep's cost files under gpu=: the given ones, each checked to be that GPU's (and loop's), or the
    shipped one for model=, tp=, attention= and loop=."""
    up = None if loop is None else _up_projection(loop)
    if gpu is None:
        if model is not None or tp is not None or attention is not None or loop is not None:
            raise ValueError("model, tp, attention, loop: they pick the shipped cost file gpu= takes; add gpu='h100' (or "
                             "give cost=FILE, which names its own)")
        return costs
    if not isinstance(gpu, str):
        raise TypeError(f"gpu: expected a GPU's name, got {type(gpu).__name__} {gpu!r}")
    if costs:
        if model is not None or tp is not None or attention is not None:
            raise ValueError("model, tp, attention: they pick the shipped cost file gpu= takes, and cost= gives the "
                             "files; drop one")
        for c in costs:
            _mlaplan.require_gpu(c, gpu)
            if up is not None and _mlaplan.read_cost_model(c)["up_projection"] != up:  # read only where loop= asks
                raise ValueError(f"loop: {loop!r}, but {c} prices the {'engine' if up == 'fused' else 'fused'} loop; give "
                                 f"the file of that loop or drop loop")
        return costs
    if model is None or tp is None:
        raise ValueError("gpu: it takes the shipped cost file for model= and tp=; add model='deepseek-v3', tp=8 (or "
                         "give cost=FILE)")
    return [cost_file(gpu, model, tp, "fa3" if attention is None else attention, loop="engine" if loop is None else loop)]


_REPLAY_DEFAULTS = {"replay_format": "auto", "replay_block_size": 512, "prefix_cache_tokens": 0, "step_ms": 0.0}


def replay(
    path: str,
    replay_format: str = "auto",
    block_size: int = 512,
    prefix_cache_tokens: int = 0,
    step_ms: float = 0.0,
    token_budget: int = 8192,
    max_sequences: int = 256,
    max_model_len: int = 0,
    memory_limit=_args.MEMORY_LIMIT,
) -> dict:
    """A trace replayed through a prefix cache in steps of `token_budget` new tokens (docs/workloads.md):
    steps, requests, dropped, input_tokens, cached_tokens, hit_rate, evictions, cached_per_request (a
    NumPy array, in admission order) and summary (the line `gen --replay` prints).

    Every value is checked as `gen --replay` checks its option (ValueError naming the keyword;
    prefix_cache_tokens 0: unlimited; max_model_len 0: none); the steps, each held as a batch until
    counted, must fit memory_limit (bytes or a size such as "4GiB"; default 2 GiB, the CLI's
    --memory-limit). Ctrl-C stops it (KeyboardInterrupt)."""
    a = _args
    block_size = a.whole("block_size", block_size, 1, 1 << 30)
    checked = (a.path("path", path), a.name_of("replay_format", replay_format, ("auto", "mooncake", "azure")), block_size,
               a.prefix_cache_tokens("prefix_cache_tokens", prefix_cache_tokens, block_size),
               a.duration_ms("step_ms", step_ms), a.whole("token_budget", token_budget, 1, 1 << 30),
               a.whole("max_sequences", max_sequences, 1, 1 << 24), a.whole("max_model_len", max_model_len, 0, 1 << 32),
               a.memory_limit(memory_limit))
    try:
        result = _mlaplan.replay(*checked)
    except ValueError as e:
        raise ValueError(_args.keyword_message(str(e), {"--replay-block-size": "block_size"})) from None
    if result["requests"] == 0 and result["dropped"] > 0:  # as `gen --replay` refuses it: nothing to replay
        raise ValueError(f"max_model_len={max_model_len}: every request of {_mlaplan.printable(checked[0])} is longer "
                         f"({result['dropped']} dropped), so nothing is replayed; raise max_model_len, or 0 for none")
    return result


def cost_terms() -> list:
    """The cost model's terms, in a cost file's order: (coefficient name, what one unit is)
    (docs/cost-model.md)."""
    return [tuple(t) for t in _mlaplan.cost_terms()]


def cost_features(cache_lengths, input_row_offsets, page_size: int, buffer_token_size: int, policy: str, heads: int,
                  sms: int = 132, blocks_per_sm: int = 1, tile_queries: int = 128, max_chunks: int = 0,
                  unbounded: bool = False, sm: int = 0, scheduler: str = "grid", small_gemm_rows: int = 0) -> dict:
    """What one layer's prefill of the batch does under the policy, counted in the cost model's terms
    ({coefficient name: count}), by the code `sweep --cost` runs: a layer's predicted time is the sum
    of coefficient x count. heads: the local heads (num_heads / TP); sms, blocks_per_sm, tile_queries:
    the attention kernel's geometry. max_chunks 0: as many as max needs. unbounded: a buffer holding
    the batch whole (the lower bound). sm: the GPU's compute capability x10 (90 for an H200, 100 for a
    B200): the terms are then those of the path the engine dispatches the batch to there (TensorRT-LLM
    below SM100 and SGLang's one-shot and absorbed paths take the whole context at once; see
    `engine_path`), and the dict's "path" key names it; 0 (the default): every policy's own loop.
    scheduler: how the attention kernel hands its blocks out, "grid" (FlashAttention-2), "sorted" or "sectioned"
    (FlashAttention-3; docs/cost-model.md). small_gemm_rows: a cost file's geometry.small_gemm_rows, the largest
    up-projection counted in per_small_gemm_row_us (0, the default: none)."""
    cache, offsets, page, buffer, *rest = _batch_args(cache_lengths, input_row_offsets, policy, page_size=page_size,
                                        buffer_token_size=buffer_token_size, heads=heads, sms=sms, blocks_per_sm=blocks_per_sm,
                                        tile_queries=tile_queries, max_chunks=max_chunks, unbounded=unbounded, sm=sm,
                                        scheduler=scheduler, small_gemm_rows=small_gemm_rows)
    return _mlaplan.cost_features(cache, offsets, page, buffer, policy, *rest)


def cost_launches(cache_lengths, input_row_offsets, page_size: int, buffer_token_size: int, policy: str, heads: int,
                  sms: int = 132, blocks_per_sm: int = 1, tile_queries: int = 128, max_chunks: int = 0,
                  unbounded: bool = False, sm: int = 0, scheduler: str = "grid", pad_v: bool = False,
                  small_gemm_rows: int = 0) -> dict:
    """The kernels one layer launches per kind ({gather, up_projection, concat, attention, merge, fill:
    count}) as eager time counts them on the executor's loop (the C++ `run`/`sweep --timing eager`
    run), for the batch, policy and path `cost_features` prices with the same arguments. pad_v: the
    up-projection pads V (FlashAttention-2 and the CPU kernel), one more concat per step."""
    cache, offsets, page, buffer, *rest = _batch_args(cache_lengths, input_row_offsets, policy, page_size=page_size,
                                        buffer_token_size=buffer_token_size, heads=heads, sms=sms, blocks_per_sm=blocks_per_sm,
                                        tile_queries=tile_queries, max_chunks=max_chunks, unbounded=unbounded, sm=sm,
                                        scheduler=scheduler, pad_v=pad_v, small_gemm_rows=small_gemm_rows)
    return _mlaplan.cost_launches(cache, offsets, page, buffer, policy, *rest)


def merges_per_query(cache_lengths, input_row_offsets, page_size: int, buffer_token_size: int, policy: str,
                     max_chunks: int = 0, sm: int = 0) -> dict:
    """How many log-sum-exp merges each query row's running output goes through under the policy's
    loop, as `run` and `sweep` count them from the plan (and the prefill executor runs them):
    {"max": n, "p99": n, "histogram": [(merges, rows), ...]}. max_chunks 0: as many as max needs; sm:
    the GPU's compute capability x10 whose dispatch picks the path (a whole-context path merges
    nothing; 0: every policy's loop). Each merge rounds a bf16 state (docs/prefill.md, "Many merges")."""
    cache, offsets, page, buffer, *rest = _batch_args(cache_lengths, input_row_offsets, policy, page_size=page_size,
                                                      buffer_token_size=buffer_token_size, max_chunks=max_chunks, sm=sm)
    d = _mlaplan.merges_per_query(cache, offsets, page, buffer, policy, *rest)
    d["histogram"] = [tuple(h) for h in d["histogram"]]
    return d


def engine_path(cache_lengths, input_row_offsets, page_size: int, buffer_token_size: int, policy: str, sm: int) -> tuple:
    """The path the policy's engine runs the batch on, on a GPU of compute capability sm x10 (90, 100;
    0: none named, the policy's loop), and why: ("chunked" | "one-shot" | "absorbed", sentence)
    (docs/cost-model.md, "Which path each engine runs")."""
    cache, offsets, page, buffer, *rest = _batch_args(cache_lengths, input_row_offsets, policy, page_size=page_size,
                                                      buffer_token_size=buffer_token_size, sm=sm)
    return tuple(_mlaplan.engine_path(cache, offsets, page, buffer, policy, *rest))


def workload_names() -> list:
    """The workload presets `sweep` accepts (docs/workloads.md)."""
    return _mlaplan.workload_names()
