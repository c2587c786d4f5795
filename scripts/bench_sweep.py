#!/usr/bin/env python3
"""What a cost model costs a sweep: `mlaplan sweep` on each preset without --cost, with an FA2 and an
FA3 cost file, graph and eager: the command's CPU time (user + system, both threads), wall time and peak
memory, and the JSON's `seconds` (the sweep alone). Prints the Markdown table of docs/performance.md's
sweep section: medians of the repetitions. Keep the machine quiet.

Usage: scripts/bench_sweep.py [--exe build/mlaplan] [--batches 100000] [--repeats 3] [--json OUT.json]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_errors import Parser, dumps, fail, load_json, run, write_files  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ["coding-agent", "mooncake-conv", "azure-conv", "short-chat"]
FA2 = os.path.join(ROOT, "costs/h200/deepseek-v3-tp8-bf16.json")
FA3 = os.path.join(ROOT, "costs/h200/deepseek-v3-tp8-bf16-fa3.json")
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None  # Debian's `time`
SETTINGS = [("none", []), ("FA2", ["--cost", FA2]), ("FA2 eager", ["--cost", FA2, "--timing", "eager"]),
            ("FA3", ["--cost", FA3]), ("FA3 eager", ["--cost", FA3, "--timing", "eager"])]


def timed(exe, workload, batches, extra, tmp):
    """(CPU s, wall s, the sweep's own s, peak MiB or None) of one run. The CPU is the child's rusage
    (os.wait4, its children included). The peak memory is /usr/bin/time's (None without it): the child's
    own ru_maxrss starts at this Python's, from the fork before exec."""
    out, mem = os.path.join(tmp, "sweep.json"), os.path.join(tmp, "time.txt")
    cmd = [exe, "sweep", "--workload", workload, "--batches", str(batches), "--buffer-tokens", "4096:2097152:x2",
           "--policy", "all", "--model", "deepseek-v3", "--tp", "8", *extra, "--no-progress", "--format", "json",
           "-o", out]
    if TIME:
        cmd = [TIME, "-f", "%M", "-o", mem, *cmd]
    start = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as p:
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        last = (err.strip().splitlines() or [f"exited {p.returncode}"])[-1]
        fail(f"sweep --workload {workload} {' '.join(extra)}: {last.removeprefix('mlaplan: error: ')}")
    doc = load_json(out, "an mlaplan binary whose sweep writes --format json (--exe)") if os.path.exists(out) else None
    seconds = doc.get("seconds") if isinstance(doc, dict) else None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        fail(f"--exe {exe}: its sweep wrote no JSON with \"seconds\"; give an mlaplan binary (build/mlaplan)")
    os.remove(out)
    mib = int(open(mem).read().split()[-1]) / 1024 if TIME else None
    return usage.ru_utime + usage.ru_stime, wall, seconds, mib


def main():
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("--exe", default=os.path.join(ROOT, "build/mlaplan"), help="the mlaplan binary")
    parser.add_argument("--batches", type=int, default=100000, help="batches per sweep")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each command (the median is shown)")
    parser.add_argument("--json", help="also write every median here")
    a = parser.parse_args()
    if a.batches < 1 or a.repeats < 1:
        fail("--batches and --repeats: give at least 1")
    if not os.access(a.exe, os.X_OK):
        fail(f"--exe {a.exe}: not an executable; build it (scripts/build.sh) and give its path")
    medians = {}
    with tempfile.TemporaryDirectory() as tmp:
        for w in WORKLOADS:
            for name, extra in SETTINGS:
                runs = [timed(a.exe, w, a.batches, extra, tmp) for _ in range(a.repeats)]
                cpu, wall, sweep, mib = zip(*runs)
                medians[f"{w}|{name}"] = {"cpu": statistics.median(cpu), "wall": statistics.median(wall),
                                          "sweep": statistics.median(sweep),
                                          "mib": statistics.median(mib) if TIME else None}
    if a.json:
        write_files({a.json: dumps(medians, indent=1)}, "--json")
    names = [n for n, _ in SETTINGS]
    print("| workload | " + " | ".join(names) + " | FA3 eager / none | peak memory (none -> FA3 eager) |")
    print("| --- |" + " ---: |" * (len(names) + 2))
    for w in WORKLOADS:
        r = [medians[f"{w}|{n}"] for n in names]
        cells = " | ".join(f"{x['cpu']:.2f} s ({x['sweep']:.2f})" for x in r)
        peak = f"{r[0]['mib']:.0f} -> {r[-1]['mib']:.0f} MiB" if TIME else "(no /usr/bin/time)"
        print(f"| `{w}` | {cells} | {r[-1]['cpu'] / r[0]['cpu']:.2f}x | {peak} |")


if __name__ == "__main__":
    run(main)
