#!/usr/bin/env python3
"""Plot `mlaplan sweep --format json` output: iterations per batch against buffer size.

One line per policy (and per max_chunks for max) on a log2 buffer axis, the chosen quantile solid
and the mean dashed, max's refusals marked 'x', and the --recommend limit (dotted) and choices (stars)
drawn in when the JSON holds them. A sweep run with --cost gets a second panel under it: the
predicted ms per step on the same buffer axis, a step time that refused batches make infinite
marked 'x' on the panel's top edge.

    mlaplan sweep ... --format json > sweep.json
    scripts/plot_sweep.py sweep.json -o docs/sweep.png        # or .svg
    scripts/plot_sweep.py sweep.json -o sweep.png --stat p90 --title "mooncake, 8K step budget"

Several models or TP degrees in one sweep change only the memory columns, not the iterations, so
each (policy, max_chunks) is drawn once in the iterations panel; their predicted times differ, so
the time panel has a line per (policy, max_chunks, model, TP), a marker per model.

Exit status: 0 written, 2 bad input, 77 matplotlib is not installed (the test is skipped then).
"""
import math
import os
import sys
import textwrap

from plot_common import SKIP, pyplot, save_figure
from script_errors import Parser, escape, fail, load_json, run

STATS = ["p50", "p90", "p99", "max", "mean"]
# Okabe-Ito, yellow last (it is faint on white); markers differ too, so colour is never the only cue.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
MARKERS = ["o", "s", "^", "D", "v", "P", "<", ">"]


class BadInput(Exception):
    pass


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check(data):
    """Raises BadInput with what is wrong; returns the rows."""
    if not isinstance(data, dict):
        raise BadInput("not a mlaplan sweep JSON file (the top level is not an object)")
    if "rows" not in data:
        raise BadInput("not a mlaplan sweep JSON file (no \"rows\"); write it with mlaplan sweep --format json")
    rows = data["rows"]
    if not isinstance(rows, list):
        raise BadInput("\"rows\" is not a list")
    if not rows:
        raise BadInput("no rows to plot; sweep at least one policy and buffer size")
    for i, r in enumerate(rows):
        where = f"rows[{i}]"
        if not isinstance(r, dict):
            raise BadInput(f"{where} is not an object")
        if not isinstance(r.get("policy"), str) or not r["policy"]:
            raise BadInput(f"{where}: \"policy\" is missing or not a string")
        if not is_int(r.get("buffer_tokens")) or r["buffer_tokens"] <= 0:
            raise BadInput(f"{where}: \"buffer_tokens\" is missing or not a positive integer")
        if "max_chunks" in r and r["max_chunks"] is not None and not is_int(r["max_chunks"]):
            raise BadInput(f"{where}: \"max_chunks\" is neither an integer nor null")
        it = r.get("iterations")
        if not isinstance(it, dict):
            raise BadInput(f"{where}: \"iterations\" is missing or not an object")
        for k in STATS:
            if not is_num(it.get(k)) or it[k] < 0:
                raise BadInput(f"{where}: \"iterations.{k}\" is missing or not a non-negative number")
        if "refused_share" in r and not is_num(r["refused_share"]):
            raise BadInput(f"{where}: \"refused_share\" is not a number")
        if "step_ms" in r:  # a quantile refused batches make infinite is left out
            t = r["step_ms"]
            if not isinstance(t, dict):
                raise BadInput(f"{where}: \"step_ms\" is not an object")
            for k in STATS:
                if k in t and (not is_num(t[k]) or t[k] < 0):
                    raise BadInput(f"{where}: \"step_ms.{k}\" is not a non-negative number")
    rec = data.get("recommendation")
    if rec is not None:
        if not isinstance(rec, dict):
            raise BadInput("\"recommendation\" is not an object")
        if rec.get("objective", "iterations") not in ("iterations", "time"):
            raise BadInput("\"recommendation.objective\" is neither \"iterations\" nor \"time\"")
        target = "within" if rec.get("objective") == "time" else "max_iterations"
        if not is_num(rec.get(target)):
            raise BadInput(f"\"recommendation.{target}\" is missing or not a number")
        if not isinstance(rec.get("groups", []), list):
            raise BadInput("\"recommendation.groups\" is not a list")
        for i, g in enumerate(rec.get("groups", [])):
            where = f"recommendation.groups[{i}]"
            if not isinstance(g, dict):
                raise BadInput(f"{where} is not an object")
            row = g.get("row")
            if row is not None and (not is_int(row) or not 0 <= row < len(rows)):
                raise BadInput(f"{where}: \"row\" {row!r} is not an index into rows (0..{len(rows) - 1})")
            bt = g.get("buffer_tokens")
            if bt is not None and not is_int(bt):
                raise BadInput(f"{where}: \"buffer_tokens\" is neither an integer nor null")
            if row is not None and bt is not None and rows[row]["buffer_tokens"] != bt:
                raise BadInput(f"{where}: \"buffer_tokens\" {bt} is not the buffer of rows[{row}] "
                               f"({rows[row]['buffer_tokens']})")
    return rows


