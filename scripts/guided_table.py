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
import json
import sys

from script_errors import fail, run

ENGINES = {"max": "max", "packed": "packed", "even-split": "even split", "even-split/sglang": "SGLang"}


def cells(report):
    eager = report["timing"] == "eager"
    want = "guided/eager:" if eager else "guided:"
    by = {}
    for s in report["settings"]:
        p = s["policy"]
        if p in ENGINES or p.startswith(want):
            by.setdefault((s["workload"], s["buffer_tokens"]), {})["guided" if p.startswith(want) else p] = s
    rows = {}
    for (workload, buffer), got in sorted(by.items()):
        engines = {p: s for p, s in got.items() if p in ENGINES}
        if "guided" not in got or not engines:
            fail(f"{workload} at {buffer} rows lacks guided or every engine; validate --policy must name both")
        best = min(engines, key=lambda p: engines[p]["measured_ms"])
        g, b = got["guided"], engines[best]
        measured = g["measured_ms"] / b["measured_ms"] - 1
        # The model's difference as guided chose by it: at the file's host speed where validate scaled
        # each run's host costs by its own CPU probe (predicted_nominal_ms), which moves with the moment.
        price = "predicted_nominal_ms" if "predicted_nominal_ms" in g and "predicted_nominal_ms" in b else "predicted_ms"
        model = g[price] / b[price] - 1
        text = f"{ENGINES[best]} {b['measured_ms']:.2f} / {g['measured_ms']:.2f} ({measured:+.1%})"
        if measured < 0:
            text = f"**{text}**"
        rows.setdefault(workload, []).append(f"{text}; model {model:+.1%}, guided's error {g['error']:+.1%}")
    return rows


def main():
    if len(sys.argv) < 2 or any("=" not in a for a in sys.argv[1:]):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = []
    for arg in sys.argv[1:]:
        label, path = arg.split("=", 1)
        try:
            with open(path) as f:
                report = json.load(f)
            rows = cells(report)
        except (OSError, ValueError) as e:
            fail(f"{path}: cannot read it ({e}); give a report of validate --json")
        except (KeyError, TypeError) as e:
            fail(f"{path}: {e} missing or malformed; give a report of validate --json")
        out += [f"| {label} | {workload} | " + " | ".join(row) + " |" for workload, row in rows.items()]
    print("\n".join(out))  # nothing printed unless every report reads


if __name__ == "__main__":
    run(main)
