"""Why the host's dispatch of one eager layer drifts: each round times a host-bound layer's dispatch
(a short-chat step of 40 sequences under vLLM's packed plan, DeepSeek-V3 TP 8, FlashAttention-3,
behind a sleeping GPU as the calibration's host_ms is) beside a fixed pure-Python loop that touches no
GPU, and records what the machine did meanwhile: the thread's own CPU time against the wall (time the
thread was not running), its involuntary context switches, the machine's CPUs busy outside this
process and their steal time (/proc/stat), and the clock of the CPU it ran on (/proc/cpuinfo).
Prints the correlation of the layer's dispatch time with each, and the p10/p50/p90 of each.

  python scripts/experiments/host_state.py [--rounds 40] [--json OUT.json]   # on a CUDA GPU
"""
import os
import statistics
import time

import numpy as np

from mlaplan.prefill.executor import execute
from mlaplan.prefill.timing import time_host
from warmed_layer import warmed_layer
from saved_runs import Parser, dumps, run, write_files


def machine_ticks():
    """(busy, steal, total) jiffies over every CPU: busy = user + nice + system + irq + softirq."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    return user + nice + system + irq + softirq, steal, sum(v[:8])


def own_ticks():
    t = os.times()
    return (t.user + t.system) * os.sysconf("SC_CLK_TCK")


def involuntary_switches():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("nonvoluntary_ctxt_switches"):
                return int(line.split()[1])
    return 0


def current_cpu():
    """The CPU this process last ran on (/proc/self/stat's 39th field)."""
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def cpu_mhz(cpu):
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq") as f:
            return int(f.read()) / 1e3
    except OSError:
        pass
    with open("/proc/cpuinfo") as f:
        mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
    return mhz[cpu] if cpu < len(mhz) else float("nan")


def python_loop_ms():
    """A fixed amount of interpreter work, no GPU: what the CPU itself gives this thread now."""
    t0 = time.perf_counter()
    s = 0
    for i in range(200_000):
        s += i & 7
    return (time.perf_counter() - t0) * 1e3


def main():
    ap = Parser()
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--pause-s", type=float, default=0.3)
    ap.add_argument("--json")
    args = ap.parse_args()
    p = warmed_layer([300 + 37 * i for i in range(40)], [200] * 40, "packed", 16384)
    rows = []
    for _ in range(args.rounds):
        m0, own0, sw0 = machine_ticks(), own_ticks(), involuntary_switches()
        wall0, thread0 = time.perf_counter(), time.thread_time()
        host = time_host(lambda: execute(p), 5)
        wall, thread = time.perf_counter() - wall0, time.thread_time() - thread0
        loop = statistics.median(python_loop_ms() for _ in range(3))
        m1, own1, sw1 = machine_ticks(), own_ticks(), involuntary_switches()
        total = max(1, m1[2] - m0[2])
        rows.append({"host_ms": statistics.median(host) if host else None, "python_loop_ms": loop,
                     "thread_share": thread / wall, "involuntary_switches": sw1 - sw0,
                     "others_busy": max(0.0, (m1[0] - m0[0]) - (own1 - own0)) / total,
                     "steal": (m1[1] - m0[1]) / total, "cpu": current_cpu(), "cpu_mhz": cpu_mhz(current_cpu()),
                     "loadavg": os.getloadavg()[0]})
        time.sleep(args.pause_s)
    if args.json:  # the figures first, so that a failed print leaves them
        doc = {"rounds": args.rounds, "pause_s": args.pause_s, "cpus": os.cpu_count(), "rows": rows}
        write_files({args.json: dumps(doc)}, "--json")
    ok = [r for r in rows if r["host_ms"] is not None]
    host = np.asarray([r["host_ms"] for r in ok])
    print(f"{len(ok)} of {args.rounds} rounds with an honest host sample; {os.cpu_count()} CPUs")
    for k in ("host_ms", "python_loop_ms", "thread_share", "involuntary_switches", "others_busy", "steal", "cpu_mhz", "loadavg"):
        v = np.asarray([r[k] for r in ok], dtype=float)
        p10, p50, p90 = np.quantile(v, [0.1, 0.5, 0.9])
        corr = float(np.corrcoef(host, v)[0, 1]) if k != "host_ms" and np.std(v) > 0 else float("nan")
        print(f"{k:21} p10 {p10:9.3f}  p50 {p50:9.3f}  p90 {p90:9.3f}  correlation with host_ms {corr:+.2f}")
    print("CPUs the rounds ran on:", sorted({r["cpu"] for r in ok}))


if __name__ == "__main__":
    run(main)
