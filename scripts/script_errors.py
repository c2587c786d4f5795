"""How the scripts report bad input, as the package's commands do (docs/interface.md): exit 2 and one
line, `mlaplan: error: SCRIPT: what is wrong; the fix`, never a traceback or argparse's usage block."""
import argparse
import errno
import functools
import os
import signal
import subprocess
import sys
from typing import NoReturn


def fail(why: str) -> NoReturn:
    print(f"mlaplan: error: {os.path.basename(sys.argv[0])}: {why}", file=sys.stderr)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    """argparse whose errors are that one line: the message and where the usage is."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message}; see {self.prog} --help")


MAX_INPUT = 256 << 20  # as the package's and the CLI's readers: /dev/zero is refused, not read forever


@functools.lru_cache(maxsize=None)
def _strict_json():
    """The package's JSON rules (python/mlaplan/_strict_json.py, standard library only), loaded by path
    once a process: the plotting scripts run without the package built."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "mlaplan", "_strict_json.py")
    spec = importlib.util.spec_from_file_location("mlaplan_strict_json", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_json(path: str, what: str):
    """The JSON document at path, or the one line: unreadable, over 256 MiB, or not JSON by the
    package's rules (NaN, Infinity, numbers past a double's range, a key given twice in one object, and
    nesting too deep for Python included). `what`: what to give instead."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_INPUT + 1)
    except OSError as e:
        fail(f"{path}: cannot read it ({e.strerror or e}); give {what}")
    if len(data) > MAX_INPUT:
        fail(f"{path}: over {MAX_INPUT >> 20} MiB; give {what}")
    try:
        return _strict_json().loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        fail(f"{path}: not JSON (byte {e.start} is not UTF-8); give {what}")
    except (ValueError, RecursionError) as e:
        fail(f"{path}: not JSON ({str(e).splitlines()[0] or 'nested too deeply'}); give {what}")


def run_mlaplan(exe: str, args, label: str, explain=lambda line: line) -> str:
    """mlaplan's stdout for `exe ARGS`, or the one line: a binary that does not run, or its own last
    error line after `label` (what was being run), passed through `explain` (to name the user's file
    where mlaplan read a temporary one)."""
    try:
        r = subprocess.run([exe, *args], capture_output=True, text=True)
    except OSError as e:
        fail(f"{exe}: {e.strerror}; build it (scripts/build.sh) and give its path")
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [f"exited {r.returncode}"])[-1].removeprefix("mlaplan: error: ")
        fail(f"{label}: {explain(last)}")
    return r.stdout


def run(main) -> NoReturn:
    """Runs a script's main() (its return value the exit status, None for 0) as the package's commands
    end: output piped into `head` ends quietly, Ctrl-C is one line and 130, and a stdout that cannot
    be written (a full disk, /dev/full) one line and 3, never a traceback."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        code = main()
        sys.stdout.flush()
    except KeyboardInterrupt:
        print(f"mlaplan: error: {os.path.basename(sys.argv[0])}: interrupted", file=sys.stderr)
        os._exit(130)
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT):
            raise
        print(f"mlaplan: error: {os.path.basename(sys.argv[0])}: stdout: cannot write it ({e.strerror}); "
              f"free space or give another output", file=sys.stderr)
        os._exit(3)
    sys.exit(code or 0)
