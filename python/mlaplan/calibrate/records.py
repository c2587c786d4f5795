"""Saved measurements (calibrate --measurements, validate --save) read back: through the package's
bounded reader (256 MiB, as the CLI's readers), every field checked, so a file that is not one is one
`mlaplan: error:` line naming the file and the field, never a traceback. And scipy, which the fit and
the ranking need, asked for by name before any work."""
from __future__ import annotations

import importlib.util
import numbers
import os
from typing import Iterable, List, Sequence, Union

from .._cli import POLICIES, UsageError, engine_named
from .._files import read_json
from .._gpu_clock import MAX_MHZ, MAX_WATTS, MIN_MHZ
from .fit import LAUNCH_KINDS, PROBES

# The loops a run can time (prefill.executor.UP_PROJECTIONS, which imports torch): a measurements file's
# up_projection, as a cost file's kernels.up_projection.
UP_PROJECTIONS = ("unfused", "fused")
# A run's path: the engine's loop, or the path it dispatched the batch to (prefill.schedule's).
PATHS = ("chunked", "one-shot", "absorbed", "sm90", "sm100", "no context")
MAX_SEQUENCES = 1 << 20  # a record is one batch: far more sequences than any measured one
MAX_PROBE_MS = 1e4  # as the cost file's host.probe_ms: the probe takes about 1 ms on the H200's host
MIN_PROBE_MS = 1e-3  # under a microsecond is no probe: a run's host costs would scale a millionfold
MAX_LAUNCH_US = 1e6  # as the cost file's host.launch_us
# A measured layer time in ms: one layer's run of one batch, timed with CUDA events or the host's clock,
# takes from a few microseconds to seconds. A nanosecond is below any clock's resolution and an hour
# past any batch: either is a unit slip, and 1e308 or 5e-324 made the fit's relative errors inf and NaN.
MIN_TIME_MS, MAX_TIME_MS = 1e-6, 3.6e6
# The pricing's work (cost_features, cost_eager) grows as sequences x buffer-fulls (the cached and new
# tokens over buffer_tokens, rounded up): max at 2^22 prices in about 0.3 s, and a fit prices each
# record many times. The measured runs reach 64 x 250; 2^20 sequences took minutes and 2.7 GiB.
MAX_PRICING_WORK = 1 << 22


def require_scipy(purpose: str) -> None:
    """UsageError naming scipy and the extra that brings it, where scipy cannot be imported."""
    if importlib.util.find_spec("scipy") is None:
        raise UsageError(f"{purpose} needs scipy, which is not installed: pip install scipy (or, in a clone of mlaplan, "
                         f"pip install '.[calibrate]')")


def require_torch(instead: str):
    """torch, imported for measuring; where it cannot be, UsageError naming the extra and `instead`
    (the option that needs no torch): --refit and --measured import none."""
    try:
        import torch
    except ImportError as e:
        raise UsageError(f"measuring needs torch ({e}): pip install torch (or, in a clone of mlaplan, pip install "
                         f"'.[calibrate]'), or {instead}") from None
    return torch


def each_once(option_paths) -> None:
    """UsageError where one file is given twice among (option, paths) pairs: its runs would count
    twice, and a fit's cross-validation would test on the points it was fitted on."""
    seen = {}
    for option, paths in option_paths:
        for p in paths or ():
            key = os.path.realpath(p)
            if key in seen:
                raise UsageError(f"{p}: given twice ({seen[key]} and {option}); give each file once")
            seen[key] = option


def require_fields(path: str, doc: dict, fields: Iterable, fix: str) -> None:
    """Each (key, str or int) of `fields` in the document: a string, or a whole number 1 .. 2^32 - 1;
    else the one error line naming the field, then `fix`."""
    for key, kind in fields:
        v = doc.get(key)
        if not isinstance(v, kind) or isinstance(v, bool) or kind is int and not 1 <= v < 2**32:
            what = "missing" if key not in doc else f"{v!r} is not {'a whole number >= 1' if kind is int else 'a string'}"
            raise UsageError(f"{path}: {key}: {what}; {fix}")


