"""The explorer from Python: engines' policies on one batch, and a sweep of a workload preset."""
import numpy as np
import pytest

import mlaplan


def test_policies_on_the_worked_example():
    args = ([500, 0, 100], [0, 9, 209, 229], 128, 512, 4)
    packed = mlaplan.plan_policy(*args, policy="packed")
    assert packed.chunks_used == 2 and packed.tokens_streamed == 600  # the context only, no padding
    assert packed.tables.buffer_lengths.tolist() == [500, 100, -1, -1]
    trt = mlaplan.plan_policy(*args, policy="packed/trtllm")
    assert trt.tables.buffer_lengths.tolist() == [512, 88, -1, -1]
    assert mlaplan.plan_policy(*args, policy="even-split/sglang").chunks_used == 3
    mx = mlaplan.plan_policy(*args, policy="max")
    np.testing.assert_array_equal(mx.tables.buffer_lengths, mlaplan.plan(*args[:2], 128, 512, 4).buffer_lengths)


def test_unknown_policy_names_the_argument():
    with pytest.raises(ValueError, match="policy bogus: unknown policy"):
        mlaplan.plan_policy([1], [0, 1], 16, 64, 2, policy="bogus")


def test_sweep_rows_match_the_grid():
    rows = mlaplan.sweep("short-chat", buffer_tokens=[4096, 65536], max_chunks=[16], policies="all", batches=200)
    assert [(r["policy"], r["buffer_tokens"]) for r in rows] == [
        ("max", 4096), ("max", 65536), ("packed", 4096), ("packed", 65536),
        ("even-split/vllm", 4096), ("even-split/vllm", 65536),
        ("sglang (even split)", 4096), ("sglang (even split)", 65536),  # all: every engine
        ("trtllm (packed/trtllm)", 4096), ("trtllm (packed/trtllm)", 65536),
    ]
    for r in rows:
        assert r["batches"] == 200
        assert r["p50"] <= r["p90"] <= r["p99"] <= r["max_iterations"]
    # A bigger buffer never needs more iterations.
    assert rows[1]["mean_iterations"] <= rows[0]["mean_iterations"]
    assert "coding-agent" in mlaplan.workload_names()


def test_sweep_of_an_unknown_workload():
    with pytest.raises(ValueError, match="workload"):
        mlaplan.sweep("nope", batches=1)


DATA = __import__("os").path.join(__import__("os").path.dirname(__import__("os").path.abspath(__file__)), "..", "data")


def test_replay_counts_leading_runs_of_seen_blocks():
    import json
    import os
    path = os.path.join(DATA, "mooncake_conversation_head2000.jsonl")
    seen, want = set(), []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            run = 0
            while run < len(r["hash_ids"]) and r["hash_ids"][run] in seen:
                run += 1
            want.append(min(run * 512, r["input_length"] - 1))
            seen.update(r["hash_ids"])
    # One request per step: each sees every earlier one's blocks.
    got = mlaplan.replay(path, token_budget=1 << 30, max_sequences=1)
    assert got["requests"] == 2000 and got["cached_per_request"].tolist() == want
    assert got["cached_tokens"] == sum(want)
    assert "2000 requests:" in got["summary"]
    # A finite cache hits less; a bad trace names its line.
    assert mlaplan.replay(path, prefix_cache_tokens=100_000)["hit_rate"] < got["hit_rate"]


def test_replay_rejects_a_bad_trace(tmp_path):
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"timestamp": 0, "input_length": -4, "output_length": 1, "hash_ids": []}\n')
    with pytest.raises(ValueError, match="t.jsonl:1: input_length: -4 is negative"):
        mlaplan.replay(str(bad))


def test_sweep_of_a_replayed_trace():
    import os
    rows = mlaplan.sweep(replay=os.path.join(DATA, "azure_code_head2000.csv"), buffer_tokens=[8192, 65536],
                         policies="packed", batches=100000)
    assert [r["buffer_tokens"] for r in rows] == [8192, 65536]
    assert rows[0]["batches"] > 0 and rows[0]["mean_iterations"] >= rows[1]["mean_iterations"]
