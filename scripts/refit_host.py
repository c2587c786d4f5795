#!/usr/bin/env python3
"""Refits a shipped cost file's host section on new runs (timed at the host CPU's full speed), the
graph coefficients as they are: re-runs the `--refit` the file records in its `command`, with the
same measurement files and options, adding `--host-from` the new runs (calibrate's own, or held-out
runs `validate --save` wrote, once reported). A CPU computation.

  scripts/refit_host.py COST.json HOST-RUNS.json [...] [--keep] [--commit C] [-o OUT.json]   # default: COST.json in place

--keep pools the new runs with those the file's host section was fitted on (its command's
--host-from), so that one session's host, a few percent off its probe throughout, weighs by its share
of the runs; the fit prints each session's median error under the pooled costs. --commit names the
commit the runs were measured at (the file's `commit`; without it, the checkout's).

Exit status: calibrate's (0 written; 2 bad input, one `mlaplan: error:` line). The refit runs as
calibrate itself (this process becomes it), so Ctrl-C, SIGTERM and the output's rules are its own.
"""
import importlib.util
import os
import shlex
import sys

from script_errors import Parser, fail, load, run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHAT = "a cost file written by python -m mlaplan.calibrate"


def rooted(path: str) -> str:
    """path as calibrate, run from the checkout's root, reads it: relative to the root where inside it
    (so the file's recorded command names no machine's folders), else absolute."""
    p = os.path.abspath(path)
    return os.path.relpath(p, ROOT) if p.startswith(ROOT + os.sep) else p


def recorded_options(args):
    """A recorded `python -m mlaplan.calibrate` command's options (its words after those three):
    (the file's own options, less where it wrote to, what it recorded as its commit and an older
    --host-from; the runs that --host-from named, from the checkout's root)."""
    kept, host_from, skip = [], [], None
    for a in args:
        if skip:
            if a.startswith("-"):
                skip = None
            else:
                if skip == "--host-from":
                    host_from.append(a)
                continue
        if a in ("-o", "--output", "--commit", "--host-from"):
            skip = a
            continue
        kept.append(a)
    return kept, host_from


def parser() -> Parser:
    p = Parser(prog="scripts/refit_host.py", description=__doc__.split("\n\n")[0])
    p.add_argument("cost", metavar="COST.json", help="the cost file whose host section is refitted")
    p.add_argument("runs", nargs="+", metavar="HOST-RUNS.json", help="calibrate --measurements files of host runs")
    p.add_argument("--keep", action="store_true", help="pool them with the runs the file was fitted on")
    p.add_argument("--commit", metavar="C", help="the commit the runs were measured at")
    p.add_argument("-o", dest="output", metavar="OUT.json", help="where to write (default: COST.json in place)")
    return p


def main(argv) -> int:
    opts = parser().parse_args(argv)
    cost_path, host_runs = opts.cost, [rooted(p) for p in opts.runs]
    if not os.path.isfile(cost_path):  # refitted in place by default: a FIFO or a device would be replaced
        fail(f"{cost_path}: not a regular file; give {WHAT}")
    cost = load(cost_path, WHAT)
    command = cost["command"]
    try:
        args = shlex.split(command.text())
    except ValueError as e:  # an unclosed quote
        command.bad(str(e), "give a cost file written by python -m mlaplan.calibrate --refit")
    if args[:3] != ["python", "-m", "mlaplan.calibrate"] or "--refit" not in args:
        return fail(f"{cost_path}: command: not a `python -m mlaplan.calibrate --refit ...`; refit it by hand with --host-from")
    refit = args[args.index("--refit") + 1:]
    if not refit or refit[0].startswith("-") or any("\0" in a for a in args):
        return fail(f"{cost_path}: command: its --refit names no measurement files, or a word holds a NUL byte; "
                    "refit it by hand with --host-from")
    kept, earlier = recorded_options(args[3:])
    if opts.keep:
        if not earlier:
            return fail(f"{cost_path}: command: no --host-from runs to keep; drop --keep")
        again = [p for p in host_runs if p in earlier]
        if again:
            return fail(f"{again[0]}: already among the runs the file was fitted on; --keep pools them, give only new runs")
        host_runs = earlier + host_runs
    if importlib.util.find_spec("mlaplan") is None:
        return fail(f"the mlaplan package is not installed for {sys.executable}; run this with the Python it is installed "
                    "in, or pip install '.[calibrate]'")
    commit = ["--commit", opts.commit] if opts.commit else []
    # The graph fit kept as it is: its scheduler too (a file fitted before FlashAttention-3's L2
    # sections names sorted; calibrate's default for fa3 is now sectioned).
    geometry = cost.get("geometry")
    scheduler = geometry.get("scheduler") if geometry is not None else None
    if "--scheduler" not in kept and scheduler is not None and scheduler.text() in ("grid", "sorted", "sectioned"):
        kept += ["--scheduler", scheduler.text()]
    run = [sys.executable, "-m", "mlaplan.calibrate", *kept, "--host-from", *host_runs, *commit, "-o", rooted(opts.output or cost_path)]
    os.chdir(ROOT)
    os.execv(sys.executable, run)


if __name__ == "__main__":
    run(lambda: main(sys.argv[1:]))
