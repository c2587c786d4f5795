"""The calibration's built-in workload batches: scheduler steps of the project's workload presets,
drawn in-process (mlaplan gen's batch formation, through the bindings), so that one command needs no
scenario files. The fit draws seed FIT_SEED, the held-out check HELDOUT_SEED: with the defaults they
are the batches of docs/data/cost-calibration/workloads-seed61 and of cost-validation/seed-51's
coding-agent and short-chat files, on which a 270 s H100 calibration met the targets (issue 62)."""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from .. import _mlaplan
from .._cli import ENGINES
from .grid import Point, batch_points

# What users price: agents with long contexts, short chats, and Mooncake's conversation trace's shape.
WORKLOADS = ("coding-agent", "short-chat", "mooncake-conv")
FIT_SEED, HELDOUT_SEED = 61, 51
FIT_BATCHES, HELDOUT_BATCHES = 3, 4
PAGE_SIZE = 64
BUFFERS = (8192, 16384, 65536, 131072, 262144)
# The host-bound settings (--host): where the loop has the most iterations, the host sets the pace.
HOST_BUFFERS = (8192, 16384, 65536)
HOST_SEED = 62

Batch = Tuple[str, str, List[int], List[int]]  # (workload, scenario name, cache lengths, new tokens)


def parse_workloads(text: str) -> Tuple[str, ...]:
    """--workloads: a comma list of presets, or none. ValueError naming the option."""
    if text.strip() == "none":
        return ()
    names = tuple(w.strip() for w in text.split(","))
    known = _mlaplan.workload_names()
    for w in names:
        if w not in known:
            raise ValueError(f"--workloads: {w!r} is not a workload preset; give a comma list of {', '.join(known)}, or none")
    if len(set(names)) != len(names):
        raise ValueError(f"--workloads: {text!r} names a workload twice; give each once")
    return names


def draw(workloads: Sequence[str], seed: int, batches: int, page_size: int = PAGE_SIZE) -> List[Batch]:
    """`batches` scheduler steps of each workload (token budget 8192, as mlaplan gen forms them with
    --seed seed --page-size page_size), in order: every workload's first, then every second..."""
    drawn: Dict[str, List[Batch]] = {}
    for w in workloads:
        steps = _mlaplan.workload_batches(w, batches, seed, page_size)
        drawn[w] = [(w, f"{w}-seed{seed}-{i}", list(s["cache_lengths"]),
                     [b - a for a, b in zip(s["input_row_offsets"], s["input_row_offsets"][1:])]) for i, s in enumerate(steps)]
    return [drawn[w][i] for i in range(batches) for w in workloads if i < len(drawn[w])]


def disjoint(heldout: Sequence[Batch], fitted: Sequence[Batch]) -> List[Batch]:
    """The held-out batches that are none of the fitted ones (same cache and new tokens): a check
    drawn with another seed keeps them all; one that repeats a fitted batch would test the fit on it."""
    seen = {(tuple(c), tuple(n)) for _, _, c, n in fitted}
    return [b for b in heldout if (tuple(b[2]), tuple(b[3])) not in seen]


def points(batches: Sequence[Batch], buffers: Sequence[int], heads: int, policies: Sequence[str] = ENGINES,
           page_size: int = PAGE_SIZE, refused: bool = False) -> List[Point]:
    """Every batch under every policy at every buffer, in the batches' order; those a policy refuses
    left out unless `refused`."""
    return [p for workload, name, cache, new in batches
            for p in batch_points(cache, new, page_size, buffers, policies, heads, refused, workload, name)]
