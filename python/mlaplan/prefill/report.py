"""The command's output: a table per batch and the finding (the fastest policy and buffer), or JSON.
`host ms` is eager minus graph: the time the GPU waits for the host's dispatch in the eager loop.
Where a peak was measured (roofline.peak) a second table per batch sets each part's measured time
against its limit at that peak."""
from __future__ import annotations

import json
from typing import Dict, List, Optional

from .._mlaplan import printable
from .measure import Run
from .roofline import Peak

PART_COLUMNS = (("gather", "gather"), ("up-projection", "up-proj"), ("attention", "attn"), ("merge", "merge"),
                ("new tokens", "new"))


def _ms(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.3f}"


def _err(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.1e}"


def _how(r: Run) -> str:
    return f"{r.iterations} iterations" if r.iterations else f"{r.path} path"


def fastest(runs: List[Run]) -> Optional[Run]:
    timed = [r for r in runs if r.eager_ms is not None and r.ok is not False]
    return min(timed, key=lambda r: r.eager_ms) if timed else None


def finding(runs: List[Run]) -> List[str]:
    """The fastest (policy, buffer) by eager time, and each other policy's best against it."""
    best = fastest(runs)
    if best is None:
        return []
    lines = [f"fastest: {best.policy} at {best.buffer_tokens:,} rows, {best.eager_ms:.3f} ms ({_how(best)})"]
    for policy in dict.fromkeys(r.policy for r in runs):
        own = fastest([r for r in runs if r.policy == policy])
        if own is None or own.policy == best.policy:
            continue
        lines.append(f"  {policy}: best at {own.buffer_tokens:,} rows, {own.eager_ms:.3f} ms, "
                     f"{own.eager_ms / best.eager_ms:.2f}x the fastest ({_how(own)})")
    return lines


WIDTH = 120  # the roofline table's widest line


def _num(v: float) -> str:
    """A time in at most 5 characters, about 3 significant digits: 17.2, 1.17, 0.350, 172."""
    if v >= 99999.5:
        return f"{v:.0e}"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def _ratio(r: float) -> str:
    return f"{r:.1f}x" if r < 9.95 else f"{r:.0f}x" if r < 9999.5 else f"{r:.0e}x"


def _limit_cell(ms: Optional[float], limit: Optional[float]) -> str:
    """measured/limit and how many times the limit: "1.17/0.350 3.3x"; "-" where the part did nothing."""
    if ms is None or limit is None or (limit <= 0 and ms <= 0):
        return "-"
    return f"{_num(ms)}/0" if limit <= 0 else f"{_num(ms)}/{_num(limit)} {_ratio(ms / limit)}"


def _elide(name: str, width: int) -> str:
    """name in at most width characters, its middle given up for a ~ (its ends say most: guided:...+fused)."""
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    return name[:head] + "~" + name[len(name) - (width - 1 - head):]


def roofline_table(runs: List[Run], peak: Peak) -> List[str]:
    """Each run's parts against their limits (Run.parts_roofline_ms), within WIDTH columns (a long policy
    name is cut in its middle: the table above names it in full); none where no run has limits."""
    timed = [r for r in runs if not r.refused and r.parts_ms and r.parts_roofline_ms]
    if not timed:
        return []
    cols = ["buffer", "policy"] + [c for _, c in PART_COLUMNS]
    rows = [[f"{r.buffer_tokens:,}", r.policy] + [_limit_cell(r.parts_ms.get(p), r.parts_roofline_ms.get(p))
                                                  for p, _ in PART_COLUMNS] for r in timed]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    over = sum(widths) + 2 * (len(cols) - 1) - WIDTH
    if over > 0:
        widths[1] = max(len(cols[1]), widths[1] - over)
        for r in rows:
            r[1] = _elide(r[1], widths[1])
    fmt = lambda row: "  ".join(v.ljust(widths[i]) if i == 1 else v.rjust(widths[i])  # noqa: E731
                                for i, v in enumerate(row)).rstrip()
    return ["", peak.line(),
            "each part: measured ms / its limit (the larger of its FLOPs at the GEMM's peak and its bytes at the",
            "copy's), and how many times the limit it took",
            fmt(cols)] + [fmt(r) for r in rows]


def text_report(header: Dict[str, str], batches: List[dict]) -> str:
    # The peak (a dict in the JSON header) heads each batch's roofline table instead.
    peak = Peak(**header["peak"]) if isinstance(header.get("peak"), dict) else None
    out = [f"{k}: {v}" for k, v in header.items() if not isinstance(v, dict)]
    out.append("q merges: the LSE merges of one query row's running state, the most and p99 over the batch's rows")
    for batch in batches:
        runs: List[Run] = batch["runs"]
        out.append("")
        out.append(batch["title"])
        cols = ["buffer", "policy", "path", "iters", "merges", "q merges", "eager ms", "graph ms", "host ms"]
        cols += [c for _, c in PART_COLUMNS] + ["TFLOP/s", "max|err|"]
        rows = []
        for r in runs:
            if r.refused:
                rows.append([f"{r.buffer_tokens:,}", r.policy, "refused: " + r.refused])
                continue
            row = [f"{r.buffer_tokens:,}", r.policy, r.path, str(r.iterations), str(r.merges),
                   f"{r.merges_per_query_max}/{r.merges_per_query_p99}", _ms(r.eager_ms),
                   _ms(r.graph_ms), _ms(None if r.graph_ms is None else max(0.0, r.eager_ms - r.graph_ms))]
            row += [_ms(r.parts_ms.get(p)) if r.parts_ms else "-" for p, _ in PART_COLUMNS]
            row += ["-" if r.attention_tflops is None else f"{r.attention_tflops:.0f}", _err(r.max_abs_error)]
            if r.ok is False:
                row[-1] += " FAIL"
            rows.append(row)
        # Every run may be refused (no full row): the header alone sets the width then.
        widths = [max([len(c)] + [len(r[i]) for r in rows if len(r) == len(cols)]) for i, c in enumerate(cols)]
        right = {0, 3, 4} | set(range(5, len(cols)))  # q merges: a query row's merges, max/p99 over the rows
        fmt = lambda row: "  ".join(v.rjust(widths[i]) if i in right else v.ljust(widths[i])  # noqa: E731
                                    for i, v in enumerate(row)).rstrip()
        out.append(fmt(cols))
        for r in rows:
            out.append(fmt(r) if len(r) == len(cols) else f"{r[0].rjust(widths[0])}  {r[1].ljust(widths[1])}  {r[2]}")
        out += finding(runs)
        if peak is not None:
            out += roofline_table(runs, peak)
    # User text (scenario names, a config's model name, refusals quoting them) with control
    # characters escaped, as the CLI shows it: an ESC in a name must not reach the terminal.
    return "\n".join(printable(line) for line in out) + "\n"


def json_report(header: Dict[str, str], batches: List[dict]) -> str:
    doc = dict(header)
    doc["batches"] = [{k: ([r.as_dict() for r in v] if k == "runs" else v) for k, v in b.items()} for b in batches]
    return json.dumps(doc, indent=2) + "\n"
