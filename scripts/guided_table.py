#!/usr/bin/env python3
"""The measured table of docs/policies.md (`guided` against the best engine on the executor): one row
per report of `python -m mlaplan.calibrate.validate --cost FILE --measured M.json --json R.json`, a
cell per buffer with the best engine's and guided's measured ms, the model's difference between the
same two (eagerly, at the cost file's host speed) and guided's own prediction error. The graph
report's guided is `guided:FILE`, the eager report's `guided/eager:FILE` (the plan chosen by the
timing it is measured at).

    scripts/guided_table.py LABEL=REPORT.json [LABEL=REPORT.json ...]

Prints Markdown on stdout; a bold cell is one where guided measured faster than the best engine.
"""
import sys

from script_errors import Parser, cell, fail, load, run

ENGINES = {"max": "max", "packed": "packed", "even-split": "even split", "even-split/sglang": "SGLang"}
WHAT = "a report of validate --json"


def cells(report):
    timing = report["timing"].text()
    if timing not in ("graph", "eager"):
        report["timing"].bad(f"{timing!r} is neither graph nor eager")
    want = "guided/eager:" if timing == "eager" else "guided:"
    by = {}
    for s in report["settings"].list():
        p = s["policy"].text()
        if p in ENGINES or p.startswith(want):
            key = (s["workload"].text(), s["buffer_tokens"].number(low=1, integer=True))
            got = by.setdefault(key, {})
            name = "guided" if p.startswith(want) else p
            if name in got:
                s["policy"].bad(f"{p!r} twice at {key[1]} rows of {key[0]!r}; give one report per validate run")
            got[name] = s
    if not by:
        report["settings"].bad("no setting of guided or an engine")
    rows = {}
    for (workload, buffer), got in sorted(by.items()):
        engines = {p: s for p, s in got.items() if p in ENGINES}
        if "guided" not in got or not engines:
            fail(f"{report.path}: {workload} at {buffer} rows lacks guided or every engine; validate --policy must name both")
        g = got["guided"]
        # The model's difference as guided chose by it: at the file's host speed where validate scaled
        # each run's host costs by its own CPU probe (predicted_nominal_ms), which moves with the moment.
        price = "predicted_nominal_ms" if "predicted_nominal_ms" in g and all("predicted_nominal_ms" in s for s in engines.values()) \
            else "predicted_ms"
        ms = {p: (s["measured_ms"].number(above=0), s[price].number(above=0)) for p, s in got.items()}
        best = min(engines, key=lambda p: ms[p][0])
        (gm, gp), (bm, bp) = ms["guided"], ms[best]
        measured, model = gm / bm - 1, gp / bp - 1
        text = f"{ENGINES[best]} {bm:.2f} / {gm:.2f} ({measured:+.1%})"
        if measured < 0:
            text = f"**{text}**"
        error = g["error"].number()
        rows.setdefault(workload, []).append(f"{text}; model {model:+.1%}, guided's error {error:+.1%}")
    return rows


def main():
    ap = Parser(prog="scripts/guided_table.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="+", metavar="LABEL=REPORT.json", help="a label and a report of validate --json")
    a = ap.parse_args()
    out = []
    for arg in a.reports:
        label, eq, path = arg.partition("=")
        if not eq or not label or not path:
            fail(f"{arg!r}: give LABEL=REPORT.json")
        rows = cells(load(path, WHAT))
        out += [f"| {cell(label)} | {cell(workload)} | " + " | ".join(row) + " |" for workload, row in rows.items()]
    print("\n".join(out))  # nothing printed unless every report reads


if __name__ == "__main__":
    run(main)
