"""How the host costs should follow the host CPU's speed: prices held-out eager runs with a cost file
three ways, per workload (median / p90 of |error|): `none`, every run at the file's host speed;
`run`, each run's host costs scaled by its own probe (of the file's kind, `host.probe`) over the
file's `probe_ms` (what validate does); `session`, every run at its measurement's median probe. With --exponent E the file's own
refit (its recorded `python -m mlaplan.calibrate --refit ...` command) is run again with each run
scaled by (probe ratio)^E, and that file prices the runs, each at its own probe, likewise. A CPU
computation on saved runs (docs/cost-model.md, "The host costs").

  python scripts/experiments/probe_scaling.py COST.json MEASURED.json ... [--exponent E ...]
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

import numpy as np

from mlaplan.calibrate import fit
from mlaplan.calibrate.validate import predict_us, read_cost
from saved_runs import Parser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def errors(cost, recs, probe_of):
    """|error| of each run's eager prediction, its probe (of the file's kind) replaced by probe_of(run)."""
    key = fit.PROBES[cost["host"].get("probe", "cpu")]
    return [abs(predict_us(cost, dict(r, **{key: probe_of(r)}), "eager") / 1e3 / r["eager_ms"] - 1) for r in recs]


def refit(cost_path, exponent, out):
    """The cost file's recorded refit, run again with each run's host costs scaled by (ratio)^exponent."""
    with open(cost_path) as f:
        args = shlex.split(json.load(f)["command"])[3:]
    args[args.index("-o") + 1] = out
    code = ("import sys; from mlaplan.calibrate import fit; o = fit.probe_scale; "
            f"fit.probe_scale = lambda *a: o(*a) ** {exponent!r}; "
            "from mlaplan.calibrate.__main__ import entry; sys.exit(entry(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr.strip() or f"the refit of {cost_path} failed")


def main():
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("cost")
    p.add_argument("measured", nargs="+")
    p.add_argument("--exponent", type=float, action="append", default=[])
    args = p.parse_args()
    cost = read_cost(args.cost)
    ref = cost["host"].get("probe_ms")
    key = fit.PROBES[cost["host"].get("probe", "cpu")]  # the probe the file's costs are stated at
    if not ref:
        sys.exit(f"{args.cost}: host.probe_ms: missing; refit it on probed runs")
    refits = {}
    with tempfile.TemporaryDirectory() as tmp:
        for e in args.exponent:
            out = os.path.join(tmp, f"exponent-{e}.json")
            refit(args.cost, e, out)
            refits[e] = read_cost(out)
        print("| measured | workload | runs' median probe, file's | none | per run | session |"
              + "".join(f" refit, ^{e:g} |" for e in args.exponent))
        print("| --- | --- | --- | --- | --- | --- |" + " --- |" * len(args.exponent))
        for path in args.measured:
            with open(path) as f:
                recs = [r for r in json.load(f)["records"] if r.get("eager_ms") and r.get(key)]
            median = float(np.median([r[key] for r in recs]))
            for w in sorted({r["workload"] for r in recs}):
                rs = [r for r in recs if r["workload"] == w]
                cells = [errors(cost, rs, lambda r: ref), errors(cost, rs, lambda r: r[key]),
                         errors(cost, rs, lambda r: median)]
                for e, c in refits.items():
                    scale = fit.probe_scale
                    fit.probe_scale = lambda *a, s=scale, e=e: s(*a) ** e
                    try:
                        cells.append(errors(c, rs, lambda r: r[key]))
                    finally:
                        fit.probe_scale = scale
                text = " | ".join(f"{100 * np.median(x):.1f}%, {100 * np.quantile(x, 0.9):.1f}%" for x in cells)
                print(f"| {os.path.basename(path)} | {w} | {median:.3f}, {ref:.3f} ms | {text} |")


if __name__ == "__main__":
    main()
