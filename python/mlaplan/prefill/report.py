"""The command's output: JSON, or for people the answer first (each batch's fastest policy and buffer,
how every other policy's best compares, any run that missed one-shot attention), then what ran (the
header), then per batch the runs and each part's time, every line within WIDTH columns. `host ms` is
eager minus graph: the time the GPU waits for the host's dispatch in the eager loop. Where a peak was
measured (roofline.peak) each part's time is set against its limit at that peak."""
from __future__ import annotations

import json
import textwrap
from typing import Dict, List, Optional

from .._mlaplan import printable
from .measure import Run
from .roofline import Peak
from .schedule import FUSED_TITLE, policy_title, split_loop

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
    """The fastest (policy, buffer) by eager time (its graph time beside it), then each other policy's best
    against it, fastest first."""
    best = fastest(runs)
    if best is None:
        return []
    graph = "" if best.graph_ms is None else f", {best.graph_ms:.3f} ms graph"
    lines = [f"fastest: {best.policy} at {best.buffer_tokens:,} rows, {best.eager_ms:.3f} ms eager{graph} ({_how(best)})"]
    bests = (fastest([r for r in runs if r.policy == policy]) for policy in dict.fromkeys(r.policy for r in runs))
    for own in sorted((b for b in bests if b is not None and b.policy != best.policy), key=lambda r: r.eager_ms):
        lines.append(f"  {own.policy}: best at {own.buffer_tokens:,} rows, {own.eager_ms:.3f} ms, "
                     f"{own.eager_ms / best.eager_ms:.2f}x the fastest ({_how(own)})")
    return lines


WIDTH = 120  # the text report's widest line (a refusal's reason, quoted whole, may pass it)


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


def _table(cols: List[str], rows: List[List[str]], left=(1,)) -> List[str]:
    """cols over rows, aligned (the `left` columns to the left, the rest to the right), within WIDTH: a long
    policy name (column 1) is cut in its middle. A row shorter than cols (a refusal: buffer, policy, reason)
    takes its first two columns' widths and its reason whole."""
    full = [r for r in rows if len(r) == len(cols)]
    widths = [max([len(c)] + [len(r[i]) for r in full]) for i, c in enumerate(cols)]
    # A refused row's policy counts too, before any cut: it is the same column.
    widths[1] = max([widths[1]] + [len(r[1]) for r in rows if len(r) != len(cols)])
    over = sum(widths) + 2 * (len(cols) - 1) - WIDTH
    if over > 0:
        widths[1] = max(len(cols[1]), widths[1] - over)
    cell = lambda i, v: v.ljust(widths[i]) if i in left else v.rjust(widths[i])  # noqa: E731
    lines = ["  ".join(cell(i, v) for i, v in enumerate(cols)).rstrip()]
    for r in rows:
        r = [r[0], _elide(r[1], widths[1])] + r[2:]
        lines.append("  ".join(cell(i, v) for i, v in enumerate(r)).rstrip() if len(r) == len(cols)
                     else f"{cell(0, r[0])}  {cell(1, r[1])}  {r[2]}")
    return lines


def parts_table(runs: List[Run], peak: Optional[Peak]) -> List[str]:
    """Each timed run's parts in ms; with a peak, each against its limit (Run.parts_roofline_ms) and how
    many times the limit it took. None where no run timed its parts (or, with a peak, has limits)."""
    timed = [r for r in runs if not r.refused and r.parts_ms and (peak is None or r.parts_roofline_ms)]
    if not timed:
        return []
    cols = ["buffer", "policy"] + [c for _, c in PART_COLUMNS]
    if peak is None:
        rows = [[f"{r.buffer_tokens:,}", r.policy] + [_ms(r.parts_ms.get(p)) for p, _ in PART_COLUMNS] for r in timed]
        return ["each part, ms (one profiled run):"] + _table(cols, rows)
    rows = [[f"{r.buffer_tokens:,}", r.policy] + [_limit_cell(r.parts_ms.get(p), r.parts_roofline_ms.get(p))
                                                  for p, _ in PART_COLUMNS] for r in timed]
    return [peak.line(),
            "each part: measured ms / its limit (the larger of its FLOPs at the GEMM's peak and its bytes at the",
            "copy's), and how many times the limit it took"] + _table(cols, rows)


