#!/usr/bin/env python3
"""Do two `mlaplan bench` runs agree? For each row (batch size, kernel, mode) in both JSON reports,
the medians agree when they differ by no more than the wider of the two reported spreads
((max - min) / median, times the median). Prints the rows that disagree and the share that agree;
exits 1 when that share is under --min-agree (default 95%).

    scripts/compare_bench.py run1.json run2.json [--kernels max-port,fast,graph] [--min-agree 95]

A report from before 2026-12-01 names the max-port kernel seed: it is read (and --kernels taken) as
max-port, so old and new runs compare row for row.
"""

from script_errors import Parser, escape, fail, load, run


def kernel_name(name):
    return "max-port" if name == "seed" else name


def rows(path):
    out = {}
    for r in load(path, "a report of mlaplan bench --format json")["rows"].list():
        key = (r["batch_size"].number(low=1, integer=True), kernel_name(r["kernel"].text()), r["mode"].text())
        out[key] = {"median_us": r["median_us"].number(above=0), "spread": r["spread"].number(low=0)}
    return out


def percent(text):
    v = float(text)
    if not 0 <= v <= 100:  # nan fails too
        raise ValueError(text)
    return v


def main():
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--kernels", help="comma-separated: compare only these kernels' rows")
    parser.add_argument("--min-agree", type=percent, default=95.0, help="percent of rows that must agree, 0 to 100 (95)")
    args = parser.parse_args()
    a, b = rows(args.first), rows(args.second)
    wanted = {kernel_name(k) for k in args.kernels.split(",")} if args.kernels else None
    keys = sorted(k for k in a.keys() & b.keys() if wanted is None or k[1] in wanted)
    if not keys:
        fail("the two reports share no rows; compare runs of the same sizes, kernels and modes")
    agree = 0
    for key in keys:
        x, y = a[key], b[key]
        gap = abs(x["median_us"] - y["median_us"])
        allowed = max(x["spread"] * x["median_us"], y["spread"] * y["median_us"])
        if gap <= allowed:
            agree += 1
        else:
            print(f"differ: B={key[0]} {escape(key[1])} {escape(key[2])}: {x['median_us']:.4g} vs {y['median_us']:.4g} us "
                  f"(gap {100 * gap / x['median_us']:.1f}%, spreads {100 * x['spread']:.1f}% / {100 * y['spread']:.1f}%)")
    share = 100.0 * agree / len(keys)
    print(f"{agree} of {len(keys)} rows agree within the reported spread ({share:.1f}%; at least {args.min_agree:g}% wanted)")
    return 0 if share >= args.min_agree else 1


if __name__ == "__main__":
    run(main)
