"""Whether the host costs are the model's or the host's: one set of costs per launch kind fitted on
the host runs of several cost files at once (each file's --host-from runs, as its `command` records
them; each run priced with its own file's graph coefficients and geometry, at its own dispatch probe
against the runs' median), as fit.fit_host fits one file's. Prints the joint costs beside each file's,
each file's in-sample error under both, and, for each held-out measurements file given, validate's
eager error per workload under the file's own costs and under the joint ones. The executor's loop is
the same whatever the model (only the tensors' sizes differ), so where the joint costs price every
held-out set as well as each file's own, what a file misses is not its host costs' fit. A CPU
computation on saved runs (docs/cost-model.md, "Eager time").

  python scripts/experiments/joint_host_fit.py COST.json COST.json ... [--heldout MEASURED.json ...]
"""
import json
import os
import shlex

import numpy as np
from scipy.optimize import least_squares

from mlaplan.calibrate.__main__ import MEASUREMENTS_FORMAT
from mlaplan.calibrate.fit import HOST_LOSS, HOST_SCALE, LAUNCH_KINDS
from mlaplan.calibrate.validate import MEASURED_FORMAT, cost_kernel, predict_us, report
from saved_runs import Parser, fail, host_cost, measurements, runs_priced_by, saved_runs, with_host_costs
from refit_host import recorded_options  # scripts/, on the path saved_runs puts it

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def host_runs(path: str, cost: dict) -> list:
    """The runs the file's host section was fitted on: its command's --host-from files (calibrate
    names them from the checkout's root; calibrate's own runs or held-out runs validate saved), read as
    scripts/refit_host.py reads them."""
    runs = [os.path.join(ROOT, a) for a in recorded_options(shlex.split(cost.get("command") or "")[3:])[1]]
    if not runs:
        fail(f"{path}: command: no --host-from runs; give files whose host section was refitted on host runs")
    return runs


def main():
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("costs", nargs="+", metavar="COST.json", help="cost files of one host, kernel stack and probe")
    ap.add_argument("--heldout", nargs="+", default=[], metavar="MEASURED.json", help="validate --save files to price")
    a = ap.parse_args()
    costs = {}
    for path in a.costs:
        cost = host_cost(path)
        # read_cost drops the command; the file's own JSON has it (the reader has checked the rest).
        with open(path) as f:
            cost["command"] = json.load(f).get("command")
        if cost["host"].get("probe") != "dispatch":
            fail(f"{path}: host.probe: not dispatch; the joint fit states every file's costs at one dispatch probe")
        if costs and cost_kernel(cost) != cost_kernel(next(iter(costs.values()))):
            fail(f"{path}: kernels.attention: {cost_kernel(cost)}, but {next(iter(costs))} has "
                 f"{cost_kernel(next(iter(costs.values())))}; each kernel's Python costs the host its own, give files of one")
        costs[path] = cost
    points = []  # (cost file, run)
    for path, cost in costs.items():
        for runs in host_runs(path, cost):
            points += [(path, r) for r in saved_runs(runs, (MEASUREMENTS_FORMAT, MEASURED_FORMAT),
                                                        "calibrate --measurements or validate --save", path, cost)
                       if r.get("eager_ms") and r.get("graph_ms") and r.get("dispatch_probe_ms")]
    probe_ms = float(np.median([r["dispatch_probe_ms"] for _, r in points]))
    y = np.asarray([r["eager_ms"] * 1e3 for _, r in points])

    def residuals(h):
        us = dict(zip(LAUNCH_KINDS, (float(v) for v in h)))
        shared = {path: with_host_costs(cost, us, probe_ms) for path, cost in costs.items()}
        return np.asarray([predict_us(shared[path], r, "eager") for path, r in points]) / y - 1

    f = least_squares(residuals, np.full(len(LAUNCH_KINDS), 50.0), bounds=(0.0, 1e4), diff_step=0.05, loss=HOST_LOSS,
                      f_scale=HOST_SCALE)
    joint = dict(zip(LAUNCH_KINDS, (float(v) for v in f.x)))
    print(f"joint fit: {len(points)} runs of {len(costs)} files, us per launch at a dispatch probe of {probe_ms:.3f} ms: "
          + ", ".join(f"{k} {v:.0f}" for k, v in joint.items()))
    for path, cost in costs.items():
        h = cost["host"]
        own = {k: v * probe_ms / h["probe_ms"] for k, v in h["launch_us"].items()}  # restated at the joint probe
        mine = np.asarray([e for e, pt in zip(f.fun, points) if pt[0] == path])
        print(f"  {path}: its own at that probe " + ", ".join(f"{k} {v:.0f}" for k, v in own.items())
              + f"; its {mine.size} runs under the joint costs |error| {100 * np.median(np.abs(mine)):.1f}% / "
              f"{100 * np.quantile(np.abs(mine), 0.9):.1f}% (median signed {100 * np.median(mine):+.1f}%)")
    for path in a.heldout:
        doc = measurements(path, MEASURED_FORMAT, "validate --save", ("workload", "scenario"))
        match = [c for c in costs if costs[c]["model"] == doc.get("model") and costs[c]["tp"] == doc.get("tp")]
        if not match:
            fail(f"{path}: model: {doc.get('model')!r} at TP {doc.get('tp')}: none of the cost files prices it")
        cost = costs[match[0]]
        recs = runs_priced_by(doc, path, match[0], cost)
        shared = with_host_costs(cost, joint, probe_ms)
        print(f"{path} (priced by {match[0]}), eager |error| median / p90 per workload, its own costs -> the joint ones:")
        own, together = report(cost, recs, "eager")["workloads"], report(shared, recs, "eager")["workloads"]
        for w in own:
            print(f"  {w}: {100 * own[w]['median_abs_error']:.1f}% / {100 * own[w]['p90_abs_error']:.1f}% -> "
                  f"{100 * together[w]['median_abs_error']:.1f}% / {100 * together[w]['p90_abs_error']:.1f}%")


if __name__ == "__main__":
    main()
