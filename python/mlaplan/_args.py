"""The Python API's argument checks: every value checked as the CLI checks its option (the same
ranges), before any C++ runs, and a ValueError (TypeError for a value of the wrong type) that names
the keyword. `keyword_message` rewrites the option names in a message from the C++ layers (which the
CLI shares) into the keywords of the call."""
from __future__ import annotations

import math
import numbers
import re
from typing import Any, Dict, List, Optional, Sequence

from . import _mlaplan
from ._files import check_path

MEMORY_LIMIT = 2 << 30  # the CLI's default --memory-limit
LEAST_MEMORY_LIMIT = 1 << 20


def whole(name: str, value: Any, low: int, high: int) -> int:
    """An int (or NumPy integer) from low to high; a bool, a float or a string is a TypeError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected a whole number from {low} to {high}, got {type(value).__name__} {value!r}")
    value = int(value)
    if not low <= value <= high:
        raise ValueError(f"{name}={value}: expected a whole number from {low} to {high}")
    return value


def whole_list(name: str, values: Any, low: int, high: int) -> List[int]:
    """A non-empty sequence of whole numbers, each from low to high."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: expected a list of whole numbers, got {type(values).__name__} {values!r}")
    out = [whole(f"{name}[{i}]", v, low, high) for i, v in enumerate(values)]
    if not out:
        raise ValueError(f"{name}: an empty list; give at least one value")
    return out


STEP_MS = (0.001, 3_600_000)  # the CLI's --step-ms: from a microsecond to an hour


def duration_ms(name: str, value: Any) -> float:
    """0 (none) or a step's duration in ms within the CLI's --step-ms range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a number of ms, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (value != 0 and not STEP_MS[0] <= value <= STEP_MS[1]):
        raise ValueError(f"{name}={value!r}: expected 0 (no arrivals) or a step's duration in ms from {STEP_MS[0]} to "
                         f"{STEP_MS[1]}")
    return value


def prefix_cache_tokens(name: str, value: Any, block_size: int) -> int:
    """0 (unlimited) or at least one block, as the CLI's --prefix-cache-tokens."""
    value = whole(name, value, 0, 1 << 48)
    if 0 < value < block_size:
        raise ValueError(f"{name}={value}: less than one block of {block_size} tokens; give at least {block_size}, or 0 "
                         f"(unlimited)")
    return value


def name_of(name: str, value: Any, names: Sequence[str]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a name, got {type(value).__name__} {value!r}")
    for n in names:
        if n.lower() == value.lower():
            return n
    raise ValueError(f"{name}={value!r}: unknown; choose one of {', '.join(names)}")


def memory_limit(value: Any) -> int:
    """Bytes, from an int or a size as the CLI's --memory-limit takes it ("512MiB", "4GiB")."""
    if isinstance(value, str):
        value = _mlaplan.parse_byte_size(value, "memory_limit")
    limit = whole("memory_limit", value, LEAST_MEMORY_LIMIT, 2**64 - 1)
    return limit


def path(name: str, value: Any) -> str:
    return check_path(value, name)


def policies(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a comma list of policies as a string, got {type(value).__name__}")
    if any(not item.strip() for item in value.split(",")):
        raise ValueError(f"{name}={value!r}: an empty item in the list; give names separated by single commas")
    return value


# The CLI options a C++ message may name, by the keyword that sets the same thing.
_OPTIONS = {
    "--batches": "batches", "--memory-limit": "memory_limit", "--token-budget": "token_budget",
    "--max-sequences": "max_sequences", "--buffer-tokens": "buffer_tokens", "--max-chunks": "max_chunks",
    "--step-ms": "step_ms", "--replay-format": "replay_format", "--replay-block-size": "replay_block_size",
    "--prefix-cache-tokens": "prefix_cache_tokens", "--cost": "cost", "--policy": "policies",
    "--page-size": "page_size", "--seed": "seed", "--max-model-len": "max_model_len", "--workload": "workload",
    "--replay": "replay", "--timing": "timing",
}
_OPTION = re.compile(r"--[a-z][a-z-]*")
_TIMING = re.compile(r"--timing (graph|eager)\b")  # a value the call spells as a keyword's


def keyword_message(message: str, renamed: Optional[Dict[str, str]] = None) -> str:
    """The message with each CLI option it names replaced by the call's keyword (`renamed`: where the
    call spells it otherwise, e.g. replay's block_size); "or --batch-size", which the API has not, goes."""
    names = dict(_OPTIONS, **(renamed or {}))
    message = message.replace(" or --batch-size", "")
    message = _TIMING.sub(lambda m: f"timing={m.group(1)!r}", message)
    return _OPTION.sub(lambda m: names.get(m.group(0), m.group(0)), message)


def reraise_by_keyword(error: ValueError, renamed: Optional[Dict[str, str]] = None):
    """A ValueError of the same class (InfeasibleBatch stays one) with the message by keyword."""
    text = keyword_message(str(error), renamed)
    if text == str(error):
        return error
    try:
        new = type(error)(text)
    except TypeError:
        new = ValueError(text)
    for attribute in ("min_max_chunks",):
        if hasattr(error, attribute):
            setattr(new, attribute, getattr(error, attribute))
    return new