def tokens_label(n):
    """4096 -> 4K, 1048576 -> 1M, 1536 -> 1.5K, 1000 -> 1000."""
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            v = n / scale
            if v == int(v):
                return f"{int(v)}{unit}"
            if (v * 10) == int(v * 10):
                return f"{v:.1f}{unit}"
    return str(n)


def quantile_name(q):
    """The recommendation's quantile: a number in (0, 1] as the C++ writes it (0.99 -> p99, 1 -> max),
    or already a name."""
    if isinstance(q, str):
        return q
    if is_num(q):
        return "max" if q >= 1 else f"p{q * 100:g}"
    return "?"


def describe_cost(c):
    """A cost model as CostModel::describe() says it: "NVIDIA H200, flash attention, ..."."""
    s = f"{c.get('gpu', '?')}, {c.get('attention', '?')} attention"
    if c.get("merge"):
        s += f", {c['merge']} merge"
    if c.get("timing"):
        s += f", {c['timing']} timing"
    return s + f", calibrated {c.get('date', '?')}"


def series_key(r):
    return (r["policy"], r.get("max_chunks"))


def series_label(key):
    policy, m = key
    return f"{policy} M={m}" if m is not None else policy


def model_key(r):
    return (r.get("model"), r.get("tp"))


def model_text(mk):
    return f"{mk[0]} TP{mk[1]}" if mk[0] is not None else ""


def models_text(mks):
    """[(deepseek-v2-lite, 1), (deepseek-v2-lite, 8)] -> "deepseek-v2-lite TP1/TP8"."""
    by = {}
    for name, tp in mks:
        by.setdefault(name, []).append(f"TP{tp}")
    return ", ".join(f"{name} {'/'.join(tps)}" for name, tps in by.items())


def describe(pairs, keys, models):
    """(series, model) pairs, shortest: the series with the same models in one clause, the models
    left out when all are in, "all but ..." when fewer are out than in, "every group" when all are."""
    pairs = set(pairs)
    if len(pairs) == len(keys) * len(models):
        return "every group"
    clauses = {}  # models (in sweep order) -> series with exactly those
    for k in keys:
        mine = tuple(mk for mk in models if (k, mk) in pairs)
        if mine:
            clauses.setdefault(mine, []).append(k)
    parts = []
    for mine, series in clauses.items():
        names = "every policy" if len(series) == len(keys) else ", ".join(series_label(k) for k in series)
        missing = [mk for mk in models if mk not in mine]
        if not missing:
            parts.append(names)
        elif len(missing) < len(mine):
            parts.append(f"{names} (all but {models_text(missing)})")
        else:
            parts.append(f"{names} ({models_text(mine)})")
    return "; ".join(parts)


def group_pair(name, keys, models):
    """A failing group's (series, model) from its name ("max M=16 deepseek-v3 TP8"), or None."""
    for k in sorted(keys, key=lambda k: -len(series_label(k))):  # "max M=16" before "max"
        base = series_label(k)
        if name == base or name.startswith(base + " "):
            rest = name[len(base):].strip()
            for mk in models:
                if model_text(mk) == rest:
                    return (k, mk)
    return None


