"""guided, mlaplan's own policy, in the executor: each batch run on the path and plan its cost file
picks (the C++ choice run and sweep price), and the output one-shot attention's."""
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the executor needs torch (pip install '.[torch]')")

import mlaplan  # noqa: E402
import mlaplan.prefill as mp  # noqa: E402
from mlaplan.prefill import schedule  # noqa: E402
from mlaplan.prefill.executor import execute, prepare  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUIDES = [os.path.join(ROOT, "costs", "h200", f) for f in ("deepseek-v3-tp8-bf16-fa3.json", "deepseek-v3-tp8-bf16.json")]
PACKAGE_ENV = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(mlaplan.__file__)))}
DIMS = mp.model_dims("deepseek-v2-lite", heads=2)


def random_batch(rng):
    b = int(rng.integers(1, 12))
    cache = [0 if rng.random() < 0.2 else int(rng.integers(1, 3000)) for _ in range(b)]
    new = [int(rng.integers(0 if i else 1, 300)) for i in range(b)]
    return cache, new, int(rng.choice([1, 16, 64])), int(rng.integers(64, 8000))


@pytest.mark.parametrize("guide", GUIDES, ids=["fa3", "fa2"])
def test_guided_runs_its_choice_and_matches_one_shot(guide):
    rng = np.random.default_rng(3)
    paths = set()
    for i in range(24):
        cache, new, page, buffer = random_batch(rng)
        offsets = [0] + np.cumsum(new).tolist()
        x = mp.random_inputs(cache, offsets, page, DIMS, torch.float32, "cpu", i)
        s = schedule.build_schedule("guided:" + guide, x.lengths, mp.host_page_table(x), buffer, None, "cpu")
        want, _ = mlaplan.engine_path(cache, offsets, page, buffer, "guided:" + guide, 90)
        if sum(cache) > 0:
            assert s.path == want, (cache, new, buffer)
            paths.add(s.path)
        if s.path == "chunked":  # the loop runs the tables the C++ planner writes
            assert s.iterations == mlaplan.plan_policy(cache, offsets, page, buffer, 1, "guided:" + guide).chunks_used
        ref_out, ref_lse = mp.one_shot(x)
        out, lse = execute(prepare(x, s))
        assert (out - ref_out).abs().max().item() <= 1e-4
        assert (lse - ref_lse).abs().max().item() <= 1e-4
    assert paths == {"chunked", "one-shot"}  # both exercised


def test_guided_needs_its_cost_file():
    with pytest.raises(ValueError, match="guided:COST.json"):
        schedule.engine_named("guided")
    with pytest.raises(ValueError, match="nope.json"):
        schedule.engine_named("guided:/nope.json")
    # The path keeps its case; the policy's words do not matter.
    assert schedule.engine_named("GUIDED:" + GUIDES[0]) == "guided:" + GUIDES[0]
    assert "guided" not in schedule.POLICIES  # "all" cannot run it without a file


def test_command_runs_guided_and_names_the_path():
    r = subprocess.run([sys.executable, "-m", "mlaplan.prefill", os.path.join(ROOT, "scenarios", "worked-example.json"),
                        "--model", "deepseek-v2-lite", "--device", "cpu", "--reps", "0", "--buffer-tokens", "64,4096",
                        "--policy", "packed,guided:" + GUIDES[0]], capture_output=True, text=True, env=PACKAGE_ENV, cwd="/")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "guided:" in ln and ("chunked" in ln or "one-shot" in ln)]
    assert len(lines) == 2 and "one-shot" in lines[1], r.stdout
    r = subprocess.run([sys.executable, "-m", "mlaplan.prefill.check", "--small", "--batches", "1", "--guide", "/nope.json"],
                       capture_output=True, text=True, env=PACKAGE_ENV, cwd="/")
    assert r.returncode == 2 and r.stderr.strip().startswith("mlaplan: error: --guide") and len(r.stderr.strip().splitlines()) == 1
