"""python -m mlaplan.prefill's text for people: the answer first (each batch's fastest, every other
policy's best against it, a failed check), then what ran, then the tables, within 120 columns.
The parts table against the roofline: test_roofline.py."""
import os
import re

import pytest

pytest.importorskip("torch", reason="the prefill executor needs torch (pip install .[torch])")

from mlaplan.prefill import measure  # noqa: E402
from mlaplan.prefill.report import text_report  # noqa: E402

WORKED = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scenarios",
                      "worked-example.json")


def _run(policy, eager, ok=True, buffer=512, graph=None):
    return measure.Run("s", buffer, policy, path="chunked", iterations=2, merges=3, eager_ms=eager, graph_ms=graph,
                       max_abs_error=1e-3 if ok else 0.5, ok=ok)


def test_the_command_puts_the_answer_first_and_stays_within_120_columns(capsys):
    from mlaplan.prefill.__main__ import entry

    code = entry([WORKED, "--model", "deepseek-v2-lite", "--heads", "2", "--device", "cpu", "--reps", "1", "--warmup",
                  "0", "--policy", "all,all+fused"])
    text = capsys.readouterr().out
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0].startswith("worked-example: 3 sequences") and lines[1].startswith("fastest: "), text
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)
    # Every other policy's best, fastest first, before what ran and the tables.
    ranked = [line for line in lines if line.startswith("  ") and ": best at " in line]
    assert len(ranked) == 11
    ratios = [float(re.search(r", ([0-9.]+)x the fastest", line).group(1)) for line in ranked]
    assert ratios == sorted(ratios) and ratios[0] >= 1.0
    assert lines.index(ranked[-1]) < lines.index("tool: mlaplan.prefill") < next(
        i for i, line in enumerate(lines) if line.startswith("buffer  policy  "))
    # The fused loop said once in the legend, not once a policy.
    legend = " ".join(line.strip() for line in lines if line.startswith(("policies:", "  ")) and "best at" not in line)
    assert legend.count("in mlaplan's fused loop") == 1 and "NAME+fused = NAME's plan" in legend


def test_a_failed_check_is_said_with_the_answer():
    batch = {"title": "b", "runs": [_run("packed", 2.0, graph=1.5), _run("max", 1.0, ok=False), _run("max", 3.0, buffer=1024)]}
    lines = text_report({"tool": "mlaplan.prefill"}, [batch]).splitlines()
    assert lines[:4] == ["b", "check: 1 of 3 runs missed one-shot attention (FAIL below): max at 512",
                         "fastest: packed at 512 rows, 2.000 ms eager, 1.500 ms graph (2 iterations)",
                         "  max: best at 1,024 rows, 3.000 ms, 1.50x the fastest (2 iterations)"]
    assert any(line.endswith("5.0e-01 FAIL") for line in lines)


def test_nothing_timed_says_what_the_check_found():
    untimed = [measure.Run("s", 512, "packed", path="chunked", ok=True), measure.Run("s", 64, "packed", refused="too small")]
    lines = text_report({"tool": "mlaplan.prefill"}, [{"title": "b", "runs": untimed}]).splitlines()
    assert lines[1] == "nothing timed; check: 1 run matches one-shot attention; 1 refused"
    unchecked = [measure.Run("s", 512, "packed", path="chunked")]
    assert text_report({}, [{"title": "b", "runs": unchecked}]).splitlines()[1] == "nothing timed or checked"
