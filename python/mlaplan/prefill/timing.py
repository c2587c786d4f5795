"""Timing a layer's prefill three ways, kept apart from printing:
- eager: the loop as engines run it, host dispatch included wherever the GPU waits for it (CUDA
  events around each run; the median after warm-up runs);
- graph: the same loop captured once in a CUDA graph and replayed, which is the kernels alone;
- parts: one eager run under torch's profiler, its kernels' GPU time summed by part (the ranges
  `execute` opens), and how long the GPU sat idle between the first kernel and the last.
On the CPU, eager is wall-clock time and there is no graph; parts are the profiler's CPU times.
"""
from __future__ import annotations

import bisect
import contextlib
import os
import re
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import torch

from .. import _files
# How long the GPU runs the work back to back before it is timed (why: _cli, where the commands' parsers
# read it without torch), and the option that asks time_eager_probed to reheat.
from .._cli import REHEAT_HELP, SETTLE_MS  # noqa: F401
from . import cpu_speed, executor, phases
from .executor import PARTS, RANGE_PREFIX


@dataclass
class Timing:
    eager_ms: Optional[float]       # None where only the graph was timed (measure's eager=False)
    eager_spread_ms: Optional[float]  # max - min over the timed runs
    graph_ms: Optional[float]       # None on the CPU, or where capture failed (graph_error says why)
    parts_ms: Dict[str, float]
    gpu_busy_ms: Optional[float]    # union of kernel intervals during the profiled run
    gpu_span_ms: Optional[float]    # first kernel start to last kernel end
    kernels: int
    graph_error: Optional[str] = None
    samples: List[float] = field(default_factory=list)
    cpu_probe_ms: Optional[float] = None  # cpu_speed's probe just before the eager runs (cpu_wait_s > 0)
    dispatch_probe_ms: Optional[float] = None  # the host's dispatch probe beside the timed eager runs (dispatch_probe)
    launch_stamps: List[list] = field(default_factory=list)  # each timed eager run's executor.launch_stamps (stamp_launches)


def _events_ms(fn: Callable[[], object], reps: int) -> List[float]:
    samples = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return samples


def _wall_ms(fn: Callable[[], object], reps: int) -> List[float]:
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def _warm(fn: Callable[[], object], cuda: bool, warmup: int, settle_ms: float) -> None:
    """At least `warmup` runs, and on the GPU runs until settle_ms of wall time have passed."""
    start = time.perf_counter()
    for _ in range(warmup):
        fn()
    if cuda:
        while (time.perf_counter() - start) * 1e3 < settle_ms:
            fn()
            torch.cuda.synchronize()  # so the wall clock tracks the GPU, not the queue
        torch.cuda.synchronize()


def time_eager(fn: Callable[[], object], cuda: bool, reps: int, warmup: int, settle_ms: float = 0.0) -> List[float]:
    with phases.phase("settle"):
        _warm(fn, cuda, warmup, settle_ms)
    with phases.phase("timed"):
        return _events_ms(fn, reps) if cuda else _wall_ms(fn, reps)


def time_eager_probed(fn: Callable[[], object], reps: int, warmup: int, settle_ms: float,
                      probe: Callable[[], float], stamps: Optional[List[list]] = None,
                      reheat_ms: float = 0.0) -> Tuple[List[float], float]:
    """time_eager on the GPU, with the host's speed probed before each timed run and after the last:
    (samples, the probes' median). A probe beside every run follows the host through them: on the
    H200's host a layer's eager time divided by it kept a spread of 10% at p90, against 16% divided by
    the mean of a probe before the first run and one after the last (probe_tracking.py --interleave).
    stamps: a list that gains each timed run's launch stamps (executor.launch_stamps; the probes,
    which issue a layer of their own, are not stamped). reheat_ms: after each probe, run fn back to
    back this long before the timed run: the probe leaves the GPU idle a millisecond or two, and a
    layer that holds the card at its power cap may start the next run at a higher clock
    (it did, by 3% on the H200: docs/history/cost-model-eager-2026-12.md)."""
    with phases.phase("settle"):
        _warm(fn, True, warmup, settle_ms)
    samples, probes = [], []
    for _ in range(reps):
        with phases.phase("probe"):
            probes.append(probe())
        if reheat_ms > 0:
            with phases.phase("reheat"):
                _warm(fn, True, 0, reheat_ms)
        if stamps is not None:
            executor.launch_stamps = []
        try:
            with phases.phase("timed"):
                samples += _events_ms(fn, 1)
        finally:
            if stamps is not None:
                stamps.append(executor.launch_stamps)
                executor.launch_stamps = None
    with phases.phase("probe"):
        probes.append(probe())
    return samples, statistics.median(probes)