def plot_times(tax, rows, keys, models, style, stat, rec):
    """The time panel: predicted ms per step (`stat` solid, mean dashed) per (policy, M, model, TP),
    refusals' infinite times as 'x' on the top edge, and with --objective time the choices starred."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    handles = []
    values = [r["step_ms"][k] for r in rows if "step_ms" in r for k in (stat, "mean") if k in r["step_ms"]]
    never = False
    for i, k in enumerate(keys):
        color = style[k][0]
        for j, mk in enumerate(models):
            pts = sorted(((r["buffer_tokens"], r) for r in rows
                          if "step_ms" in r and series_key(r) == k and model_key(r) == mk), key=lambda p: p[0])
            if not pts:
                continue
            marker = style[k][1] if j == 0 else MARKERS[(i + j) % len(MARKERS)]
            x = [n for n, _ in pts]
            y = [r["step_ms"].get(stat, math.nan) for _, r in pts]  # NaN: a gap where the time is infinite
            mean = [r["step_ms"].get("mean", math.nan) for _, r in pts]
            label = series_label(k) + (f" {model_text(mk)}" if len(models) > 1 else "")
            tax.plot(x, mean, color=color, linestyle="--", linewidth=1.2, alpha=0.55, zorder=2,
                     marker="_" if len(x) == 1 else None, markersize=14)
            (h,) = tax.plot(x, y, color=color, marker=marker, markersize=5, linewidth=2, label=label, zorder=3 + i * 0.01)
            if len(models) > 1:  # else the upper legend names the lines already
                handles.append(h)
            rx = [n for n, r in pts if r.get("refused_share", 0) > 0 and stat in r["step_ms"]]
            tax.scatter(rx, [r["step_ms"][stat] for n, r in pts if n in rx], marker="x", s=110, linewidths=2.2,
                        color=color, zorder=5)
            inf = [n for n, r in pts if stat not in r["step_ms"]]
            if inf:
                never = True
                tax.scatter(inf, [0.97] * len(inf), marker="x", s=110, linewidths=2.2, color=color, zorder=5,
                            transform=tax.get_xaxis_transform(), clip_on=False)
    if rec is not None and rec.get("objective") == "time":
        for g in rec.get("groups", []):
            r = rows[g["row"]] if g.get("row") is not None else None
            if r is not None and stat in r.get("step_ms", {}):
                tax.scatter([r["buffer_tokens"]], [r["step_ms"][stat]], marker="*", s=330, color=style[series_key(r)][0],
                            edgecolors="black", linewidths=0.8, zorder=6)

    positive = [v for v in values if v > 0]
    log_y = positive and max(positive) / min(positive) > 8  # as the C++ chart: log when the times span past 8x
    if log_y:
        tax.set_yscale("log")
        tax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        tax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        tax.yaxis.set_minor_formatter(NullFormatter())
        tax.set_ylim(min(positive) / 1.15, max(positive) * (1.6 if never else 1.15))
    else:
        tax.set_ylim(0, max(values + [1e-3]) * (1.2 if never else 1.08))
    tax.set_ylabel(f"predicted ms per step ({stat} solid, mean dashed{'; log scale' if log_y else ''})")
    if never:
        handles.append(Line2D([], [], linestyle="none", marker="x", markersize=9, markeredgewidth=2, color="#444444",
                              label=f"x on the top edge: {stat} never done (refused batches)"))
    tax.grid(True, which="major", alpha=0.3)
    if handles:
        tax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
                   frameon=False)


def main():
    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="output of mlaplan sweep --format json (or --json FILE)")
    ap.add_argument("-o", "--output", required=True, help="image to write (.png or .svg)")
    ap.add_argument("--stat", choices=STATS, default="p99", help="the solid line (default p99; the mean is drawn dashed)")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()

    ext = os.path.splitext(args.output)[1].lower()
    if ext not in (".png", ".svg"):
        fail(f"{args.output}: write a .png or .svg image")
    data = load_json(args.json, "the JSON of mlaplan sweep --format json")
    try:
        rows = check(data)
    except BadInput as e:
        fail(f"{args.json}: {e}")

    plt = pyplot()
    if plt is None:
        return SKIP
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator

    # One point per (policy, M, N): the first row; later models/TPs repeat the same iterations.
    keys, points, models = [], {}, []
    differ = set()
    for r in rows:
        k = series_key(r)
        if k not in keys:
            keys.append(k)
        if model_key(r) not in models:
            models.append(model_key(r))
        pk = (k, r["buffer_tokens"])
        if pk not in points:
            points[pk] = r
        elif points[pk]["iterations"] != r["iterations"]:
            differ.add(series_label(k))
    if differ:
        print(f"mlaplan: warning: {os.path.basename(sys.argv[0])}: {escape(args.json)}: iterations differ across models/TPs for "
              f"{escape(', '.join(sorted(differ)))}; "
              "plotting the first row of each", file=sys.stderr)
    several_models = len(models) > 1
    style = {k: (COLORS[i % len(COLORS)], MARKERS[i % len(MARKERS)]) for i, k in enumerate(keys)}

    curve = {k: {n: r["iterations"][args.stat] for (kk, n), r in points.items() if kk == k} for k in keys}

    def same(a, b):  # the later line b covers a on at least half of a's points
        hits = sum(1 for n, v in curve[a].items() if n in curve[b] and abs(curve[b][n] - v) <= 0.02 * max(1, v))
        return hits * 2 >= len(curve[a])

    covered_by = {a: sum(1 for b in keys[i + 1:] if same(a, b)) for i, a in enumerate(keys)}

    timed = any("step_ms" in r for r in rows)
    if timed:
        fig, (ax, tax) = plt.subplots(2, 1, figsize=(10, 11), sharex=True)
    else:
        fig, ax = plt.subplots(figsize=(10, 6))
    handles = []
    peak = 0.0
    refusers = set()
    for i, k in enumerate(keys):
        color, marker = style[k]
        pts = sorted(((n, r) for (kk, n), r in points.items() if kk == k), key=lambda p: p[0])
        x = [n for n, _ in pts]
        y = [r["iterations"][args.stat] for _, r in pts]
        mean = [r["iterations"]["mean"] for _, r in pts]
        peak = max(peak, max(y), max(mean))
        label = series_label(k)
        refused_at = [n for n, r in pts if r.get("refused_share", 0) > 0]
        if refused_at:
            label += f" (refuses at {tokens_label(max(refused_at))} and below)" if refused_at == x[:len(refused_at)] \
                else f" (refuses at {', '.join(tokens_label(n) for n in refused_at)})"
        # A line that a later one covers is drawn wider, so it still shows (max's iterations do not
        # depend on M: it counts a refused batch at the chunks it needs; packed often matches max too).
        width = 2.0 + 1.5 * min(3, covered_by[k])
        (h,) = ax.plot(x, y, color=color, marker=marker, markersize=3 + width, linewidth=width, label=label,
                       zorder=3 + i * 0.01)
        handles.append(h)
        if args.stat != "mean":
            ax.plot(x, mean, color=color, linestyle="--", linewidth=1.2, alpha=0.55, zorder=2,
                    marker="_" if len(x) == 1 else None, markersize=14)  # one buffer: a dash shows the mean
        rx = [(n, r["iterations"][args.stat]) for n, r in pts if r.get("refused_share", 0) > 0]
        if rx:
            refusers.add(k[0])
            ax.scatter([p[0] for p in rx], [p[1] for p in rx], marker="x", s=110, linewidths=2.2, color=color, zorder=5)

    # The recommendation: limit K and, per group, its buffer on its line.
    rec = data.get("recommendation")
    none_qualify = []  # (series, model) pairs, or group names not matched to one
    if rec is not None:
        qname = quantile_name(rec.get("quantile"))
        budget = rec.get("memory_budget_bytes")
        if rec.get("objective") == "time":  # no K: the target is a step time
            klabel = f"recommend: {qname} step time within {100 * rec['within']:g}% of the best; \u2605 the smallest buffer that meets it"
        else:
            kmax = rec["max_iterations"]
            klabel = f"recommend: at most {kmax:g} iteration{'' if kmax == 1 else 's'} at {qname}; \u2605 the smallest buffer that meets it"
        if is_num(budget):
            klabel += f", memory within {budget / (1 << 30):.3g} GiB"
        if rec.get("objective") == "time":
            handles.append(Line2D([], [], linestyle="none", label="\n".join(textwrap.wrap(klabel, 52))))
        else:
            handles.append(ax.axhline(kmax, color="#555555", linestyle=":", linewidth=1.6, zorder=1,
                                      label="\n".join(textwrap.wrap(klabel, 52))))
            peak = max(peak, kmax)
        chosen = {}  # buffer -> (series, model) pairs that recommend it
        for g in rec.get("groups", []):
            if g.get("row") is None:
                pair = group_pair(str(g.get("group", "")), keys, models)
                none_qualify.append(pair if pair else str(g.get("group", "?")))
                continue
            r = rows[g["row"]]
            chosen.setdefault(r["buffer_tokens"], []).append((series_key(r), model_key(r)))
        for n in sorted(chosen):
            series = [k for k in keys if any(p[0] == k for p in chosen[n])]
            fill = style[series[0]][0] if len(series) == 1 else "white"  # several lines: no one colour
            for k in series:  # a star on each line that recommends n; the legend names them
                y = points[(k, n)]["iterations"][args.stat]
                ax.scatter([n], [y], marker="*", s=330, color=fill, edgecolors="black", linewidths=0.8, zorder=6)
            text = f"{tokens_label(n)}: " + describe(chosen[n], keys, models)
            handles.append(Line2D([], [], linestyle="none", marker="*", markersize=13, color=fill,
                                  markeredgecolor="black", label="\n".join(textwrap.wrap(text, 52))))
        if none_qualify:
            pairs = [g for g in none_qualify if isinstance(g, tuple)]
            names = [g for g in none_qualify if not isinstance(g, tuple)]
            who = "; ".join(([describe(pairs, keys, models)] if pairs else []) + names)
            text = "no buffer in the sweep qualifies for " + who
            handles.append(Line2D([], [], linestyle="none", label="\n".join(textwrap.wrap(text, 52))))

    # Keys for the line styles, after the series.
    stat_name = "mean" if args.stat == "mean" else args.stat
    handles.append(Line2D([], [], color="#444444", linewidth=2, label=f"solid: {stat_name} iterations per batch"))
    if args.stat != "mean":
        handles.append(Line2D([], [], color="#444444", linewidth=1.2, linestyle="--", alpha=0.55, label="dashed: mean"))
    if refusers:
        who = "max" if refusers == {"max"} else ", ".join(sorted(refusers))
        handles.append(Line2D([], [], linestyle="none", marker="x", markersize=9, markeredgewidth=2, color="#444444",
                              label=f"x: {who} refuses some batches"))

    # x: the swept buffer sizes on a log2 axis, labelled 4K, 64K, 1M.
    ax.set_xscale("log", base=2)
    sizes = sorted({n for (_, n) in points})
    step = max(1, math.ceil(len(sizes) / 12))
    ticks = sizes[::step]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: tokens_label(int(round(v)))))
    ax.xaxis.set_minor_locator(NullLocator())
    if len(sizes) > 1:
        ax.set_xlim(sizes[0] / 2 ** 0.3, sizes[-1] * 2 ** 0.3)
    else:
        ax.set_xlim(sizes[0] / 2, sizes[0] * 2)
    if timed:
        ax.tick_params(labelbottom=True)  # both panels labelled, so neither needs the other to be read
        plot_times(tax, rows, keys, models, style, args.stat, rec)
        tax.set_xlabel("buffer size (buffer_token_size, tokens)")
    else:
        ax.set_xlabel("buffer size (buffer_token_size, tokens)")

    # y: log past 50 iterations, else linear with integer ticks from 0.
    if peak > 50:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_ylim(0, max(2.0, peak) * 1.12)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(f"iterations per batch ({stat_name})")

    if args.title:
        title = args.title
    else:
        head = f"mlaplan sweep: {data.get('source', '?')}, {data.get('batches', '?')} batches"
        if not several_models and models[0][0] is not None:
            head += f"; {models[0][0]} TP{models[0][1]}"
        costs = data.get("costs") if isinstance(data.get("costs"), list) else []
        cost_text = [f"predicted by cost model {c.get('model', '?')} TP{c.get('tp', '?')}: {describe_cost(c)}"
                     for c in costs if isinstance(c, dict)] if timed else []
        title = "\n".join(textwrap.wrap(head, 90) + textwrap.wrap(str(data.get("formation", "")), 90) +
                          [line for text in cost_text for line in textwrap.wrap(text, 110)])
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
              frameon=False)
    return save_figure(fig, args.output, dpi=120, bbox_inches="tight")


if __name__ == "__main__":
    run(main)
