#!/usr/bin/env python3
"""Plot `mlaplan bench --format json` output: median latency against batch size, log-log, one
line per kernel (hot mode solid, cold dashed), with the empty-launch floor drawn in.

    scripts/plot_bench.py bench.json -o docs/bench.png        # or .svg
    scripts/plot_bench.py bench.json -o bench.png --mode hot

Exit status: 0 written, 2 bad input, 77 matplotlib is not installed (the test is skipped then).
"""
import argparse
import json
import sys

from plot_common import save_figure

SKIP = 77  # ctest SKIP_RETURN_CODE


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="output of mlaplan bench --format json")
    ap.add_argument("-o", "--output", required=True, help="image to write (.png or .svg)")
    ap.add_argument("--mode", choices=["hot", "cold", "both"], default="both")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()

    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_bench: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return SKIP

    try:
        with open(args.json) as f:
            data = json.load(f)
        rows = data["rows"]
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_bench: error: {args.json}: not a mlaplan bench JSON file ({e})", file=sys.stderr)
        return 2
    if not rows:
        print(f"plot_bench: error: {args.json}: no rows to plot; run bench with at least one available kernel", file=sys.stderr)
        return 2

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
    # reason=str: plot_bench's message has always held the whole OSError
    return save_figure(fig, args.output, "plot_bench", reason=str, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
