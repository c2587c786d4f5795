"""The command's output: a table per batch and the finding (the fastest policy and buffer), or JSON.
`host ms` is eager minus graph: the time the GPU waits for the host's dispatch in the eager loop."""
from __future__ import annotations

import json
from typing import Dict, List, Optional

from .._mlaplan import printable
from .measure import Run

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


def text_report(header: Dict[str, str], batches: List[dict]) -> str:
    out = [f"{k}: {v}" for k, v in header.items()]
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
    # User text (scenario names, a config's model name, refusals quoting them) with control
    # characters escaped, as the CLI shows it: an ESC in a name must not reach the terminal.
    return "\n".join(printable(line) for line in out) + "\n"


def json_report(header: Dict[str, str], batches: List[dict]) -> str:
    doc = dict(header)
    doc["batches"] = [{k: ([r.as_dict() for r in v] if k == "runs" else v) for k, v in b.items()} for b in batches]
    return json.dumps(doc, indent=2) + "\n"
