"""The host's cost per launch, read from the stamps `execute` takes as it issues each launch
(executor.launch_stamps) during timed eager runs.

Eager time's two clocks take a host cost per kind of launch, the time the host spends before it
issues a launch of that kind. Fitted to eager times alone, some kinds cannot be told apart (the
up-projection and its concat always come together), and a split that adds up the same prices a
host-bound loop alike but not the first launches of a short step, where the device waits for them.
The stamps measure each launch's cost where the engine pays it: in the timed runs themselves, the
GPU running asynchronously, so no launch waits for the device. The interval before a stamp of n
launches is shared evenly among them.
"""
from __future__ import annotations

import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from .executor import LAUNCH_KINDS

Stamps = Sequence[Tuple[str, int, int]]


def layer_us(stamps: Stamps) -> Tuple[Dict[str, float], Dict[str, int], float]:
    """One layer's stamps as (microseconds the host spent on each kind's launches, launches of each
    kind, microseconds from the layer's start to its last launch). ValueError where the stamps do not
    start with execute's start stamp or go back in time."""
    if not stamps or stamps[0][0] != "start":
        raise ValueError("launch stamps: the first is not execute's start stamp")
    spent = {k: 0.0 for k in LAUNCH_KINDS}
    launches = {k: 0 for k in LAUNCH_KINDS}
    for (_, _, before), (kind, n, at) in zip(stamps, stamps[1:]):
        if kind not in spent or n < 1 or at < before:
            raise ValueError(f"launch stamps: ({kind!r}, {n}, {at}) after {before} is not a launch issued later")
        spent[kind] += (at - before) / 1e3
        launches[kind] += n
    return spent, launches, (stamps[-1][2] - stamps[0][2]) / 1e3


def per_launch_us(layers: Sequence[Stamps]) -> Optional[dict]:
    """Several runs of one layer: {"launch_us": {kind: the median over runs of the host's microseconds
    per launch of that kind}, "issue_ms": the median of the runs' start to last launch}, kinds the
    layer does not launch left out; None where no run has a launch."""
    runs = [layer_us(s) for s in layers if len(s) > 1]
    if not runs:
        return None
    per_kind: Dict[str, List[float]] = {}
    for spent, launches, _ in runs:
        for k in LAUNCH_KINDS:
            if launches[k]:
                per_kind.setdefault(k, []).append(spent[k] / launches[k])
    return {"launch_us": {k: statistics.median(v) for k, v in per_kind.items()},
            "issue_ms": statistics.median(total for *_, total in runs) / 1e3}
