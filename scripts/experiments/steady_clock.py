"""Whether a layer's graph time depends on how long the GPU has been busy: each batch's step (the
executor, one layer, CUDA graph) is replayed once after an idle pause, as the calibration's few
replays see it, then back to back for SECONDS, each replay timed alone, while nvidia-smi samples the
SM clock, the power draw and the throttle reasons every 50 ms. Prints one line per phase (first
replays, the first and last second of the sustained run) and writes the series to OUT.json.
Usage: python3 scripts/experiments/steady_clock.py SCENARIOS.json POLICY BUFFER [SECONDS] [OUT.json] [TP]
(TP: DeepSeek-V3's tensor parallelism, default 8; 1 gives the 128-head steps that sit at the power cap)
(needs the installed package and a GPU; attention: FlashAttention-3 where it imports)."""
import math
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/, for script_errors
from script_errors import Parser, dumps, escape, fail, run, write_files  # noqa: E402

import torch  # noqa: E402

from mlaplan import _mlaplan  # noqa: E402
from mlaplan.prefill.__main__ import attention_kernel  # noqa: E402
from mlaplan.prefill.executor import execute, prepare  # noqa: E402
from mlaplan.prefill.inputs import host_page_table, random_inputs  # noqa: E402
from mlaplan.prefill.model import model_dims  # noqa: E402
from mlaplan.prefill.schedule import POLICIES, build_schedule  # noqa: E402


def duration(text):
    v = float(text)
    if not (math.isfinite(v) and 0 < v <= 3600):  # nan fails too
        raise ValueError(text)
    return v


def main():
    ap = Parser(prog="scripts/experiments/steady_clock.py", description=__doc__.split("\n")[0])
    ap.add_argument("scenarios", metavar="SCENARIOS.json")
    ap.add_argument("policy", choices=POLICIES)
    ap.add_argument("buffer", type=int, metavar="BUFFER")
    ap.add_argument("seconds", type=duration, nargs="?", default=3.0, metavar="SECONDS", help="0 to 3600 (3)")
    ap.add_argument("out_path", nargs="?", default="steady-clock.json", metavar="OUT.json")
    ap.add_argument("tp", type=int, nargs="?", default=8, metavar="TP")
    a = ap.parse_args()
    path, policy, buffer, seconds, out_path = a.scenarios, a.policy, a.buffer, a.seconds, a.out_path
    if not 1 <= buffer < 1 << 31:
        fail(f"BUFFER {buffer}: give the buffer's rows, 1 to 2^31 - 1")
    # The inputs checked before the GPU is touched: a bad file or TP is one line, on any machine.
    try:
        dims = model_dims("deepseek-v3", a.tp)
        scenarios = _mlaplan.read_scenarios(path)
    except ValueError as e:
        fail(str(e))
    if not torch.cuda.is_available():
        fail("no CUDA device; run this on a GPU machine with the package installed")
    device = torch.device("cuda")
    kernel = attention_kernel("auto", device)
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active",
                            "--format=csv,noheader,nounits", "-lms", "50"], stdout=subprocess.PIPE, text=True)
    t0 = time.time()
    result = {"kernel": kernel, "policy": policy, "buffer": buffer, "batches": []}
    for i, s in enumerate(scenarios):
        x = random_inputs(list(s["cache_lengths"]), list(s["input_row_offsets"]), int(s["page_size"]), dims, torch.bfloat16,
                          device, 1000 + i)
        sched = build_schedule(policy, x.lengths, host_page_table(x), buffer, None, device, sglang_path="auto", trtllm_path="auto")
        p = prepare(x, sched, True, kernel)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            execute(p)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            execute(p)
        torch.cuda.synchronize()
        series = []

        def timed():
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            series.append((time.time() - t0, a.elapsed_time(b)))

        time.sleep(2.0)  # idle, as between the calibration's points
        for _ in range(4):
            timed()
        first = [ms for _, ms in series]
        start = time.time()
        while time.time() - start < seconds:
            timed()
        sustained = series[4:]
        head = [ms for t, ms in sustained if t - sustained[0][0] < 1.0]
        tail = [ms for t, ms in sustained if sustained[-1][0] - t < 1.0]
        print(f"{escape(s['name'])}: first replays {' '.join(f'{m:.3f}' for m in first)} ms; sustained first second median "
              f"{statistics.median(head):.3f}, last second {statistics.median(tail):.3f} ms ({len(sustained)} replays)", flush=True)
        result["batches"].append({"name": s["name"], "series": series})
        del g, p, sched, x
        torch.cuda.empty_cache()
    smi.terminate()
    samples = []
    for line in smi.stdout.read().splitlines():
        parts = [v.strip() for v in line.split(",")]
        if len(parts) == 5:
            samples.append(parts)
    result["nvidia_smi"] = samples
    write_files({out_path: dumps(result)}, "OUT.json")
    clocks = [float(p[1]) for p in samples if p[1].replace(".", "").isdigit()]
    power = [float(p[2]) for p in samples if p[2].replace(".", "").isdigit()]
    if clocks:
        print(f"SM clock {min(clocks):.0f}-{max(clocks):.0f} MHz, power {min(power):.0f}-{max(power):.0f} W over {len(samples)} samples")


if __name__ == "__main__":
    run(main)
