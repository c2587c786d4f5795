"""How the scripts report bad input, as the package's commands do (docs/interface.md): exit 2 and one
line, `mlaplan: error: SCRIPT: what is wrong; the fix`, never a traceback or argparse's usage block."""
import argparse
import os
import sys
from typing import NoReturn


def fail(why: str) -> NoReturn:
    print(f"mlaplan: error: {os.path.basename(sys.argv[0])}: {why}", file=sys.stderr)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    """argparse whose errors are that one line: the message and where the usage is."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message}; see {self.prog} --help")
