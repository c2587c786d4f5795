"""A cost file's host costs against the launch stamps of saved runs (records with host_launch_us,
which calibrate and validate record on the GPU): per kind, the file's microseconds per launch beside
the stamps' (the median over the runs, each run's scaled to the file's probe), and per workload the
eager error (median / p90 of |error|, median signed) three ways: the file's costs at each run's
probe, the stamps' median at each run's probe, and each run's own stamps. Where the run's own stamps
price its eager time no better than the file does, the two clocks' device side, not the host's
costs, is what is off. Per workload also the layer's issue time as stamped over the file's host costs
summed over its launches, and its dispatch timed alone behind a sleeping GPU (host_ms) over that issue
time: on the calibration runs so far host_ms was 1.3-1.5x the file's sum at the median. And the eager /
graph ratio of the host-bound settings (validate's ratio check: 8,192 rows and below, within 0.1),
predicted with the file's costs and with each run's own stamps: where even a run's own host costs
miss the measured ratio, no host section can meet the check on those runs. A CPU computation on
saved runs (docs/cost-model.md, "Eager time").

  python scripts/experiments/launch_stamps.py COST.json MEASURED.json ...
"""
from collections import defaultdict

import numpy as np

from mlaplan.calibrate.fit import LAUNCH_KINDS, probe_scale, stamped_us
from mlaplan.calibrate.__main__ import MEASUREMENTS_FORMAT
from mlaplan.calibrate.validate import MEASURED_FORMAT, RATIO_BUFFER, RATIO_TOLERANCE, predict_us, ratio_check
from saved_runs import Parser, escape, fail, host_cost, run, saved_runs, with_host_costs

FORMATS = (MEASURED_FORMAT, MEASUREMENTS_FORMAT)


def stats(e) -> str:
    e = np.asarray(e)
    return f"{100 * np.median(np.abs(e)):.1f}% / {100 * np.quantile(np.abs(e), 0.9):.1f}% ({100 * np.median(e):+.1f}%)"


def main():
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cost", help="a cost file with a host section")
    ap.add_argument("measured", nargs="+", help="validate --save or calibrate --measurements files")
    a = ap.parse_args()
    cost = host_cost(a.cost)
    h = cost["host"]
    probe = h.get("probe") or "cpu"
    for path in a.measured:
        recs = [r for r in saved_runs(path, FORMATS, "validate --save or calibrate --measurements", a.cost, cost) if r.get("eager_ms") and r.get("graph_ms") and r.get("host_launch_us")]
        if not recs:
            fail(f"{path}: no run with eager and graph times and launch stamps (host_launch_us); "
                 f"give runs measured on the GPU by this version")
        median = stamped_us(recs, h.get("probe_ms"), probe, [h["launch_us"][k] for k in LAUNCH_KINDS])
        stamps = with_host_costs(cost, median, h.get("probe_ms"))  # each run priced at its own probe
        print(f"{escape(path)}: {len(recs)} runs")
        print("  us per launch at the file's probe: " + ", ".join(
            f"{k} {h['launch_us'][k]:.0f} (stamps {median[k]:.0f})" for k in LAUNCH_KINDS))
        by = defaultdict(lambda: defaultdict(list))
        # Each workload's runs with their eager time predicted by the file's costs and by their own
        # stamps, for validate's ratio check.
        priced = defaultdict(lambda: defaultdict(list))
        for r in recs:
            w = r.get("workload") or "grid"
            scale = probe_scale(r, h.get("probe_ms"), probe)
            own = {k: r["host_launch_us"].get(k, median[k] * scale) for k in LAUNCH_KINDS}
            file_ms = predict_us(cost, r, "eager") / 1e3
            own_ms = predict_us(with_host_costs(cost, own, None), r, "eager") / 1e3
            by[w]["file"].append(file_ms / r["eager_ms"] - 1)
            by[w]["stamps"].append(predict_us(stamps, r, "eager") / 1e3 / r["eager_ms"] - 1)
            by[w]["own"].append(own_ms / r["eager_ms"] - 1)
            priced[w]["file"].append(dict(r, workload=w, predicted_ms=file_ms))
            priced[w]["own"].append(dict(r, workload=w, predicted_ms=own_ms))
            by[w]["graph"].append(predict_us(cost, r, "graph") / 1e3 / r["graph_ms"] - 1)
            # The layer's issue time as stamped, against the file's host costs summed over its launches,
            # and against its dispatch timed alone behind a sleeping GPU (host_ms).
            fitted_us = sum(h["launch_us"][k] * scale * n for k, n in (r.get("launches") or {}).items())
            if r.get("host_issue_ms") and fitted_us:
                by[w]["issue"].append(r["host_issue_ms"] * 1e3 / fitted_us)
            if r.get("host_issue_ms") and r.get("host_ms"):
                by[w]["alone"].append(r["host_ms"] / r["host_issue_ms"])
        for w, e in by.items():
            print(f"  {escape(w)} ({len(e['file'])} runs), |error| median / p90 (signed median): the file's {stats(e['file'])}, "
                  f"the stamps' {stats(e['stamps'])}, each run's own {stats(e['own'])}; graph {stats(e['graph'])}")
            if e["issue"] and e["alone"]:
                print(f"    issue time stamped over the file's host costs summed: median {np.median(e['issue']):.3f}; "
                      f"dispatch timed alone over it: median {np.median(e['alone']):.3f}")
            file_ratio, own_ratio = (ratio_check(cost, priced[w][k]) for k in ("file", "own"))
            if file_ratio["settings"]:
                # The measured ratios' range, each setting's as ratio_check takes it (its runs' eager over their graph).
                sums = defaultdict(lambda: np.zeros(2))
                for r in priced[w]["file"]:
                    if r["buffer_tokens"] <= RATIO_BUFFER:
                        sums[r["policy"], r["buffer_tokens"]] += (r["eager_ms"], r["graph_ms"])
                measured = [e / g for e, g in sums.values()]
                print(f"    eager / graph ratio within {RATIO_TOLERANCE:g} at {RATIO_BUFFER} rows and below: the file's at "
                      f"{file_ratio['within']} of {file_ratio['settings']} settings, each run's own stamps at "
                      f"{own_ratio['within']} (measured {min(measured):.2f}-{max(measured):.2f})")


if __name__ == "__main__":
    run(main)
