"""How much of a cost file's eager error on held-out runs is the measurement's own noise: runs of one
plan (the same scenario, policy, launches and cost terms, at different buffers) should be priced
alike, each at its own probe, so the spread of their signed errors about the group's median is what
no model with these terms and this probe could remove. Prints, per workload, that spread and the
runs' whole error (median / p90 of |error|), and the median signed error (a session's bias, which
the spread leaves out). A CPU computation on saved runs (docs/cost-model.md, "Where it stands").

  python scripts/experiments/same_plan_spread.py COST.json MEASURED.json ...
"""
import json
from collections import defaultdict

import numpy as np

from mlaplan.calibrate.validate import MEASURED_FORMAT, predict_us
from saved_runs import Parser, host_cost, saved_runs


def main():
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cost", help="a cost file with a host section")
    ap.add_argument("measured", nargs="+", help="validate --save files")
    a = ap.parse_args()
    cost = host_cost(a.cost)
    for path in a.measured:
        recs = [r for r in saved_runs(path, MEASURED_FORMAT, "validate --save", a.cost, cost, text_keys=("workload", "scenario"))
                if r.get("eager_ms") and r.get("graph_ms")]
        plans = defaultdict(list)
        for r in recs:
            key = (r["workload"], r["scenario"], r["policy"], r.get("path"), r["iterations"],
                   json.dumps(r.get("launches"), sort_keys=True), round(predict_us(cost, r, "graph"), 3))
            plans[key].append(predict_us(cost, r, "eager") / 1e3 / r["eager_ms"] - 1)
        spread, whole = defaultdict(list), defaultdict(list)
        for key, errs in plans.items():
            e = np.asarray(errs)
            whole[key[0]] += list(e)
            if len(e) > 1:
                spread[key[0]] += list(np.abs(e - np.median(e)))
        print(path)
        for w, e in whole.items():
            e, s = np.asarray(e), np.asarray(spread.get(w, [np.nan]))
            print(f"  {w}: |error| {100 * np.median(np.abs(e)):.1f}% / {100 * np.quantile(np.abs(e), 0.9):.1f}%, "
                  f"median signed {100 * np.median(e):+.1f}%; within one plan ({len(spread.get(w, []))} runs) "
                  f"{100 * np.median(s):.1f}% / {100 * np.quantile(s, 0.9):.1f}%")


if __name__ == "__main__":
    main()
