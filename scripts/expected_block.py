#!/usr/bin/env python3
"""Fill in a scenario's `expected` block from the closed-form properties of semantics.md.

This is an implementation independent of the C++ reference (it uses the clamp formulas, not the
seed's loop), so golden files made with it cross-check the reference rather than echo it.

    scripts/expected_block.py scenarios/foo.json          # rewrite the file in place
    scripts/expected_block.py --check scenarios/*.json    # exit 1 if any expected block differs
"""
import argparse
import json
import re

from script_errors import Parser, load_json, run


def align_up(x, p):
    return (x + p - 1) // p * p


def expected_block(s):
    p, n, m = s["page_size"], s["buffer_token_size"], s["max_chunks"]
    cache = s["cache_lengths"]
    if "input_row_offsets" in s:
        off = s["input_row_offsets"]
        lens = [off[i + 1] - off[i] for i in range(len(cache))]
    else:
        lens = s["input_lengths"]
    b = len(cache)
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
    text = json.dumps(doc, indent=2)
    # Collapse innermost integer lists onto one line.

    return re.sub(r"\[\s*([-\d,\s]*?)\s*\]", lambda mt: "[" + ", ".join(x.strip() for x in mt.group(1).split(",") if x.strip()) + "]", text) + "\n"


def main():
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare instead of rewriting")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    bad = 0
    for path in args.files:
        doc = load_json(path, "a scenario file")
        items = doc["scenarios"] if "scenarios" in doc else [doc]
        for s in items:
            want = expected_block(s)
            if args.check:
                if s.get("expected") != want:
                    print(f"{path}: {s.get('name')}: expected block differs from the closed form")
                    bad += 1
            else:
                s["expected"] = want
        if not args.check:
            with open(path, "w") as f:
                f.write(dump(doc))
    return 1 if bad else 0


if __name__ == "__main__":
    run(main)
