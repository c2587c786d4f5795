#!/usr/bin/env python3
"""The README's examples, run: every ``` block that starts with `$ build/mlaplan ...` is split into
its commands (`$ ` lines, `\\` continuing a line) and the output shown under each; each command that
does not depend on a GPU is run with the built binary and its output (stdout, then stderr) compared
with what the README shows. So the README cannot drift from the binary.

    tests/readme_examples_test.py MLAPLAN_EXE SOURCE_DIR

What the comparison allows, and nothing more:
- a line `...` in the shown output stands for any number of lines (the README elides there);
- numbers that vary from run to run are masked on both sides: the values of `timings (us):`, a
  bench row's measured columns (median, spread, GB/s and the ratios; `-` stays `-`, so a column
  added or dropped fails), the launch and bandwidth figures above a bench table, sweep's
  `evaluated in S s` and verify's `N ms` and `N cases/s`;
- a command whose README block shows no output is not compared (the README shows it as a step).
Commands run in a scratch folder holding links to scenarios/, costs/ and scripts/, so their output files stay out of
the tree; an argument under /tmp/ is moved into that folder too. A command that needs a GPU, or a
line that is not an mlaplan command (rsvg-convert, the plot scripts), is skipped with the reason.
Exit status: 0 when every compared command matched, 1 with a diff per mismatch.
"""
import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile

PROMPT = "$ "
BINARY = "build/mlaplan"
CPU_BENCH_KERNELS = {"cpu", "cpu-fast"}
NUMBER = r"\d+(?:\.\d+)?"


def blocks(readme):
    """The fenced blocks whose first line is `$ build/mlaplan`, each with the line it starts on."""
    out, current, start = [], None, 0
    for number, line in enumerate(readme.splitlines(), 1):
        if line.startswith("```"):
            if current is None:
                current, start = [], number + 1
            else:
                if current and current[0].startswith(PROMPT + BINARY + " "):
                    out.append((start, current))
                current = None
        elif current is not None:
            current.append(line)
    return out


def commands(block):
    """(command text, shown output lines) for each `$ ` line of a block."""
    out = []
    lines = list(block)
    while lines:
        line = lines.pop(0)
        if not line.startswith(PROMPT):
            continue  # output before a first command: blocks() rules that out
        text = line[len(PROMPT):]
        while text.endswith("\\") and lines:
            text = text[:-1] + " " + lines.pop(0).strip()
        shown = []
        while lines and not lines[0].startswith(PROMPT):
            shown.append(lines.pop(0))
        out.append((text, shown))
    return out


def option(argv, name):
    """The value of `name VALUE` or `name=VALUE` in argv, else None."""
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return None


def why_not_runnable(argv):
    """None when the command's output does not depend on a GPU, else why it is skipped."""
    if not argv or argv[0] != BINARY:
        return "not an mlaplan command"
    sub = argv[1] if len(argv) > 1 else ""
    backend = (option(argv, "--backend") or "auto").lower()
    if sub in ("run", "verify"):
        if backend == "cpu" or (sub == "verify" and option(argv, "--external") is not None):
            return None  # the CPU planner, or verify --external's command: no GPU in either
        policies = [p.strip().lower() for p in (option(argv, "--policy") or "max").split(",")]
        if sub == "run" and all(p and not p.startswith(("max", "all")) for p in policies):
            return None  # policies other than max plan on the CPU whatever the backend
        return f"`{sub}` with --backend {backend} prints the GPU planner's output where a GPU is present"
    if sub == "bench":
        kernels = {k.strip().lower() for k in (option(argv, "--kernels") or "all").split(",")}
        if kernels <= CPU_BENCH_KERNELS:
            return None
        return "`bench` with GPU kernels (--kernels " + ",".join(sorted(kernels)) + ") needs a GPU"
    if sub == "sweep":
        return None if backend != "gpu" else "`sweep --backend gpu` needs a GPU"
    if sub == "gen":
        return None
    return f"`{sub or argv[0]}` is not known to be GPU-independent"


def masker(sub):
    """The masking of run-to-run values for one subcommand's output lines."""
    bench_row = re.compile(r"^\d+\s+\S+\s+(hot|cold)\s")

    def mask(line):
        if sub == "run" and line.startswith("timings (us):"):
            return re.sub(NUMBER, "#", line)
        if sub == "bench":
            if bench_row.match(line):
                # The measured columns (median, spread, GB/s, ratios): numbers masked, `-` kept, so a
                # column added or dropped still fails; their widths follow the values, so spacing is not compared.
                cells = line.split()
                return "  ".join(cells[:3] + [c if c == "-" else re.sub("^" + NUMBER + "[%x]?$", "#", c) for c in cells[3:]])
            if re.match(r"^(empty launch|empty graph launch|device copy|write-only|SM clock)", line):
                return re.sub(NUMBER, "#", line)
        if sub == "sweep":
            return re.sub(r"evaluated in " + NUMBER + " s", "evaluated in # s", line)
        if sub == "verify":
            line = re.sub(r"\s+" + NUMBER + " ms", " # ms", line)
            return re.sub(r"\d+ cases/s\)\s*", "# cases/s) ", line)
        return line

    return mask


