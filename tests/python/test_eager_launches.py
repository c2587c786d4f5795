"""Eager time's launch counts (mlaplan.cost_launches, the C++ run/sweep use) are the kernels the
executor's loop launches, per kind, counted in execute itself (executor.launch_log) on random
batches under every engine, on its chunked paths and on the paths it dispatches to on SM90."""
import numpy as np
import pytest

import mlaplan

torch = pytest.importorskip("torch", reason="the executor needs torch")

from mlaplan.prefill import executor  # noqa: E402
from mlaplan.prefill.inputs import host_page_table, random_inputs  # noqa: E402
from mlaplan.prefill.model import model_dims  # noqa: E402
from mlaplan.prefill.schedule import POLICIES as ENGINES, build_schedule  # noqa: E402


def _executed_launches(cache, new, page, buffer, engine, paths):
    dims = model_dims("deepseek-v2-lite", heads=2)
    offsets = np.concatenate([[0], np.cumsum(new)]).astype(np.int64)
    x = random_inputs(cache, offsets, page, dims, torch.float32, "cpu", 1)
    s = build_schedule(engine, x.lengths, host_page_table(x), buffer, None, torch.device("cpu"), **paths)
    if s.path == "absorbed":  # a float32 reference, not timed: not counted
        return None, s
    executor.launch_log = {}
    try:
        executor.execute(executor.prepare(x, s))
        return {k: executor.launch_log.get(k, 0) for k in executor.LAUNCH_KINDS}, s
    finally:
        executor.launch_log = None


def test_launch_counts_are_the_executors():
    rng = np.random.default_rng(35)
    seen = set()
    for trial in range(90):
        b = int(rng.integers(1, 5))
        cache = [int(v) if rng.random() < 0.75 else 0 for v in rng.integers(0, 700, b)]
        new = [int(v) for v in rng.integers(0, 60, b)]
        if sum(new) == 0:
            new[0] = 1
        page = int(rng.choice([1, 16]))
        buffer = int(rng.integers(64, 900))
        engine = ENGINES[trial % len(ENGINES)]
        offsets = np.concatenate([[0], np.cumsum(new)]).astype(np.uint32)
        for paths, sm in (({"sglang_path": "chunked", "trtllm_path": "sm100"}, 0),
                          ({"sglang_path": "auto", "trtllm_path": "sm90"}, 90)):
            where = f"{engine} sm {sm} cache {cache} new {new} page {page} buffer {buffer}"
            try:
                got, s = _executed_launches(cache, new, page, buffer, engine, paths)
            except ValueError:  # the loop refuses the batch: so does the count
                with pytest.raises(ValueError):
                    mlaplan.cost_launches(np.asarray(cache, np.uint32), offsets, page, buffer, engine, 2, sm=sm, pad_v=True)
                continue
            if got is None:
                continue
            want = mlaplan.cost_launches(np.asarray(cache, np.uint32), offsets, page, buffer, engine, 2, sm=sm,
                                         pad_v=True)  # the CPU kernel takes V padded
            assert want == got, where
            seen.add((engine, s.path))
    assert len({e for e, _ in seen}) == len(ENGINES)
    assert {("packed/trtllm", "sm90"), ("packed/trtllm", "sm100"), ("even-split/sglang", "chunked")} <= seen


def test_pad_v_is_one_concat_per_up_projection():
    args = (np.asarray([3000, 500], np.uint32), np.asarray([0, 40, 90], np.uint32), 16, 1024, "even-split")
    plain, padded = mlaplan.cost_launches(*args, 16), mlaplan.cost_launches(*args, 16, pad_v=True)
    assert padded["concat"] == 2 * plain["concat"] == 2 * plain["up_projection"]
    assert {k: v for k, v in plain.items() if k != "concat"} == {k: v for k, v in padded.items() if k != "concat"}
