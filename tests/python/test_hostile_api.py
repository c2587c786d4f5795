"""The fourth hardening round's cases for the Python API and `python -m mlaplan.prefill` (issue 61): Ctrl-C
stops every call that reads a file, a FIFO included, within a second (KeyboardInterrupt; exit 130 for
the command, also inside one long torch call); the prefill command protects the cost file inside
guided:FILE from its outputs and refuses empty policy spellings; the API refuses what the CLI refuses,
names its keywords, merges a setting given twice and shows progress when asked."""
import os
import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import mlaplan

from test_hostile import COST, ENV, ROOT, SCENARIO, SMALL, TRACE, in_process, interruptible, reaped

EAGER_COST = os.path.join(ROOT, "tests", "data", "cost", "deepseek-v3-tp8-eager-example.json")
BATCH = "[1000], [0, 100], 1, 400"  # cache_lengths, input_row_offsets, page_size, buffer_token_size


def _line(p, timeout=2.0):
    """The child's next stdout line, or None after `timeout` s (a child that never answers fails the
    test instead of hanging it)."""
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    return p.stdout.readline().strip() if ready else None


def _child(script):
    return interruptible([sys.executable, "-c", textwrap.dedent(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)


# 1. Ctrl-C on a FIFO: every call that reads a file (a cost file, guided:FILE, a trace) raises
# KeyboardInterrupt at once; they blocked, deaf to SIGINT, until a writer came.

FIFO_CALLS = [
    "mlaplan.sweep('short-chat', batches=10, cost=FIFO)",
    "mlaplan.sweep('short-chat', batches=10, policies='guided:' + FIFO)",
    "mlaplan.sweep(replay=TRACE, batches=10, cost=FIFO)",
    f"mlaplan.plan_policy({BATCH}, 4, 'guided:' + FIFO)",
    f"mlaplan.cost_features({BATCH}, 'guided:' + FIFO, 16)",
    f"mlaplan.cost_launches({BATCH}, 'guided/eager:' + FIFO, 16)",
    f"mlaplan.merges_per_query({BATCH}, 'guided:' + FIFO)",
    f"mlaplan.engine_path({BATCH}, 'guided:' + FIFO, 90)",
]


def test_ctrl_c_stops_every_call_on_a_fifo(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    # One process makes every call in turn; each is interrupted before the next (a parent's line).
    # (Lambdas, not eval: a KeyboardInterrupt caught around eval's frame ends the process at exit.)
    script = f"""
        import sys, mlaplan
        FIFO, TRACE = {fifo!r}, {TRACE!r}
        CALLS = [{", ".join("lambda: " + c for c in FIFO_CALLS)}]
        for i, call in enumerate(CALLS):
            print("ready", i, flush=True)
            try:
                call()
                print("finished", flush=True)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
            sys.stdin.readline()
    """
    with reaped(_child(script)) as p:
        for i, call in enumerate(FIFO_CALLS):
            assert _line(p, 30) == f"ready {i}", call
            time.sleep(0.3)  # into the open
            sent = time.monotonic()
            p.send_signal(signal.SIGINT)
            got = _line(p)
            assert got == "interrupted" and time.monotonic() - sent < 1, (call, got)
            p.stdin.write("\n")
            p.stdin.flush()
        _, err = p.communicate(timeout=30)
    assert p.returncode == 0 and err == "", err


def test_ctrl_c_stops_a_slow_pipe(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    script = f"""
        import mlaplan
        print("ready", flush=True)
        try:
            mlaplan.sweep("short-chat", batches=10, policies="guided:" + {fifo!r})
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """
    with reaped(_child(script)) as p:
        assert p.stdout.readline().strip() == "ready"
        writer = os.open(fifo, os.O_WRONLY)  # waits for the reader; then half a file, and no end
        try:
            os.write(writer, b'{"model": ')
            time.sleep(0.3)
            sent = time.monotonic()
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=5)
        finally:
            os.close(writer)
    assert out.strip() == "interrupted" and time.monotonic() - sent < 1.5, (out, err)


# 2. The prefill command: Ctrl-C and SIGTERM within a second on guided:FIFO and inside one long torch
# call (its handlers ran only after the call: 12 to 17 s); outputs never over guided's file.

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_prefill_stops_on_a_guided_fifo(tmp_path, sig):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    cmd = [sys.executable, "-m", "mlaplan.prefill", SCENARIO, *SMALL, "--policy", f"guided:{fifo}"]
    writer = None
    with reaped(interruptible(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)) as p:
        deadline = time.monotonic() + 60
        while writer is None and time.monotonic() < deadline:
            try:  # succeeds once the command opens guided's file (past torch's import); then it waits to read
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.05)
        try:
            time.sleep(0.2)
            sent = time.monotonic()
            p.send_signal(sig)
            _, err = p.communicate(timeout=5)
        finally:
            if writer is not None:
                os.close(writer)
    assert p.returncode == 130 and time.monotonic() - sent < 1, err
    assert err.strip().splitlines() == ["mlaplan: error: prefill: interrupted; nothing written"], err


def test_prefill_stops_inside_one_long_torch_call(tmp_path):
    out = tmp_path / "out.txt"
    # entry's handling as `python -m` runs it, around a command held in one matrix product of seconds.
    script = f"""
        import torch
        from mlaplan import _files
        from mlaplan.prefill.__main__ import entry, exit_with
        def command(argv):
            _files.outputs().claim_output({str(out)!r}, "-o")
            _files.outputs().stage({str(out)!r}, "partial")
            torch.set_num_threads(1)
            a = torch.ones(6000, 6000)
            print("ready", flush=True)
            torch.mm(a, a)
            return 0
        exit_with(entry([], command))
    """
    with reaped(_child(script)) as p:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        sent = time.monotonic()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and time.monotonic() - sent < 1, err
    assert err.strip().splitlines() == ["mlaplan: error: prefill: interrupted; nothing written"], err
    assert list(tmp_path.iterdir()) == []  # the staged temporary removed


@pytest.mark.parametrize("option", [["-o"], ["--json"], ["--trace", "--reps", "1"]])
def test_prefill_never_writes_over_guideds_cost_file(tmp_path, monkeypatch, capsys, option):
    cost = tmp_path / "c.json"
    cost.write_bytes(open(COST, "rb").read())
    before = cost.read_bytes()
    monkeypatch.chdir(tmp_path)
    args = [SCENARIO, *SMALL, "--policy", "packed,guided:c.json", option[0], "c.json", *option[1:]]
    line, out = in_process(capsys, args)
    assert f"{option[0]} c.json: is also the cost file of --policy guided:c.json" in line, line
    assert cost.read_bytes() == before and out == "" and sorted(os.listdir(tmp_path)) == ["c.json"]


@pytest.mark.parametrize("policy,message", [
    ("packed,,max", "--policy packed,,max: an empty item in the list"),
    ("packed,", "--policy packed,: an empty item in the list"),
])
def test_prefill_refuses_empty_policy_spellings(capsys, policy, message):
    line, _ = in_process(capsys, [SCENARIO, *SMALL, "--policy", policy])
    assert message in line, line


# 3. The API refuses what the CLI refuses, by keyword.

@pytest.mark.parametrize("call,kwargs,message", [
    ("replay", dict(max_model_len=1), "^max_model_len=1: every request of .* is longer"),
    ("replay", dict(prefix_cache_tokens=100), "^prefix_cache_tokens=100: less than one block of 512 tokens"),
    ("replay", dict(step_ms=1e-4), r"^step_ms=0.0001: .* from 0.001 to 3600000"),
    ("replay", dict(step_ms=4e6), r"^step_ms=4000000.0: "),
    ("sweep", dict(prefix_cache_tokens=100, replay_block_size=256), "^prefix_cache_tokens=100: less than one block of 256"),
    ("sweep", dict(step_ms=1e-4), "^step_ms=0.0001: "),
    ("sweep", dict(seed=5), "^seed: it draws a workload preset's requests"),
])
def test_replay_values_the_cli_refuses(call, kwargs, message):
    with pytest.raises(ValueError, match=message):
        if call == "replay":
            mlaplan.replay(TRACE, **kwargs)
        else:
            mlaplan.sweep(replay=TRACE, batches=5, buffer_tokens=[4096], **kwargs)


def test_eager_timing_errors_name_the_keyword():
    with pytest.raises(ValueError) as e:
        mlaplan.sweep("short-chat", batches=10, cost=COST, timing="eager")
    assert "timing='eager' needs the host's dispatch costs" in str(e.value) and "--" not in str(e.value), str(e.value)


def test_a_setting_given_twice_is_one_row():
    rows = mlaplan.sweep("short-chat", batches=10, buffer_tokens=[4096], policies="guided,guided/eager", timing="eager",
                         cost=EAGER_COST)
    assert [r["policy"] for r in rows] == ["guided/eager"]


def test_engine_path_and_its_reason_agree_without_a_gpu():
    for buffer in (64, 640):  # the loop, then the whole context at once
        path, reason = mlaplan.engine_path([100], [0, 10], 1, buffer, "guided:" + COST, 0)
        assert ("whole context at once" in reason) == (path == "one-shot") and "no GPU named" not in reason, (path, reason)


# 4. Progress, when asked: a function called on the caller's thread, or a line on stderr.

def test_sweep_progress_calls_and_stops(capfd, monkeypatch):
    seen = []
    rows = mlaplan.sweep("short-chat", batches=200, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (len(rows), len(rows)) and all(t == len(rows) for _, t in seen), seen

    class Enough(Exception):
        pass

    def stop(done, total):
        raise Enough

    with pytest.raises(Enough):
        mlaplan.sweep("short-chat", batches=3_000_000, progress=stop)
    from mlaplan import _progress

    monkeypatch.setattr(_progress, "LINE_S", 0.0)
    mlaplan.sweep("short-chat", batches=20000, progress=True)  # long enough for a tick (50 ms)
    assert "mlaplan: sweep: " in capfd.readouterr().err
    with pytest.raises(TypeError, match="^progress: expected True, False, None or a function"):
        mlaplan.sweep("short-chat", batches=10, progress="yes")
