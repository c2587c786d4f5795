"""Why a layer's CUDA-graph replay can run slower than the same layer eagerly: each named batch of a
scenario file, under each policy:buffer setting, timed eagerly and replayed as a graph in alternating
order over several rounds (validate's timings: settle, then the median of the repetitions), with the
SM clock and the power draw sampled (NVML) over each timing, and then one run of each profiled, its
kernels' device time summed by name, so that a difference shows in the kernel it lives in.

  python scripts/experiments/graph_vs_eager.py SCENARIOS.json NAME[,NAME...] POLICY:BUFFER[,...]
      [--model deepseek-v3] [--tp 1] [--rounds 3] [--json OUT.json]     # on a CUDA GPU
"""
import json
import statistics
import threading
import time
from collections import defaultdict

import pynvml
import torch

from mlaplan import _mlaplan
from mlaplan.prefill.__main__ import attention_kernel
from mlaplan.prefill.executor import execute, prepare
from mlaplan.prefill.inputs import host_page_table, random_inputs
from mlaplan.prefill.model import model_dims
from mlaplan.prefill.schedule import build_schedule
from mlaplan.prefill.timing import SETTLE_MS, time_eager, time_graph
from saved_runs import Parser


class Sampler(threading.Thread):
    """The SM clock (MHz) and power (W) every 10 ms, kept with their time."""

    def __init__(self):
        super().__init__(daemon=True)
        pynvml.nvmlInit()
        self.h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        self.samples, self.stop = [], False

    def run(self):
        while not self.stop:
            self.samples.append((time.monotonic(), pynvml.nvmlDeviceGetClockInfo(self.h, pynvml.NVML_CLOCK_SM),
                                 pynvml.nvmlDeviceGetPowerUsage(self.h) / 1e3))
            time.sleep(0.01)

    def over(self, t0, t1):
        got = [(c, p) for t, c, p in self.samples if t0 <= t <= t1]
        if not got:
            return None, None
        return statistics.median(c for c, _ in got), statistics.median(p for _, p in got)


def kernel_ms(fn, runs=3):
    """Device time per kernel name, summed over `runs` runs of fn, divided by runs."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
    by = defaultdict(float)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            by[e.name[:60]] += e.device_time / 1e3 / runs
    return dict(by)


def main():
    ap = Parser()
    ap.add_argument("scenarios")
    ap.add_argument("names")
    ap.add_argument("settings")
    ap.add_argument("--model", default="deepseek-v3")
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    device = torch.device("cuda")
    kernel = attention_kernel("auto", device)
    dims = model_dims(args.model, args.tp)
    batches = {s["name"]: (i, s) for i, s in enumerate(_mlaplan.read_scenarios(args.scenarios))}
    sampler = Sampler()
    sampler.start()
    out = {"kernel": kernel, "model": args.model, "tp": args.tp, "runs": []}
    for name in args.names.split(","):
        i, s = batches[name]
        for setting in args.settings.split(","):
            policy, buffer = setting.split(":")
            x = random_inputs(list(s["cache_lengths"]), list(s["input_row_offsets"]), int(s["page_size"]), dims,
                              torch.bfloat16, device, 1000 + i)
            sched = build_schedule(policy, x.lengths, host_page_table(x), int(buffer), None, device,
                                   sglang_path="auto", trtllm_path="auto")
            p = prepare(x, sched, True, kernel)
            fn = lambda: execute(p)  # noqa: E731
            rec = {"batch": name, "policy": policy, "buffer": int(buffer), "eager": [], "graph": []}
            for r in range(args.rounds):
                for how in (("eager", "graph") if r % 2 == 0 else ("graph", "eager")):
                    t0 = time.monotonic()
                    ms = (time_eager(fn, True, args.reps, 1, SETTLE_MS) if how == "eager"
                          else time_graph(fn, args.reps, 1, SETTLE_MS))
                    clock, power = sampler.over(t0, time.monotonic())
                    rec[how].append({"ms": statistics.median(ms), "sm_mhz": clock, "power_w": power})
            rec["kernels_eager"] = kernel_ms(fn)
            g = torch.cuda.CUDAGraph()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()
            torch.cuda.current_stream().wait_stream(side)
            with torch.cuda.graph(g):
                fn()
            rec["kernels_graph"] = kernel_ms(g.replay)
            del g
            out["runs"].append(rec)
            e = statistics.median(t["ms"] for t in rec["eager"])
            gm = statistics.median(t["ms"] for t in rec["graph"])
            print(f"{name} {policy} {buffer}: eager {e:.3f} ms, graph {gm:.3f} ms, graph/eager {gm / e:.3f}", flush=True)
            for how in ("eager", "graph"):
                print("   " + how + " " + "  ".join(f"{t['ms']:.2f} ms @ {t['sm_mhz']} MHz {t['power_w']:.0f} W" for t in rec[how]))
            names = sorted(set(rec["kernels_eager"]) | set(rec["kernels_graph"]),
                           key=lambda k: -max(rec["kernels_eager"].get(k, 0), rec["kernels_graph"].get(k, 0)))
            for k in names[:6]:
                print(f"   {k:60} eager {rec['kernels_eager'].get(k, 0):8.3f}  graph {rec['kernels_graph'].get(k, 0):8.3f} ms")
            del p, sched, x
            torch.cuda.empty_cache()
    sampler.stop = True
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
