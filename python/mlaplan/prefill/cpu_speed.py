"""The host CPU's speed now, against the fastest this process has seen, and a wait for full speed.

A host-bound eager layer is timed on the host's CPU. The H200's host is a virtual machine whose CPU
ran a fixed pure-Python loop at full speed or at about half of it, in phases of several seconds,
with the thread never descheduled and no steal time reported (scripts/experiments/host_state.py,
docs/cost-model.md); a layer's dispatch took 1.3x as long in the slow phases. So eager timings on the
GPU wait, up to a limit, for a full-speed phase, and record the probe's time beside the result.
"""
from __future__ import annotations

import math
import time

from . import phases
# A probe SLOW x slower than the fastest seen marks a slow phase; an eager timing waits up to WAIT_S for
# a full-speed one (why these values: _cli, where the commands' parsers read them without torch).
from .._cli import CPU_SLOW as SLOW, CPU_WAIT_HELP as HELP, CPU_WAIT_S as WAIT_S  # noqa: F401

# About 1 ms of interpreter work at full speed: short beside a phase, long beside a timer tick.
PROBE_ITERATIONS = 30_000

# Before its first wait a process has seen one speed only, which may be the slow one: it first
# probes for up to LEARN_S (or its wait, if shorter), or until a probe LEARNT x faster than the first
# shows it has seen both.
LEARNT, LEARN_S = 1.5, 10

_fastest_ms = math.inf
_learnt = False


def probe_ms() -> float:
    """One run of the fixed loop, in ms (and the fastest seen updated)."""
    global _fastest_ms
    t0 = time.perf_counter()
    s = 0
    for i in range(PROBE_ITERATIONS):
        s += i & 7
    ms = (time.perf_counter() - t0) * 1e3
    _fastest_ms = min(_fastest_ms, ms)
    return ms


def current_ms() -> float:
    """The faster of two probes: one alone may catch an interrupt."""
    return min(probe_ms(), probe_ms())


def full_speed(ms: float) -> bool:
    return ms <= SLOW * _fastest_ms


def wait_for_full_speed(wait_s: float = WAIT_S) -> float:
    """Probes every 50 ms until the CPU runs within SLOW of the fastest probe seen, for at most
    wait_s (the first call in a process first learns the fastest, for up to LEARN_S more); returns
    the last probe's ms (slow where the wait ran out). Its time, learning included, is the phase
    `cpu_wait` (phases)."""
    with phases.phase("cpu_wait"):
        return _wait(wait_s, time.perf_counter())


def _wait(wait_s: float, start: float) -> float:
    global _learnt
    if not _learnt:
        _learnt = True
        first = current_ms()
        while current_ms() * LEARNT > first and time.perf_counter() - start < min(wait_s, LEARN_S):
            time.sleep(0.05)
        start = time.perf_counter()
    while True:
        ms = current_ms()
        if full_speed(ms) or time.perf_counter() - start >= wait_s:
            return ms
        time.sleep(0.05)