def match(shown, actual, mask):
    """Whether actual matches shown (`...` lines stand for any lines), and the actual output as the
    README would show it where it matched, for a diff: elided stretches become `...`."""
    exp = [mask(s) for s in shown]
    act = [mask(a) for a in actual]
    segments, seg = [], []
    for e in exp:
        if e.strip() == "...":
            segments.append(seg)
            seg = []
        else:
            seg.append(e)
    segments.append(seg)
    rendered, pos = [], 0
    for i, seg in enumerate(segments):
        first, last = i == 0, i == len(segments) - 1
        if not first and (not rendered or rendered[-1] != "..."):
            rendered.append("...")
        if not seg:
            continue
        if first and last:
            found = 0 if act == seg else None
        elif first:
            found = 0 if act[:len(seg)] == seg else None
        elif last:
            start = len(act) - len(seg)
            found = start if start >= pos and act[start:] == seg else None
        else:
            found = next((s for s in range(pos, len(act) - len(seg) + 1) if act[s:s + len(seg)] == seg), None)
        if found is None:
            # Show the stretch where this piece was expected: from its first line's next occurrence,
            # else from where matching stopped; to the end for the last piece, else a little past its length.
            anchor = pos if first else next((s for s in range(pos, len(act)) if act[s] == seg[0]), pos)
            end = len(act) if last else min(len(act), anchor + len(seg) + 3)
            rendered += act[anchor:end] + (["..."] if end < len(act) else [])
            return False, rendered
        rendered += seg
        pos = found + len(seg)
    return True, rendered


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    exe, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    readme_path = os.path.join(source, "README.md")
    with open(readme_path, encoding="utf-8") as f:
        found = blocks(f.read())
    if not found:
        print(f"{readme_path}: no ``` block starting with `$ {BINARY}`", file=sys.stderr)
        return 1
    compared, failures = 0, []
    with tempfile.TemporaryDirectory(prefix="mlaplan-readme-") as scratch:
        for shared in ("scenarios", "costs", "scripts"):  # what the examples read (scripts: verify --external's ports)
            os.symlink(os.path.join(source, shared), os.path.join(scratch, shared))
        for start, block in found:
            for text, shown in commands(block):
                where = f"README.md:{start}"
                argv = shlex.split(text)
                why = why_not_runnable(argv)
                if why is None and not shown:
                    why = "the README shows no output for it"
                if why is not None:
                    print(f"skip    {where}: $ {text}\n        ({why})")
                    continue
                run_argv = [exe] + [os.path.join(scratch, a[len("/tmp/"):]) if a.startswith("/tmp/") else a for a in argv[1:]]
                try:
                    done = subprocess.run(run_argv, cwd=scratch, stdin=subprocess.DEVNULL, capture_output=True,
                                          text=True, errors="replace", timeout=300)
                except subprocess.TimeoutExpired:
                    failures.append(f"{where}: $ {text}\n        timed out after 300 s")
                    continue
                actual = done.stdout.splitlines() + done.stderr.splitlines()
                ok, rendered = match(shown, actual, masker(argv[1]))
                # An error line, or verify's count of failed cases (a planted defect caught), shows a failing exit.
                wants_error = any(s.startswith("mlaplan: error:") or re.match(r"^\d+ passed, [1-9]\d* failed$", s) for s in shown)
                status_ok = (done.returncode != 0) == wants_error
                compared += 1
                if ok and status_ok:
                    print(f"match   {where}: $ {text}")
                    continue
                report = [f"{where}: $ {text}"]
                if not status_ok:
                    report.append(f"        exit status {done.returncode}, " +
                                  ("an error was shown" if wants_error else "the README shows it succeeding"))
                if not ok:
                    report.append("        its output differs from the README's (- README, + binary; masked values are #):")
                    mask = masker(argv[1])
                    diff = difflib.unified_diff([mask(s) for s in shown], rendered, "README.md", "mlaplan", lineterm="", n=2)
                    report += ["        " + d for d in list(diff)[2:]]
                    report.append("        regenerate the block from the binary's output (elisions as `...` lines)")
                failures.append("\n".join(report))
    for f in failures:
        print("\nMISMATCH " + f)
    print(f"\n{compared} README commands compared, {len(failures)} differ")
    if compared == 0:
        print("nothing was compared: every block was skipped", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