def runs_table(runs: List[Run]) -> List[str]:
    """A row a (buffer, policy): how it ran, its eager and graph time, the attention's rate and the error
    against one-shot attention (FAIL past the tolerance); a refused one says why."""
    cols = ["buffer", "policy", "path", "iters", "merges", "q merges", "eager ms", "graph ms", "host ms", "TFLOP/s",
            "max|err|"]
    rows = []
    for r in runs:
        if r.refused:
            rows.append([f"{r.buffer_tokens:,}", r.policy, "refused: " + r.refused])
            continue
        row = [f"{r.buffer_tokens:,}", r.policy, r.path, str(r.iterations), str(r.merges),
               f"{r.merges_per_query_max}/{r.merges_per_query_p99}", _ms(r.eager_ms), _ms(r.graph_ms),
               _ms(None if r.graph_ms is None else max(0.0, r.eager_ms - r.graph_ms)),
               "-" if r.attention_tflops is None else f"{r.attention_tflops:.0f}", _err(r.max_abs_error)]
        if r.ok is False:
            row[-1] += " FAIL"
        rows.append(row)
    return _table(cols, rows, left=(1, 2))


def check_line(runs: List[Run]) -> List[str]:
    """The check against one-shot attention where it failed, or where nothing was timed to rank."""
    done = [r for r in runs if not r.refused and r.ok is not None]
    failed = [r for r in done if r.ok is False]
    if failed:
        return [f"check: {len(failed)} of {len(done)} runs missed one-shot attention (FAIL below): "
                + ", ".join(dict.fromkeys(f"{r.policy} at {r.buffer_tokens:,}" for r in failed))]
    if fastest(runs) is None:
        refused = sum(1 for r in runs if r.refused)
        n = len(done)
        said = (f"nothing timed; check: {n} run{'s' * (n != 1)} match{'es' * (n == 1)} one-shot attention" if done
                else "nothing timed or checked")
        return [said + (f"; {refused} refused" if refused else "")]
    return []


def legend(policies: List[str]) -> str:
    """The policies line for people: each plan's engine once, and the fused loop said once."""
    bases = dict.fromkeys(split_loop(p)[0] for p in policies)
    items = [f"{b} = {policy_title(b)}" for b in bases]
    if any(split_loop(p)[1] == "fused" for p in policies):
        items.append("NAME+fused = NAME's plan " + FUSED_TITLE)
    return "policies: " + "; ".join(items)


def wrap(line: str) -> List[str]:
    """line within WIDTH, its continuations indented two more than it (a long path stays whole)."""
    indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
    return textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [""]


def text_report(header: Dict[str, str], batches: List[dict]) -> str:
    # The peak (a dict in the JSON header) heads each batch's parts table instead.
    peak = Peak(**header["peak"]) if isinstance(header.get("peak"), dict) else None
    policies = list(dict.fromkeys(r.policy for b in batches for r in b["runs"]))
    out: List[str] = []
    for batch in batches:  # the answer first
        for line in [batch["title"]] + check_line(batch["runs"]) + finding(batch["runs"]):
            out += wrap(line)
    out.append("")
    for k, v in header.items():  # what ran
        if not isinstance(v, dict):
            out += wrap(legend(policies) if k == "policies" and policies else f"{k}: {v}")
    out.append("q merges: the LSE merges of one query row's running state, the most and p99 over the batch's rows")
    for batch in batches:  # the details
        out += ["", batch["title"]] + runs_table(batch["runs"])
        parts = parts_table(batch["runs"], peak)
        out += [""] + parts if parts else []
    # User text (scenario names, a config's model name, refusals quoting them) with control
    # characters escaped, as the CLI shows it: an ESC in a name must not reach the terminal.
    return "\n".join(printable(line) for line in out) + "\n"


def json_report(header: Dict[str, str], batches: List[dict]) -> str:
    doc = dict(header)
    doc["batches"] = [{k: ([r.as_dict() for r in v] if k == "runs" else v) for k, v in b.items()} for b in batches]
    return json.dumps(doc, indent=2) + "\n"
