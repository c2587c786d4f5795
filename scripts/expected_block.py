#!/usr/bin/env python3
"""Fill in a scenario's `expected` block from the closed-form properties of semantics.md.

This is an implementation independent of the C++ reference (it uses the clamp formulas, not the
seed's loop), so golden files made with it cross-check the reference rather than echo it.

    scripts/expected_block.py scenarios/foo.json          # rewrite the file in place
    scripts/expected_block.py --check scenarios/*.json    # exit 1 if any expected block differs
"""
import argparse
import re

from script_errors import Field, Parser, dumps, escape, load, run, write_files

WHAT = "a scenario file (docs/interface.md)"
MAX_CELLS = 1 << 22  # the tables' cells written or compared: a few hundred MiB of Python lists at most


def align_up(x, p):
    return (x + p - 1) // p * p


def counts(s: Field, key: str, high=(1 << 32) - 1) -> list:
    return [v.number(low=0, high=high, integer=True) for v in s[key].list()]


def batch(s: Field):
    """(page, buffer, max_chunks, cache lengths, input lengths) of a scenario, each field checked as
    the CLI's reader checks it."""
    p = s["page_size"].number(low=1, high=(1 << 32) - 1, integer=True)
    n = s["buffer_token_size"].number(low=1, high=(1 << 31) - 1, integer=True)
    m = s["max_chunks"].number(low=1, high=(1 << 32) - 1, integer=True)
    cache = counts(s, "cache_lengths")
    if ("input_row_offsets" in s) == ("input_lengths" in s):
        s.bad("input_row_offsets and input_lengths: not one of them", "give either, not both")
    if "input_row_offsets" in s:
        off = counts(s, "input_row_offsets")
        if len(off) != len(cache) + 1 or any(b < a for a, b in zip(off, off[1:])):
            s["input_row_offsets"].bad(f"not {len(cache) + 1} non-decreasing offsets (batch_size + 1)")
        lens = [off[i + 1] - off[i] for i in range(len(cache))]
    else:
        lens = counts(s, "input_lengths")
        if len(lens) != len(cache):
            s["input_lengths"].bad(f"{len(lens)} values where cache_lengths has {len(cache)}")
    return p, n, m, cache, lens


def expected_block(s: Field):
    p, n, m, cache, lens = batch(s)
    b = len(cache)
    if m * (2 * b + 2) > MAX_CELLS:
        s.bad(f"tables of max_chunks {m:,} x batch size {b:,} are past the {MAX_CELLS:,} cells this script writes",
              "give a smaller scenario (mlaplan run checks a large one)")
    if b == 0:
        return {"buffer_row_offsets": [[0]] * m, "cache_offsets": [[]] * m, "buffer_lengths": [0] * m}
    L = [align_up(c + i, p) for c, i in zip(cache, lens)]
    S = [0]
    for x in L:
        S.append(S[-1] + x)
    e = S[b]
    used = -(-e // n)
    need = max(1, used + (1 if S[b - 1] >= used * n else 0))
    if need > m:
        return {"infeasible": True, "min_max_chunks": need}
    clamp = lambda v, lo, hi: max(lo, min(v, hi))
    return {
        "buffer_row_offsets": [[clamp(S[q] - c * n, 0, n) for q in range(b + 1)] for c in range(m)],
        "cache_offsets": [[clamp(c * n - S[q], 0, L[q]) for q in range(b)] for c in range(m)],
        "buffer_lengths": [min(e - c * n, n) if e > c * n else -1 for c in range(m)],
    }


def dump(doc):
    """JSON with each table row on one line, as the bundled scenarios are written."""
    text = dumps(doc, indent=2)
    # Collapse innermost integer lists onto one line.

    return re.sub(r"\[\s*([-\d,\s]*?)\s*\]", lambda mt: "[" + ", ".join(x.strip() for x in mt.group(1).split(",") if x.strip()) + "]", text) + "\n"


def main():
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare instead of rewriting")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    bad, rewritten = 0, {}
    for path in args.files:
        doc = load(path, WHAT)
        items = doc["scenarios"].list() if "scenarios" in doc else [doc]
        for s in items:
            want = expected_block(s)
            if args.check:
                if s.object().get("expected") != want:
                    name = s.object().get("name", s.where or "the scenario")
                    print(f"{escape(path)}: {escape(name)}: expected block differs from the closed form")
                    bad += 1
            else:
                s.object()["expected"] = want
        if not args.check:
            rewritten[path] = dump(doc.value)
    # Written once every file has read and computed: a bad file leaves all of them as they were.
    write_files(rewritten)
    return 1 if bad else 0


if __name__ == "__main__":
    run(main)
