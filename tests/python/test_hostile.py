"""The third hardening round's Python cases, as a hostile user meets them: the package's commands (mlaplan.prefill,
mlaplan.calibrate, its validate) and the API (sweep, replay) keep the contract of docs/interface.md:
exit 2 and one `mlaplan: error:` line naming the file or option (no traceback), exit 3 for a device
that failed a write, 130 for Ctrl-C or SIGTERM, nothing left behind, outputs by the CLI's rules. The
API's values, the reads and validate's refusals are in test_hostile_inputs.py."""
import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest

import mlaplan
from mlaplan import _files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIO = os.path.join(ROOT, "scenarios", "worked-example.json")
TRACE = os.path.join(ROOT, "tests", "data", "mooncake_conversation_head2000.jsonl")
COST = os.path.join(ROOT, "tests", "data", "cost", "deepseek-v3-tp8-example.json")
SMALL = ["--model", "deepseek-v2-lite", "--heads", "1", "--device", "cpu", "--reps", "0"]
# The subprocesses import the package this process imported (installed, or the source tree with its
# built module), never python/ of the source tree on its own, which has no compiled module.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(mlaplan.__file__)))
ENV = dict(os.environ, PYTHONPATH=PACKAGE_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run(*args, stdout=subprocess.PIPE, timeout=300, prelude=""):
    """`python -m MODULE ARGS` (prelude: Python run first, e.g. to hide a package)."""
    module, rest = args[0], list(args[1:])
    code = f"{prelude}\nimport runpy, sys\nsys.argv = {[module] + rest!r}\nrunpy.run_module({module!r}, run_name='__main__')"
    return subprocess.run([sys.executable, "-c", code], stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                          timeout=timeout, env=ENV)


def interruptible(cmd, **kwargs):
    """Popen with SIGINT as a terminal gives it. A runner started in the background (`cmd &` without job
    control, nohup) passes SIGINT on ignored, and Python then keeps it ignored, so Ctrl-C would be
    tested as a signal the child never sees."""
    return subprocess.Popen(cmd, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kwargs)


@contextlib.contextmanager
def reaped(p):
    """The child killed if the test fails before it ends, so that it does not load the rest of the run."""
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def one_error_line(r, code, *words):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == code, r.stderr
    assert len(lines) == 1 and lines[0].startswith("mlaplan: error: "), r.stderr
    for w in words:
        assert w in lines[0], r.stderr
    return lines[0]


def in_process(capsys, args, code=2):
    from mlaplan.prefill.__main__ import entry

    got = entry(args)
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert got == code and len(lines) == 1 and lines[0].startswith("mlaplan: error: "), (got, captured.err)
    return lines[0], captured.out


def api_child(call, prelude=""):
    """A child that imports the package, prints ready, makes CALL and prints whether it finished or was
    interrupted (KeyboardInterrupt), with SIGINT as a terminal gives it."""
    script = textwrap.dedent("""
        import sys, time, numpy as np, mlaplan
        {prelude}
        print("ready", flush=True)
        try:
            {call}
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """).format(prelude=prelude, call=call)
    return interruptible([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


# 1. The writer: devices and FIFOs written in place, symlinks followed, modes kept, errors reported.

def test_a_symlink_is_written_through_and_the_mode_kept(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    _files.write_file_now(str(link), "new", "-o")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new" and stat.S_IMODE(os.stat(target).st_mode) == 0o640
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "made.txt")
    _files.write_file_now(str(dangling), "x", "-o")
    assert dangling.is_symlink() and (tmp_path / "made.txt").read_text() == "x"
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(_files.InputError, match="symbolic links"):
        _files.write_file_now(str(loop), "x", "-o")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "link.txt", "loop", "made.txt", "target.txt"]


def test_a_fifo_is_written_into(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    _files.write_file_now(str(fifo), "through the pipe\n", "-o")
    reader.join(10)
    assert got == [b"through the pipe\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["fifo"]


def _device_node(tmp_path, name, minor):
    """A character device like /dev/null (1, 3) or /dev/full (1, 7), made with mknod (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mknod needs root; the tests run as another user here")
    node = tmp_path / name
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        os.close(os.open(node, os.O_WRONLY))
    except OSError as e:  # a file system mounted nodev, or no CAP_MKNOD in this container
        pytest.skip(f"cannot make or open a device node in {tmp_path}: {e.strerror}")
    return node


def test_a_device_node_is_written_into_not_replaced(tmp_path):
    null = _device_node(tmp_path, "null", 3)
    _files.write_file_now(str(null), "gone", "-o")
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    full = _device_node(tmp_path, "full", 7)
    with pytest.raises(_files.DeviceError, match="no space left"):
        _files.write_file_now(str(full), "x" * 100, "-o")
    assert stat.S_ISCHR(os.lstat(full).st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["full", "null"]


def test_prefill_to_dev_full_is_exit_3_and_leaves_the_device(tmp_path):
    r = run("mlaplan.prefill", SCENARIO, *SMALL, "-o", "/dev/full")
    one_error_line(r, 3, "/dev/full: writing the output failed: no space left")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode) and os.stat("/dev/full").st_rdev == os.makedev(1, 7)


def test_calibrate_refit_writes_through_a_symlink(tmp_path):
    pytest.importorskip("scipy", reason="the fit needs scipy (pip install .[calibrate])")
    from test_calibrate import synthetic

    meas = tmp_path / "m.json"
    meas.write_text(json.dumps({"format": "mlaplan-calibration-measurements", "model": "deepseek-v3", "tp": 8, "heads": 16,
                                "dtype": "bf16", "attention": "flash", "merge": "fused (Triton)", "gpu": "NVIDIA H200",
                                "sms": 132, "date": "2026-12-01", "records": synthetic(30, 0.01)}))
    target = tmp_path / "real.json"
    target.write_text("{}")
    os.chmod(target, 0o604)
    (tmp_path / "cost.json").symlink_to(target)
    r = run("mlaplan.calibrate", "--refit", str(meas), "-o", str(tmp_path / "cost.json"), "--commit", "abc")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "cost.json").is_symlink() and json.loads(target.read_text())["format"] == "mlaplan-cost-model"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o604


def _refit_measurements(tmp_path):
    from test_calibrate import synthetic

    meas = tmp_path / "m.json"
    meas.write_text(json.dumps({"format": "mlaplan-calibration-measurements", "model": "deepseek-v3", "tp": 8, "heads": 16,
                                "dtype": "bf16", "attention": "flash", "merge": "fused (Triton)", "gpu": "NVIDIA H200",
                                "sms": 132, "date": "2026-12-01", "records": synthetic(30, 0.01)}))
    return meas


def test_calibrate_summary_on_a_full_device_or_a_closed_pipe_is_exit_3(tmp_path):
    # The summary is printed after the fit: its stdout failing must be the contract's line, and the
    # cost file it would have committed is not written.
    pytest.importorskip("scipy", reason="the fit needs scipy (pip install .[calibrate])")
    meas, out = _refit_measurements(tmp_path), tmp_path / "cost.json"
    with open("/dev/full", "w") as full:
        r = run("mlaplan.calibrate", "--refit", str(meas), "-o", str(out), stdout=full)
    one_error_line(r, 3, "stdout: writing the output failed: no space left", "nothing written")
    assert not out.exists()
    read, write = os.pipe()
    os.close(read)  # the reader went away before the first line
    with os.fdopen(write, "w") as gone:
        r = run("mlaplan.calibrate", "--refit", str(meas), "-o", str(out), stdout=gone)
    one_error_line(r, 3, "stdout: writing the output failed: broken pipe")
    assert not out.exists()


# 6, 14. Prefill's outputs and arguments.

@pytest.mark.parametrize("args,message", [
    (["{s}", "-o", "{s}"], "is also the scenario file"),
    (["{s}", "-o", "{t}/x.json", "--json", "{t}/x.json"], "is also the file of -o"),
    (["{s}", "-o", "/proc/version"], "/proc/version: cannot write the output file"),
    (["{t}/empty.json"], "holds no scenario"),
    (["{s}", "--buffer-tokens", "1,,2"], "an empty item"),
    (["{s}", "--buffer-tokens", "64,"], "an empty item"),
    (["{s}", "--trace", "{t}/t.json", "--reps", "0"], "--trace: it records the profiled run"),
    (["{s}", "--reps", "10000000"], "--reps: 10000000 is outside the range"),
    (["{s}", "--reps", "1e3"], "not written in digits"),
    (["{s}", "--heads", "2", "--tp", "2"], "give either --tp or --heads"),
    (["{s}", "--model", "deepseek-v3", "--model-config", "tests/data/deepseek_v3_config.json"], "--model-config: give either"),
    (["{s}", "--json", ""], "--json: an empty path"),
    (["{s}", "--weights", "fp4"], "--weights: invalid choice: 'fp4' (choose from 'bf16', 'fp8')"),
    (["{s}", "--policy", "packed+fused+fused"], "--policy packed+fused+fused: unknown policy"),
    (["{s}", "--policy", "+fused"], "--policy +fused: name the policy whose plan the fused loop runs"),
])
def test_prefill_refuses_in_one_line(tmp_path, monkeypatch, capsys, args, message):
    s = str(tmp_path / "s.json")
    with open(SCENARIO) as f:
        open(s, "w").write(f.read())
    (tmp_path / "empty.json").write_text('{"scenarios": []}')
    monkeypatch.chdir(ROOT)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    line, out = in_process(capsys, [a.replace("{s}", s).replace("{t}", str(tmp_path)) for a in args] + ["--device", "cpu"])
    assert message in line and out == ""
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_prefill_stdout_on_a_full_device_is_exit_3():
    with open("/dev/full", "w") as full:
        r = run("mlaplan.prefill", SCENARIO, *SMALL, stdout=full)
    one_error_line(r, 3, "stdout: writing the output failed: no space left")


# 7. Interrupts: 130 and the CLI's line, SIGTERM as Ctrl-C, nothing written.

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_prefill_interrupted_is_130_with_one_line(tmp_path, sig):
    out = tmp_path / "out.txt"
    cmd = [sys.executable, "-m", "mlaplan.prefill", SCENARIO, "--model", "deepseek-v2-lite", "--heads", "1", "--device",
           "cpu", "--reps", "1000000", "--warmup", "0", "-o", str(out)]
    with reaped(interruptible(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)) as p:
        time.sleep(8)  # past the imports, into the timed runs
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert err.strip().splitlines() == ["mlaplan: error: prefill: interrupted; nothing written"], err
    assert list(tmp_path.iterdir()) == []


# 15. Escaping.

def test_prefill_escapes_control_characters_in_names(tmp_path, monkeypatch, capsys):
    from mlaplan.prefill.__main__ import entry

    s = tmp_path / "esc.json"
    s.write_text(json.dumps({"name": "a\x1b[31mb\x07", "page_size": 16, "buffer_token_size": 64, "max_chunks": 4,
                             "cache_lengths": [10], "input_lengths": [3]}))
    assert entry([str(s), *SMALL, "--policy", "packed"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "a\\x1b[31mb\\x07: 1 sequences" in out
    assert entry([str(s), *SMALL, "--policy", "packed", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["batches"][0]["scenario"] == "a\x1b[31mb\x07"  # JSON keeps it as it is


# The house: torch's profiler says nothing on stderr.

def test_the_profiler_warns_nothing_on_stderr(capfd):
    import torch

    from mlaplan.prefill.timing import quiet_profiler

    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with quiet_profiler():
            # Without a GPU torch warns "CUDA is not available, disabling CUDA profiling" here; on a GPU
            # "Profiler clears events at the end of each cycle..."; and kineto prints its own lines.
            with torch.profiler.profile(activities=activities) as prof:
                torch.ones(8).sum()
            prof.events()
            warnings.warn("ours", UserWarning)  # anything else passes
    assert [str(w.message) for w in caught] == ["ours"]
    err = capfd.readouterr().err
    assert "USDT:" not in err and "profiler_start" not in err, err


@pytest.mark.parametrize("args", [["--batches", "-1"], ["--max-steps", "0"], ["--tp", "x"], ["--weights", "fp4"]])
def test_check_arguments_are_one_line(args):
    # The check's bounds are the commands' (its --max-steps unbounded below would scale forever).
    one_error_line(run("mlaplan.prefill.check", "--device", "cpu", *args), 2, args[0])


@pytest.mark.parametrize("device, message", [("bogus", "unknown device"), ("cuda:0", "no CUDA GPU here")])
def test_check_device_is_the_commands(device, message):
    # It was torch.device's own: a traceback (exit 1) for cuda on a machine without one, exit 3 for a bad name.
    torch = pytest.importorskip("torch", reason="the check runs the executor, which needs torch (pip install .[torch])")
    if device.startswith("cuda") and torch.cuda.is_available():
        pytest.skip("a machine with a GPU takes --device cuda:0")
    one_error_line(run("mlaplan.prefill.check", "--device", device, "--small", "--batches", "1"), 2, "--device", message)


@pytest.mark.parametrize("module", ["mlaplan.calibrate", "mlaplan.calibrate.validate"])
@pytest.mark.parametrize("value", ["nan", "-5", "0", "inf"])
def test_max_seconds_is_a_positive_number(module, value):
    one_error_line(run(module, "--max-seconds", value), 2, "--max-seconds", "positive number of seconds")


def test_calibrate_scheduler_is_one_it_prices():
    one_error_line(run("mlaplan.calibrate", "--refit", "x.json", "--scheduler", "fifo", "-o", "y.json"), 2,
                   "--scheduler: invalid choice: 'fifo' (choose from 'auto', 'grid', 'sorted', 'sectioned')")


@pytest.mark.parametrize("value", ["nan", "-1", "0", "inf", "x"])
def test_workload_weight_is_a_positive_number(value):
    one_error_line(run("mlaplan.calibrate", "-o", "c.json", "--workload-weight", value), 2, "--workload-weight", "positive weight")


def test_replay_past_its_memory_limit_speaks_of_steps_and_keywords():
    with pytest.raises(ValueError) as e:
        mlaplan.replay(TRACE, token_budget=1, memory_limit="1MiB")
    text = str(e.value)
    assert text.startswith("replay: the first ") and "steps formed already take" in text
    assert "above memory_limit=1.00 MiB; give a larger token_budget (fewer steps) or raise memory_limit" in text
    assert "--" not in text and "batches" not in text
