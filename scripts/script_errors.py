"""How the scripts report bad input, as the package's commands do (docs/interface.md): exit 2 and one
line, `mlaplan: error: SCRIPT: what is wrong; the fix`, never a traceback or argparse's usage block."""
import argparse
import json
import os
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


def load_json(path: str, what: str):
    """The JSON document at path, or the one line: unreadable, or not JSON. `what`: what to give instead."""
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        fail(f"{path}: cannot read it ({e.strerror or e}); give {what}")
    except ValueError as e:
        fail(f"{path}: not JSON ({str(e).splitlines()[0]}); give {what}")


def run_mlaplan(exe: str, args, label: str) -> str:
    """mlaplan's stdout for `exe ARGS`, or the one line: a binary that does not run, or its own last
    error line after `label` (what was being run)."""
    try:
        r = subprocess.run([exe, *args], capture_output=True, text=True)
    except OSError as e:
        fail(f"{exe}: {e.strerror}; build it (scripts/build.sh) and give its path")
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [f"exited {r.returncode}"])[-1].removeprefix("mlaplan: error: ")
        fail(f"{label}: {last}")
    return r.stdout
