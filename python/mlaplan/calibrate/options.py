"""Which options a command line gave, and refusing those that do nothing in its mode (docs/interface.md:
an option with no effect is an error, not a silent default). Told by what argparse parsed, never by
comparing a value with its default: `--reps 5` given with --refit is refused as `--reps 7` is."""
from __future__ import annotations

import argparse
from typing import Iterable

from .._cli import Parser as BaseParser
from .._cli import UsageError

_UNSET = object()  # an option's value before argparse stores the one given


class Parser(BaseParser):
    """The package's parser (one error line, exit 2) that also records which options were given:
    `given(args, dest)`. Every default still lands in the namespace, so callers read args as before."""

    def parse_known_args(self, args=None, namespace=None):
        if namespace is None:
            namespace = argparse.Namespace()
        # A store action with a default would hide whether it was given: it starts unset instead. List
        # actions (nargs + extend) keep their None default: given exactly when not None.
        stores = [a for a in self._actions if isinstance(a, argparse._StoreAction) and a.default is not None
                  and not hasattr(namespace, a.dest)]
        for a in stores:
            setattr(namespace, a.dest, _UNSET)
        namespace, extras = super().parse_known_args(args, namespace)
        flags = {}
        for a in self._actions:
            if not a.option_strings:
                continue
            value = getattr(namespace, a.dest, None)
            if value is _UNSET:
                setattr(namespace, a.dest, a.default)
            elif a in stores or value is not None and a.default is None:
                flags[a.dest] = a.option_strings[-1]  # the long spelling, as messages name it
        namespace._given = flags
        return namespace, extras


def given(args, dest: str) -> bool:
    return dest in getattr(args, "_given", {})


def refuse_given(args, dests: Iterable[str], mode: str, why: str) -> None:
    """UsageError naming the first of `dests` given and `mode`, the option that makes it do nothing:
    "--cpu-wait-s: it only matters when measuring, and --refit measures nothing; drop one"."""
    flags = getattr(args, "_given", {})
    for dest in dests:
        if dest in flags:
            raise UsageError(f"{flags[dest]}: {why}; drop {flags[dest]} or {mode}")
