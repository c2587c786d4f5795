"""The fourth hardening round's bounds on the Python API's one-batch calls (issue 61): Ctrl-C stops a
long pricing or plan of one large batch within a second (KeyboardInterrupt; the library's loops poll
the stop request), and tables that would pass the CLI's default --memory-limit are refused up front
(ValueError naming max_chunks or buffer_token_size, with the fix) rather than allocated, while MAX is
priced from its closed form without tables at all."""
import resource
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from test_hostile import ENV, ROOT, api_child, reaped

FA2 = f"{ROOT}/costs/h200/deepseek-v3-tp8-bf16.json"
# 2^20 sequences of 1,000 cached tokens and one new each: guided's widest candidate streams them as one
# group through 16,000 chunks (48 s before its loops polled the stop request).
BIG = "np.full(2**20, 1000, np.uint32), np.arange(2**20 + 1, dtype=np.uint32), 64, 65536"

LONG_CALLS = [
    f"mlaplan.cost_features({BIG}, 'guided:{FA2}', 16)",
    f"mlaplan.plan_policy({BIG}, 1, 'guided:{FA2}')",
    f"mlaplan.merges_per_query({BIG}, 'guided:{FA2}')",
]


@pytest.mark.parametrize("call", LONG_CALLS)
def test_ctrl_c_stops_one_large_batch_within_a_second(call):
    with reaped(api_child(call)) as p:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # into the pricing
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        took = time.monotonic() - sent
        p.communicate(timeout=60)
    assert line == "interrupted" and took < 1.0, (call, line, took)


def _bounded(call, gib=3):
    """`call` run in a child whose address space is capped (a table of gigabytes fails there as it
    would swap here): (stdout, stderr, seconds)."""
    script = textwrap.dedent(f"""
        import numpy as np, mlaplan
        try:
            print(repr({call}))
        except ValueError as e:
            print("ValueError:", e)
    """)
    cap = gib << 30
    t = time.monotonic()
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=ENV, timeout=120,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
    return r.stdout.strip(), r.stderr, time.monotonic() - t


THOUSAND = "[1] * 1000, list(range(1001)), 1, 64"


@pytest.mark.parametrize("call,words", [
    # 2^20 rows x 1,001 columns: 7.8 GiB of tables (56 s and 8 GB before).
    (f"mlaplan.plan_policy({THOUSAND}, 2**20, 'packed')", ["max_chunks:", "7.82 GiB", "give at most"]),
    (f"mlaplan.plan_policy({THOUSAND}, 2**20, 'max')", ["max_chunks:", "7.82 GiB", "give at most"]),
    (f"mlaplan.plan({THOUSAND}, 2**20)", ["max_chunks:", "7.82 GiB", "give at most"]),
    # 2^31 tokens at a buffer of one row: 2^31 chunks, which its tables took 16 GiB for (OOM-killed).
    ("mlaplan.cost_features([2**31], [0, 1], 1, 1, 'max', 16)", ["max:", "buffer_token_size"]),
    ("mlaplan.cost_launches([2**31], [0, 1], 1, 1, 'max', 16)", ["max:", "buffer_token_size"]),
    ("mlaplan.merges_per_query([2**31], [0, 1], 1, 1, 'max')", ["max:", "buffer_token_size"]),
])
def test_tables_past_the_memory_limit_are_refused_up_front(call, words):
    out, err, took = _bounded(call)
    assert out.startswith("ValueError:"), (out, err)
    for w in words:
        assert w in out, out
    assert took < 20, took


def test_max_is_priced_without_its_tables():
    # 2^31 tokens through 2,049 chunks: its tables at max_chunks 0 (as many as needed) were small, but
    # 2^31 at a page of 1 token and 2^30 chunks was not; none are made now.
    out, err, _ = _bounded("mlaplan.cost_features([2**31], [0, 1], 1, 2**20, 'max', 16)['per_iteration_us']")
    assert out == "2049.0", (out, err)
    out, err, _ = _bounded("mlaplan.merges_per_query([2**31], [0, 1], 1, 2**20, 'max')['max']")
    assert out == "2049", (out, err)  # the new token attends every chunk
