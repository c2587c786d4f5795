"""Every `python -m mlaplan...` command's --help, as the C++ subcommands' (HelpCli): examples, and every
line within 120 columns, read in a terminal of 200 so that argparse's own wrapping hides nothing."""
import os
import subprocess
import sys

import pytest

import mlaplan

COMMANDS = ["mlaplan.prefill", "mlaplan.prefill.check", "mlaplan.prefill.any_batch", "mlaplan.calibrate",
            "mlaplan.calibrate.validate"]
ENV = {**os.environ, "COLUMNS": "200", "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(mlaplan.__file__)))}


@pytest.mark.parametrize("module", COMMANDS)
def test_help_has_examples_within_120_columns(module):
    pytest.importorskip("torch", reason="the command needs torch (pip install .[torch])")
    r = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, cwd="/tmp", env=ENV)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    assert f"python -m {module}" in lines[0]
    section = lines[lines.index("examples:") + 1:]
    section = section[:section.index("")] if "" in section else section
    assert any(line.startswith(f"  python -m {module} ") for line in section), section
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)
