"""The calibration's built-in workload batches: scheduler steps of the project's workload presets,
drawn in-process (mlaplan gen's batch formation, through the bindings), so that one command needs no
scenario files. The held-out check takes the first HELDOUT_BATCHES steps of seed HELDOUT_SEED (with
the defaults, cost-validation/seed-51's coding-agent and short-chat files). The fit takes the first
FIT_BATCHES steps of seed FIT_SEED (docs/data/cost-calibration/workloads-seed61, on which a 270 s H100
calibration met the targets) and FIT_SPREAD more of its later steps spread over the workload's shapes:
a workload's consecutive steps are alike, and the first three of seed 61's Mooncake steps held two
or three sequences each where a third of its steps hold one (a long request's chunks), as the
check's first three did; an H100 fit of Kimi-K2 without them priced those steps 2% short."""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from .. import _mlaplan
from .._cli import ENGINES
from .grid import Point, batch_points

# What users price: agents with long contexts, short chats, and Mooncake's conversation trace's shape.
WORKLOADS = ("coding-agent", "short-chat", "mooncake-conv")
FIT_SEED, HELDOUT_SEED = 61, 51
FIT_BATCHES, HELDOUT_BATCHES = 3, 4
# The fit's steps picked for their shapes (draw's spread), among the SPREAD_STEPS after its first.
FIT_SPREAD, SPREAD_STEPS = 2, 32
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


def draw(workloads: Sequence[str], seed: int, batches: int, page_size: int = PAGE_SIZE, spread: int = 0) -> List[Batch]:
    """The first `batches` scheduler steps of each workload (token budget 8192, as mlaplan gen forms
    them with --seed seed --page-size page_size), and `spread` of the next SPREAD_STEPS picked across
    their shapes (spread_pick), in order: every workload's first, then every second... A batch is
    named for its step's index in the draw."""
    drawn: Dict[str, List[Batch]] = {}
    for w in workloads:
        steps = _mlaplan.workload_batches(w, batches + (SPREAD_STEPS if spread else 0), seed, page_size)
        named = [(w, f"{w}-seed{seed}-{i}", list(s["cache_lengths"]),
                  [b - a for a, b in zip(s["input_row_offsets"], s["input_row_offsets"][1:])]) for i, s in enumerate(steps)]
        drawn[w] = named[:batches] + spread_pick(named[batches:], spread)
    most = max((len(d) for d in drawn.values()), default=0)
    return [drawn[w][i] for i in range(most) for w in workloads if i < len(drawn[w])]


def spread_pick(steps: Sequence[Batch], count: int) -> List[Batch]:
    """`count` of the steps, each at the middle of one of `count` equal shares of them ordered by
    (sequences, context): for two, the first and the third quartile's. Kept in the draw's order."""
    if count <= 0 or not steps:
        return []
    by_shape = sorted(range(len(steps)), key=lambda i: (len(steps[i][2]), sum(steps[i][2]), i))
    picked = {by_shape[int((k + 0.5) * len(steps) / count)] for k in range(min(count, len(steps)))}
    return [steps[i] for i in sorted(picked)]


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
