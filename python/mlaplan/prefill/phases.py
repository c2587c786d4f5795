"""Where a measurement's wall time goes, by phase, summed over this process.

A held-out setting took 2.5-4 s on the H200 whatever the size of its step, and that time, not the
steps, bounds how many repetitions fit a session. Each phase of a measurement (timing.measure,
measure.run_one, calibrate.measure_point) adds its wall time here, so that a report can say where
the seconds went (validate's batch line). The phases do not nest; what none of them holds is the
rest (Python, the report's own bookkeeping).
"""
from __future__ import annotations

import contextlib
import time
from typing import Dict, Iterator

# The phases, in the order a setting meets them, with the words a report uses.
WORDS = {
    "inputs": "inputs and schedule",
    "cpu_wait": "waiting for the CPU's full speed",
    "settle": "settling",
    "probe": "dispatch probes",
    "reheat": "reheating",
    "timed": "timed eager runs",
    "graph": "graph capture and replays",
    "host": "host dispatch alone",
}

_seconds: Dict[str, float] = dict.fromkeys(WORDS, 0.0)


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Adds the block's wall time to `name`'s total (one of WORDS)."""
    if name not in _seconds:
        raise KeyError(f"unknown phase {name!r}")
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _seconds[name] += time.perf_counter() - t0


def seconds() -> Dict[str, float]:
    """Each phase's seconds so far in this process (a copy: subtract two to get what lay between)."""
    return dict(_seconds)


def since(before: Dict[str, float]) -> Dict[str, float]:
    """Each phase's seconds since `before` (a seconds() taken earlier)."""
    return {k: v - before.get(k, 0.0) for k, v in _seconds.items()}


def words(spent: Dict[str, float], total_s: float) -> str:
    """'12 s waiting for the CPU's full speed, 3 s settling, ..., 1 s other': each phase that took
    half a second or more, largest first, and the rest of total_s."""
    big = sorted(((v, k) for k, v in spent.items() if v >= 0.5), reverse=True)
    parts = [f"{v:.0f} s {WORDS[k]}" for v, k in big]
    rest = total_s - sum(spent.values())
    if rest >= 0.5:
        parts.append(f"{rest:.0f} s other")
    return ", ".join(parts) if parts else "each phase under half a second"
