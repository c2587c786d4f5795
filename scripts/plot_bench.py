#!/usr/bin/env python3
"""Plot `mlaplan bench --format json` output: median latency against batch size, log-log, one
line per kernel (hot mode solid, cold dashed), with the empty-launch floor drawn in.

    scripts/plot_bench.py bench.json -o docs/bench.png        # or .svg
    scripts/plot_bench.py bench.json -o bench.png --mode hot

Exit status: 0 written, 2 bad input, 77 matplotlib is not installed (the test is skipped then).
"""
import os

from plot_common import SKIP, pyplot, save_figure
from script_errors import Parser, fail, load_json, run

NUMBER = (int, float)


class BadInput(Exception):
    pass


def check(data):
    """The rows of a bench JSON document, each with what the plot reads; BadInput names what is wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise BadInput("no \"rows\" list; give the JSON of mlaplan bench --format json")
    if not data["rows"]:
        raise BadInput("no rows to plot; run bench with at least one available kernel")
    for i, r in enumerate(data["rows"]):
        if not isinstance(r, dict) or not isinstance(r.get("kernel"), str) or r.get("mode") not in ("hot", "cold"):
            raise BadInput(f"rows[{i}]: needs \"kernel\" and \"mode\" (hot or cold); give mlaplan bench's JSON as written")
        for key in ("batch_size", "median_us", "p25_us", "p75_us", "bytes"):
            v = r.get(key)
            if isinstance(v, bool) or not isinstance(v, NUMBER) or not v > 0:
                raise BadInput(f"rows[{i}].{key}: {v!r} is not a positive number; give mlaplan bench's JSON as written")
    limits = data.get("limits", {})
    empty = limits.get("empty", {}) if isinstance(limits, dict) else None
    copy = limits.get("copy") if isinstance(limits, dict) else None
    if not isinstance(empty, dict) or not all(
            isinstance(e, dict) and isinstance(e.get("median_us"), NUMBER) and e["median_us"] > 0 for e in empty.values()):
        raise BadInput("limits.empty: each mode needs a positive median_us; give mlaplan bench's JSON as written")
    if copy is not None and (not isinstance(copy, dict) or not isinstance(copy.get("gbps", 0), NUMBER)):
        raise BadInput("limits.copy.gbps: not a number; give mlaplan bench's JSON as written")
    if not isinstance(data.get("settings", {}), dict):
        raise BadInput("settings: not an object; give mlaplan bench's JSON as written")
    return data["rows"]


def main():
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="output of mlaplan bench --format json")
    ap.add_argument("-o", "--output", required=True, help="image to write (.png or .svg)")
    ap.add_argument("--mode", choices=["hot", "cold", "both"], default="both")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()
    if os.path.splitext(args.output)[1].lower() not in (".png", ".svg"):  # matplotlib would pick (or refuse) a format
        fail(f"{args.output}: write a .png or .svg image")

    plt = pyplot()
    if plt is None:
        return SKIP

    data = load_json(args.json, "the JSON of mlaplan bench --format json")
    try:
        rows = check(data)
    except BadInput as e:
        fail(f"{args.json}: {e}")

    modes = ["hot", "cold"] if args.mode == "both" else [args.mode]
    fig, ax = plt.subplots(figsize=(9, 6))
    kernels = []
    for r in rows:
        if r["kernel"] not in kernels:
            kernels.append(r["kernel"])
    colors = {k: plt.get_cmap("tab10")(i % 10) for i, k in enumerate(kernels)}
    for kernel in kernels:
        for mode in modes:
            pts = sorted((r["batch_size"], r["median_us"], r["p25_us"], r["p75_us"])
                         for r in rows if r["kernel"] == kernel and r["mode"] == mode)
            if not pts:
                continue
            x = [p[0] for p in pts]
            y = [p[1] for p in pts]
            ax.plot(x, y, marker="o", markersize=3, color=colors[kernel],
                    linestyle="-" if mode == "hot" else "--", label=f"{kernel} ({mode})")
            ax.fill_between(x, [p[2] for p in pts], [p[3] for p in pts], color=colors[kernel], alpha=0.15, linewidth=0)

    empty = data.get("limits", {}).get("empty", {})
    for mode in modes:
        if mode in empty:
            ax.axhline(empty[mode]["median_us"], color="gray", linestyle=":" if mode == "hot" else "-.", linewidth=1,
                       label=f"empty launch ({mode}) {empty[mode]['median_us']:.2f} us")
    copy = data.get("limits", {}).get("copy")
    if copy and copy.get("gbps"):
        sizes = sorted({r["batch_size"] for r in rows})
        by_size = {r["batch_size"]: r["bytes"] for r in rows}
        ax.plot(sizes, [by_size[s] / copy["gbps"] / 1e3 for s in sizes], color="black", linewidth=1, linestyle=(0, (1, 3)),
                label=f"bytes at copy bandwidth ({copy['gbps']:.0f} GB/s)")

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch size (sequences)")
    ax.set_ylabel("median time per plan (us)")
    s = data.get("settings", {})
    ax.set_title(args.title or f"mlaplan bench on {data.get('device', '?')}: {s.get('distribution', '?')} lengths, "
                 f"max_chunks {s.get('max_chunks', '?')}, page {s.get('page_size', '?')}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return save_figure(fig, args.output, dpi=120)


if __name__ == "__main__":
    run(main)
