"""sweep(model=...) applies the model's context as `sweep --model` does, and says what it dropped."""
import os
import re
import subprocess

import pytest

import mlaplan

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.path.join(ROOT, "build", "mlaplan")
ARGS = dict(workload="coding-agent", batches=300, buffer_tokens=[65536], policies="packed", gpu="h100",
            model="deepseek-v3", tp=8)


def test_the_models_context_drops_what_the_cli_drops():
    rows = mlaplan.sweep(**ARGS)
    assert rows.max_model_len == 163840  # DeepSeek-V3's max_position_embeddings
    assert rows.dropped > 0
    assert isinstance(rows, list) and rows[0]["buffer_tokens"] == 65536  # still the rows
    if not os.access(CLI, os.X_OK):
        pytest.skip("no build/mlaplan to compare with")
    out = subprocess.run([CLI, "sweep", "--workload", "coding-agent", "--batches", "300", "--buffer-tokens", "65536",
                          "--policy", "packed", "--model", "deepseek-v3", "--tp", "8", "--gpu", "h100"],
                         capture_output=True, text=True, check=True).stdout
    cli = int(re.search(r"([\d,]+) requests over max_model_len 163840 dropped", out).group(1).replace(",", ""))
    assert rows.dropped == cli


def test_max_model_len_given_wins():
    none = mlaplan.sweep(**ARGS, max_model_len=0)
    assert (none.max_model_len, none.dropped) == (0, 0)
    tight = mlaplan.sweep(**ARGS, max_model_len=65536)
    assert tight.max_model_len == 65536
    assert tight.dropped > mlaplan.sweep(**ARGS).dropped
    # Fewer long requests: the packed loop needs fewer iterations at the tail than without a cap.
    assert tight[0]["max_iterations"] <= none[0]["max_iterations"]


def test_no_model_no_cap():
    rows = mlaplan.sweep("coding-agent", batches=50, buffer_tokens=[65536], policies="packed")
    assert (rows.max_model_len, rows.dropped) == (0, 0)


def test_max_model_len_is_checked_by_name():
    with pytest.raises(ValueError, match="max_model_len"):
        mlaplan.sweep(**ARGS, max_model_len=-1)
