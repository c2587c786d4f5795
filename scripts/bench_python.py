#!/usr/bin/env python3
"""The Python call's cost beside the C++ one, in one run on one GPU (issue 11's performance target):
host microseconds per mlaplan.plan call on torch tensors (out= and a Workspace given, so no
allocation) and per call of a bound plan (mlaplan.bind) against plan_on_device called from C++ on
the same tensors, and a torch CUDA graph replay
of the Python call against a C++ graph replay of plan_on_device. Prints a Markdown table.

Usage: python3 scripts/bench_python.py [--batch-size 128] [--iterations 20000] [--repeats 5]
"""
import statistics
import time

import numpy as np
import torch

import mlaplan
from script_errors import Parser, fail, run


def per_call_us(fn, iterations):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iterations):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / iterations


def main():
    parser = Parser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--max-chunks", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for option in ("batch_size", "max_chunks", "iterations", "repeats"):
        if not 1 <= getattr(args, option) <= 1 << 24:
            fail(f"--{option.replace('_', '-')} {getattr(args, option)}: give 1 to 16,777,216")
    if not torch.cuda.is_available():
        fail("no CUDA device: it times the CUDA planner's calls; run it on a GPU machine")
    b, m, page, n = args.batch_size, args.max_chunks, 128, 65536
    rng = np.random.default_rng(1)
    cache = torch.from_numpy(rng.integers(0, 2048, b).astype(np.int32)).cuda()
    offsets = torch.from_numpy(np.concatenate([[0], rng.integers(1, 512, b)]).cumsum().astype(np.int32)).cuda()
    ws = mlaplan.Workspace(b, m)
    out = (torch.empty((m, b + 1), dtype=torch.int32, device="cuda"), torch.empty((m, b), dtype=torch.int32, device="cuda"),
           torch.empty(m, dtype=torch.int32, device="cuda"), torch.empty(4, dtype=torch.int32, device="cuda"))
    stream = torch.cuda.Stream()
    handle = stream.cuda_stream

    def python_call():
        mlaplan.plan(cache, offsets, page, n, m, out=out, workspace=ws, stream=handle)

    bound = mlaplan.bind(cache, offsets, page, n, m, out=out, workspace=ws)

    def python_bound():
        bound(handle)

    def python_call_current_stream():
        mlaplan.plan(cache, offsets, page, n, m, out=out, workspace=ws)

    rows = {"python plan()": [], "python plan(), current stream": [], "python bind() call": [], "c++": [],
            "python graph replay": [], "c++ graph replay": []}
    with torch.cuda.stream(stream):
        for _ in range(200):
            python_call()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            python_call()
        for _ in range(args.repeats):  # interleaved, so clock drift hits every kind alike
            rows["python plan()"].append(per_call_us(python_call, args.iterations))
            rows["python plan(), current stream"].append(per_call_us(python_call_current_stream, args.iterations))
            rows["python bind() call"].append(per_call_us(python_bound, args.iterations))
            cpp = mlaplan._mlaplan._bench_cpp(bound, ws, handle, args.iterations)
            rows["c++"].append(cpp["call_us"])
            rows["c++ graph replay"].append(cpp["graph_replay_us"])
            rows["python graph replay"].append(per_call_us(graph.replay, args.iterations))
    status = mlaplan.decode_status(out[3])
    assert status["code"] == mlaplan.STATUS_OK, status

    print(f"{torch.cuda.get_device_name()}, B = {b}, M = {m}, {args.iterations} calls x {args.repeats} repeats, "
          f"torch {torch.__version__}")
    print("| call | host us per call (median) | min | max | over C++ (us) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    base = {"python plan()": "c++", "python plan(), current stream": "c++", "python bind() call": "c++", "c++": "c++",
            "python graph replay": "c++ graph replay", "c++ graph replay": "c++ graph replay"}
    for name, values in rows.items():
        med = statistics.median(values)
        over = med - statistics.median(rows[base[name]])
        print(f"| {name} | {med:.2f} | {min(values):.2f} | {max(values):.2f} | {over:+.2f} |")


if __name__ == "__main__":
    run(main)
