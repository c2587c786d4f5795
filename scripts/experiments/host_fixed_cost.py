"""Whether a fixed host cost per layer (paid once, before the first launch) improves the eager model:
refits a cost file's host costs on its calibration runs with and without that term (the same robust
least squares as fit.fit_host), then prices held-out runs with each, per workload (median / p90 of
|error|) and the eager / graph ratio at 8K rows within 0.1. A CPU computation on saved runs.

  python scripts/experiments/host_fixed_cost.py COST.json CAL1.json[,CAL2.json] HELDOUT.json ...

The fit's error by how host-bound each calibration run measured is printed too.
"""
import json
import sys
from collections import defaultdict

import numpy as np
from scipy.optimize import least_squares

from mlaplan.calibrate.fit import HOST_LOSS, HOST_SCALE, LAUNCH_KINDS
from mlaplan.calibrate.grid import Point, eager_us, record_sm
from mlaplan.calibrate.validate import predict_us, read_cost

cost = read_cost(sys.argv[1])
g, pad_v = cost["geometry"], cost["host"]["pad_v"]
shape = (g["heads"], g["sms"], g["blocks_per_sm"], g["tile_queries"])
# The host paths alone: per_batch_us (device time before the first launch) taken out, so that a
# fixed host cost h0 delays them and not the device's own sum.
no_batch = dict(cost["coefficients"], per_batch_us=0.0)


def runs(paths):
    return [r for f in paths for r in json.load(open(f))["records"] if r.get("eager_ms") and r.get("graph_ms")]


def priced(records):
    """(point, its compute capability's dispatch, its graph time as validate predicts it) per run."""
    return [(Point(r["cache"], r["new"], r["page_size"], r["buffer_tokens"], r["policy"]), record_sm(r),
             predict_us(cost, r, "graph")) for r in records]


def predict(points, h, h0):
    launch = dict(zip(LAUNCH_KINDS, map(float, h)))
    return np.array([max(graph, h0 + eager_us(p, no_batch, launch, pad_v, *shape, sm, g.get("scheduler", "grid")))
                     for p, sm, graph in points])


calibration = runs(sys.argv[2].split(","))
points, measured = priced(calibration), np.array([r["eager_ms"] * 1e3 for r in calibration])
for fixed in (False, True):
    n = len(LAUNCH_KINDS) + fixed
    f = least_squares(lambda x: predict(points, x[:6], x[6] if fixed else 0.0) / measured - 1, np.full(n, 50.0),
                      bounds=(0, 1e4), diff_step=0.05, loss=HOST_LOSS, f_scale=HOST_SCALE)
    h, h0 = f.x[:6], f.x[6] if fixed else 0.0
    e = np.abs(f.fun)
    print(("with" if fixed else "without") + " a fixed cost: " + " ".join(f"{k} {v:.0f}" for k, v in zip(LAUNCH_KINDS, h))
          + f", per layer {h0:.0f} us; fit median {100 * np.median(e):.1f}%, p90 {100 * np.quantile(e, 0.9):.1f}%")
    # The fit's signed error by how host-bound a run measured (eager / graph).
    ratio = np.array([r["eager_ms"] / r["graph_ms"] for r in calibration])
    print("  by eager / graph: " + "; ".join(
        f"{lo:g}-{hi:g} n={int(m.sum())} median {100 * np.median(f.fun[m]):+.1f}%"
        for lo, hi in ((0, 1.1), (1.1, 1.3), (1.3, 2), (2, 4), (4, float('inf'))) for m in [(ratio >= lo) & (ratio < hi)] if m.any()))
    for path in sys.argv[3:]:
        held = runs([path])
        pp = priced(held)
        got = predict(pp, h, h0)
        errors, ratios = defaultdict(list), defaultdict(list)
        for r, y, (_, _, graph) in zip(held, got, pp):
            errors[r["workload"]].append(abs(y / (r["eager_ms"] * 1e3) - 1))
            if r["buffer_tokens"] == 8192:
                ratios[r["workload"], r["policy"]].append((r["eager_ms"] / r["graph_ms"], y / graph))
        within = sum(abs(np.mean([m for m, _ in v]) - np.mean([p for _, p in v])) <= 0.1 for v in ratios.values())
        print(f"  {path.split('/')[-1]}: " + "; ".join(f"{w} {100 * np.median(v):.1f}% / {100 * np.quantile(v, 0.9):.1f}%"
                                                      for w, v in errors.items())
              + f"; ratio at 8K within 0.1 on {within} of {len(ratios)}")