def _whole(value, low: int) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and low <= value < 2**32


def _policy_error(name: str) -> str:
    """Why `name` is no policy a record can hold ("" where it is one): an engine, mlaplan's waves with
    its launch shape, or guided by a cost file, whose file is read once here (grid.priced_policy)."""
    from .grid import priced_policy

    fallback = f"{name!r} is not one of {', '.join(POLICIES)}"
    try:
        priced = priced_policy(name)
    except ValueError as e:  # the guided policy's cost file: its own message names it and the field
        return f"{name!r}: {str(e).splitlines()[0]}"
    try:
        return "" if engine_named(priced) == priced else fallback
    except ValueError:
        return fallback


def _number_or_null(where: str, key: str, v, low: float, high: float, expected: str, fix: str = "") -> None:
    """A record's field: null, or a real number (not a bool) from low to high; else the one error line."""
    if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real) or not low <= v <= high):
        raise UsageError(f"{where}.{key}: expected {expected}, got {v!r}{fix}")


def _check_record(path: str, i: int, r, text_keys: Iterable[str], policies: dict, field: str = "records") -> None:
    where = f"{path}: {field}[{i}]"
    if not isinstance(r, dict):
        raise UsageError(f"{where}: a {type(r).__name__}, not an object; give a file mlaplan wrote")
    for key in ("cache", "new"):
        v = r.get(key)
        if not isinstance(v, list) or not 1 <= len(v) <= MAX_SEQUENCES or not all(_whole(x, 0) for x in v):
            raise UsageError(f"{where}.{key}: expected a list of 1 to {MAX_SEQUENCES} whole numbers of tokens; "
                             f"give a file mlaplan wrote")
    if len(r["cache"]) != len(r["new"]):
        raise UsageError(f"{where}: cache has {len(r['cache'])} sequences and new {len(r['new'])}; give a file mlaplan wrote")
    for key in ("page_size", "buffer_tokens"):
        if not _whole(r.get(key), 1):
            raise UsageError(f"{where}.{key}: expected a whole number >= 1, got {r.get(key)!r}")
    name = r.get("policy")
    if not isinstance(name, str):
        raise UsageError(f"{where}.policy: {name!r} is not one of {', '.join(POLICIES)}")
    if name not in policies:
        policies[name] = _policy_error(name)
    if policies[name]:
        raise UsageError(f"{where}.policy: {policies[name]}")
    fulls = -(-(sum(r["cache"]) + sum(r["new"])) // r["buffer_tokens"])
    if len(r["cache"]) * fulls > MAX_PRICING_WORK:
        raise UsageError(f"{where}: {len(r['cache'])} sequences over {fulls} buffer-fulls of {r['buffer_tokens']} rows, past "
                         f"what a fit prices (sequences x buffer-fulls at most {MAX_PRICING_WORK:,}; measured runs reach "
                         f"64 x 250); give runs of batches the executor measured")
    # The times the fit and the report divide by: a nanosecond to an hour. Spreads and the host's own
    # times may be 0 (one repetition; nothing told apart).
    for key, low in (("eager_ms", MIN_TIME_MS), ("graph_ms", MIN_TIME_MS), ("eager_spread_ms", 0), ("eager_round_spread_ms", 0),
                     ("host_ms", 0), ("host_issue_ms", 0)):
        _number_or_null(where, key, r.get(key), low, MAX_TIME_MS,
                        f"a time in ms from {low:g} to {MAX_TIME_MS:g} (an hour) or null", "; give a file mlaplan wrote")
    # The host costs are scaled by them (fit.probe_scale): a probe is a time of a microsecond or more, or null.
    for key in PROBES.values():
        _number_or_null(where, key, r.get(key), MIN_PROBE_MS, MAX_PROBE_MS,
                        f"the probe's ms (a number from {MIN_PROBE_MS:g} to {MAX_PROBE_MS:g}) or null")
    # What NVML said of the GPU right after the run (mlaplan._gpu_clock): diagnostic, never fitted.
    for key, low, high in (("sm_clock_mhz", MIN_MHZ, MAX_MHZ), ("power_w", 0, MAX_WATTS)):
        _number_or_null(where, key, r.get(key), low, high, f"a number from {low:g} to {high:g} or null",
                        "; give a file mlaplan wrote")
    # The launch stamps' host costs (fit.stamped_us): microseconds per launch of known kinds.
    stamped = r.get("host_launch_us")
    if stamped is not None and (not isinstance(stamped, dict) or not all(
            k in LAUNCH_KINDS and not isinstance(v, bool) and isinstance(v, numbers.Real) and 0 <= v <= MAX_LAUNCH_US
            for k, v in stamped.items())):
        raise UsageError(f"{where}.host_launch_us: expected {{kind: microseconds from 0 to {MAX_LAUNCH_US:g}}} with kinds "
                         f"of {', '.join(LAUNCH_KINDS)}, got {repr(stamped)[:80]}; give a file mlaplan wrote")
    for key in ("path", *text_keys):
        if key in r and not isinstance(r[key], str) or key in text_keys and key not in r:
            raise UsageError(f"{where}.{key}: expected a string; give a file mlaplan wrote")
    if "path" in r and r["path"] not in PATHS:
        raise UsageError(f"{where}.path: {r['path'][:40]!r} is not one of {', '.join(PATHS)}; give a file mlaplan wrote")
    if "iterations" in r and r["iterations"] is not None and not _whole(r["iterations"], 0):
        raise UsageError(f"{where}.iterations: expected a whole number >= 0, got {r['iterations']!r}; give a file mlaplan wrote")
    # The kernels one run launched per kind (the eager fit's counts).
    launches = r.get("launches")
    if launches is not None and (not isinstance(launches, dict) or not all(
            k in LAUNCH_KINDS and _whole(v, 0) for k, v in launches.items())):
        raise UsageError(f"{where}.launches: expected {{kind: whole number >= 0}} with kinds of {', '.join(LAUNCH_KINDS)}, "
                         f"got {repr(launches)[:80]}; give a file mlaplan wrote")


def read_measurements(path: str, fmt: Union[str, Sequence[str]], wrote: str, top_keys: Iterable[str] = (),
                      text_keys: Iterable[str] = ()) -> dict:
    """The document of `path`: format `fmt` (or any of several), `top_keys` present, every record
    checked (`text_keys`: strings each record must hold). `wrote`: the option that writes such files,
    for the fix."""
    what = f"a file {wrote} wrote"
    formats = (fmt,) if isinstance(fmt, str) else tuple(fmt)
    doc = read_json(path, what)
    if not isinstance(doc, dict) or doc.get("format") not in formats:
        raise UsageError(f"{path}: format: not {' or '.join(f'{chr(34)}{f}{chr(34)}' for f in formats)}; give {what}")
    for key in top_keys:
        if key not in doc:
            raise UsageError(f"{path}: {key}: missing; give {what}")
    records: List = doc.get("records")
    if not isinstance(records, list):
        raise UsageError(f"{path}: records: missing or not a list; give {what}")
    # The loop the runs timed: the engines' (unfused; files written before calibrate --loop) or fused.
    doc.setdefault("up_projection", "unfused")
    if doc["up_projection"] not in UP_PROJECTIONS:
        raise UsageError(f"{path}: up_projection: {doc['up_projection']!r} is not one of {', '.join(UP_PROJECTIONS)}; give "
                         f"{what}")
    policies: dict = {}  # each policy checked once (a guided one reads its cost file)
    for i, r in enumerate(records):
        _check_record(path, i, r, tuple(text_keys), policies)
    # The one command's held-out runs (--measurements keeps them): each a workload's batch, as checked.
    held = doc.get("heldout_records")
    if held is not None:
        if not isinstance(held, list):
            raise UsageError(f"{path}: heldout_records: not a list; give {what}")
        for i, r in enumerate(held):
            _check_record(path, i, r, ("workload", "scenario"), policies, "heldout_records")
    return doc