def time_graph(fn: Callable[[], object], reps: int, warmup: int, settle_ms: float = 0.0) -> List[float]:
    """Captures fn once (after warm-up runs on a side stream, as capture requires) and times replays
    after `warmup` replays and settle_ms of them back to back."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(warmup, 1)):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    _warm(graph.replay, True, warmup, settle_ms)
    samples = _events_ms(graph.replay, reps)
    del graph
    return samples


# The host's dispatch is timed behind a sleeping GPU: the sleep starts at HOST_SLEEP_MS and grows
# 4x (up to HOST_SLEEP_MAX_MS) until the host has issued the whole layer before the GPU woke.
HOST_SLEEP_MS, HOST_SLEEP_MAX_MS = 20.0, 320.0


def _cycles_per_ms() -> float:
    clock = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "clock_rate", 0) or 2_000_000  # kHz
    return float(clock)


def time_host(fn: Callable[[], object], reps: int) -> Optional[List[float]]:
    """The host's own time to issue fn's launches, in ms, one sample per rep: the GPU is first held
    busy by a sleep kernel, so no launch waits for the device and the wall time is dispatch alone.
    None where the host waited for the GPU anyway (the sleep ended first even at HOST_SLEEP_MAX_MS:
    fn synchronises, or its launches fill the driver's queue), so nothing honest can be said."""
    samples = []
    sleep_ms = HOST_SLEEP_MS
    while len(samples) < reps:
        torch.cuda.synchronize()
        torch.cuda._sleep(int(sleep_ms * _cycles_per_ms()))
        woke = torch.cuda.Event()
        woke.record()
        t0 = time.perf_counter()
        fn()
        ms = (time.perf_counter() - t0) * 1e3
        if woke.query():  # the GPU woke before the host was done: it may have waited, so retry longer
            if sleep_ms >= HOST_SLEEP_MAX_MS:
                torch.cuda.synchronize()
                return None
            sleep_ms *= 4
            continue
        samples.append(ms)
    torch.cuda.synchronize()
    return samples


def _union_ms(intervals) -> float:
    busy, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        busy += b - max(a, end)
        end = b
    return busy / 1e3


def profile_parts(fn: Callable[[], object], cuda: bool, trace: Optional[str] = None):
    """(parts in ms, busy ms, span ms, kernel count) from one profiled run; trace: a Chrome trace file.
    On the CPU without a trace, the parts are the wall-clock times of one run (no profiler needed)."""
    if not cuda and not trace:
        executor.part_clock = {}
        try:
            fn()
            clock = executor.part_clock
        finally:
            executor.part_clock = None
        return {p: clock.get(p, 0.0) * 1e3 for p in PARTS}, None, None, 0
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with quiet_profiler():
        with torch.profiler.profile(activities=activities) as prof:
            fn()
            if cuda:
                torch.cuda.synchronize()
        if trace:
            _export_trace(prof, trace)
        events = prof.events()
    cuda_type, cpu_type = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU
    kernels, ranges, host_ranges = [], [], []
    for e in events:
        part = e.name[len(RANGE_PREFIX):] if e.name.startswith(RANGE_PREFIX) else None
        if part is not None and e.device_type == cpu_type:
            host_ranges.append((part, e))
        elif part is not None and e.device_type == cuda_type:
            ranges.append((e.time_range.start, e.time_range.end, part))  # the range's span on the GPU
        elif cuda and e.device_type == cuda_type:  # a kernel, copy or fill
            kernels.append((e.time_range.start, e.time_range.end))
    parts = {p: 0.0 for p in PARTS}
    if not cuda:
        for part, e in host_ranges:
            if part in parts:
                parts[part] += e.cpu_time_total / 1e3
        return parts, None, None, 0
    if ranges:
        # Each kernel goes to the part whose span on the GPU holds it: this counts the kernels that no
        # host op launched (Triton's, launched through the driver), and no idle time between kernels.
        ranges.sort()
        starts = [a for a, _, _ in ranges]
        for a, b in kernels:
            i = bisect.bisect_right(starts, a) - 1
            if i >= 0 and b <= ranges[i][1] and ranges[i][2] in parts:
                parts[ranges[i][2]] += (b - a) / 1e3
    else:  # no device-side ranges from this profiler: the kernels each range's host ops launched
        for part, e in host_ranges:
            if part in parts:
                parts[part] += _launched_us(e) / 1e3
    if not kernels:
        return parts, 0.0, 0.0, 0
    span = (max(b for _, b in kernels) - min(a for a, _ in kernels)) / 1e3
    return parts, _union_ms(kernels), span, len(kernels)


# A line kineto (the profiler's C++ side) prints on stderr itself: "USDT:2026-12-02 13:30:38 19938:19938
# SyncActivityProfilerHandler.cpp:39] profiler_start".
_KINETO_LINE = re.compile(rb"^[A-Z]+:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+\.(cpp|h):\d+\] ")


@contextlib.contextmanager
def quiet_profiler():
    """The profiler without its chatter on stderr, which carries the tool's own lines only: torch's
    UserWarnings raised from its profiler modules (on a GPU: "Profiler clears events at the end of
    each cycle..."; without one: "CUDA is not available, disabling CUDA profiling") are dropped, and
    so are the lines kineto writes to stderr itself; every other warning and line passes."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _kineto_lines_dropped():
            yield
    for w in caught:
        if not (issubclass(w.category, UserWarning) and "profiler" in w.filename and f"{os.sep}torch{os.sep}" in w.filename):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


@contextlib.contextmanager
def _kineto_lines_dropped():
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no stderr to keep clean
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = b"".join(line for line in held if not _KINETO_LINE.match(line))
            if kept:
                try:
                    os.write(2, kept)
                except OSError:
                    pass


def _export_trace(prof, path: str) -> None:
    """The Chrome trace into `path` by the package's output rules: staged with the command's other
    outputs where the command claimed it (committed together), else written at once."""
    with tempfile.TemporaryDirectory() as folder:
        raw = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(raw)
        with open(raw, "rb") as f:
            data = f.read()
    files = _files.outputs()
    if files.claimed(path):
        files.stage(path, data)
    else:
        _files.write_file_now(path, data, "trace")


def _launched_us(e) -> float:
    """GPU microseconds of the kernels that e and the ops under it launched."""
    return sum(k.duration for k in e.kernels) + sum(_launched_us(c) for c in e.cpu_children)


def measure(run: Callable[[bool], object], cuda: bool, reps: int = 10, warmup: int = 3, graph: bool = True,
            trace: Optional[str] = None, ranges: bool = False, parts: bool = True, settle_ms: float = 0.0,
            graph_first: bool = False, cpu_wait_s: float = 0.0,
            dispatch_probe: Optional[Callable[[], float]] = None, stamp_launches: bool = False,
            reheat_ms: float = 0.0, eager: bool = True) -> Timing:
    """run(ranges) runs the work once; the timed runs pass `ranges` (default without annotations),
    the profiled run True. parts=False leaves out the profiled run (the calibration needs totals only).
    settle_ms: on the GPU, each timing (eager, graph) starts after that long running back to back.
    graph_first: replay the graph before the eager runs (a layer that holds the card at its power cap
    times a few percent slower in whichever timing comes second; alternating the order spreads that
    over both). cpu_wait_s: on the GPU, the eager runs wait up to that long for the host CPU's full
    speed (cpu_speed), and are timed again, up to twice, where it ended slow. dispatch_probe: on the
    GPU, the host's dispatch speed (dispatch_probe.probe_ms) probed beside each timed eager run.
    stamp_launches: with dispatch_probe, the timed eager runs' launch stamps kept (Timing.launch_stamps,
    those of the eager timing kept: the last where it is timed again). reheat_ms: with dispatch_probe,
    the layer runs back to back that long after each probe (time_eager_probed). eager=False: on the
    GPU, the graph alone (eager_ms None), where a check judges graph time only; ignored where no graph
    is timed."""
    fn = lambda: run(ranges)  # noqa: E731
    graph_ms, graph_error = None, None

    def replayed():
        nonlocal graph_ms, graph_error
        if cuda and graph:
            try:
                with phases.phase("graph"):
                    graph_ms = statistics.median(time_graph(fn, reps, warmup, settle_ms))
            except RuntimeError as e:  # a kernel that cannot be captured: say so, keep the eager figures
                graph_error = str(e).splitlines()[0]

    eager = eager or not (cuda and graph)
    if graph_first or not eager:
        replayed()
    waits = cuda and cpu_wait_s > 0 and eager
    probe = None  # the slower of the probes before and after the eager runs kept
    dispatch = None
    stamps: List[list] = []
    times: List[float] = []
    for _ in range((3 if waits else 1) if eager else 0):
        before = cpu_speed.wait_for_full_speed(cpu_wait_s) if waits else None
        if cuda and dispatch_probe is not None:
            stamps = [] if stamp_launches else None
            times, dispatch = time_eager_probed(fn, reps, warmup, settle_ms, dispatch_probe, stamps, reheat_ms)
        else:
            times = time_eager(fn, cuda, reps, warmup, settle_ms)
        if not waits:
            break
        probe = max(before, cpu_speed.current_ms())
        if cpu_speed.full_speed(probe):
            break
    if not graph_first and eager:
        replayed()
    if parts:
        by_part, busy, span, count = profile_parts(lambda: run(True), cuda, trace)
    else:
        by_part, busy, span, count = {}, None, None, 0
    return Timing(statistics.median(times) if times else None, max(times) - min(times) if times else None, graph_ms,
                  by_part, busy, span, count, graph_error, times, probe, dispatch, stamps or [])
