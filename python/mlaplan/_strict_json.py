"""JSON as the C++ reader takes it (lib/io): NaN, Infinity, numbers past a double's range and keys
given twice in one object are refused, each a ValueError saying which.

Standard library only, so that scripts/script_errors.py loads this file by its path and the plotting
scripts, which need only matplotlib, read JSON by the same rules without the package built.
"""
import json
import math
from typing import Any


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):  # 1e400: JSON's grammar allows it, but it reads as infinity
        raise ValueError(f"{text} is past a double's range")
    return v


def _unique_keys(pairs) -> dict:
    out = {}
    for k, v in pairs:
        if k in out:  # which of two values was meant cannot be known
            raise ValueError(f"key {k!r} given twice in one object")
        out[k] = v
    return out


def loads(text: str) -> Any:
    """json.loads by those rules: json.JSONDecodeError for bad syntax, ValueError for the rest, and
    RecursionError for nesting too deep for Python."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite, object_pairs_hook=_unique_keys)
