"""The host's cost per launch read from the stamps execute takes as it issues each launch
(executor.launch_stamps, prefill.host_clock): one stamp per launch the loop issues, in order, and
each interval charged to the launch it ends; and the host fit's check of its costs against them."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the executor needs torch")

from mlaplan.prefill import executor, host_clock  # noqa: E402
from mlaplan.prefill.inputs import host_page_table, random_inputs  # noqa: E402
from mlaplan.prefill.model import model_dims  # noqa: E402
from mlaplan.prefill.schedule import POLICIES as ENGINES, build_schedule  # noqa: E402


def _stamped(cache, new, page, buffer, engine):
    dims = model_dims("deepseek-v2-lite", heads=2)
    offsets = np.concatenate([[0], np.cumsum(new)]).astype(np.int64)
    x = random_inputs(cache, offsets, page, dims, torch.float32, "cpu", 1)
    s = build_schedule(engine, x.lengths, host_page_table(x), buffer, None, torch.device("cpu"),
                       sglang_path="chunked", trtllm_path="sm100")
    p = executor.prepare(x, s)
    executor.launch_log, executor.launch_stamps = {}, []
    try:
        executor.execute(p)
        return dict(executor.launch_log), executor.launch_stamps
    finally:
        executor.launch_log = executor.launch_stamps = None


@pytest.mark.parametrize("engine", ENGINES)
def test_every_launch_is_stamped_once_in_order(engine):
    counts, stamps = _stamped([700, 0, 300], [20, 30, 5], 16, 256, engine)
    assert stamps[0][0] == "start" and len(stamps) > 1
    times = [t for *_, t in stamps]
    assert times == sorted(times)
    stamped = {}
    for kind, n, _ in stamps[1:]:
        stamped[kind] = stamped.get(kind, 0) + n
    assert stamped == {k: v for k, v in counts.items() if v}  # the counts eager time prices, launch by launch
    spent, launches, issue_us = host_clock.layer_us(stamps)
    assert launches == {k: counts.get(k, 0) for k in executor.LAUNCH_KINDS}
    assert sum(spent.values()) == pytest.approx(issue_us) and issue_us > 0
    # Stamping is off again: a later layer takes none.
    assert executor.launch_stamps is None


def test_intervals_are_charged_to_the_launch_they_end_and_shared_among_its_launches():
    stamps = [("start", 0, 1_000), ("fill", 2, 5_000), ("gather", 1, 6_000), ("attention", 1, 206_000), ("merge", 1, 256_000)]
    spent, launches, issue = host_clock.layer_us(stamps)
    assert spent == {"gather": 1.0, "up_projection": 0.0, "concat": 0.0, "attention": 200.0, "merge": 50.0, "fill": 4.0}
    assert launches["fill"] == 2 and issue == 255.0
    runs = [stamps, [("start", 0, 0), ("fill", 2, 8_000), ("attention", 1, 308_000)], [("start", 0, 0), ("fill", 2, 6_000)]]
    got = host_clock.per_launch_us(runs)
    assert got["launch_us"] == {"gather": 1.0, "attention": 250.0, "merge": 50.0, "fill": 3.0}  # each kind's median per launch
    assert got["issue_ms"] == pytest.approx(0.255)
    assert host_clock.per_launch_us([[("start", 0, 0)]]) is None  # a layer that launched nothing measures nothing


@pytest.mark.parametrize("stamps", [[], [("fill", 2, 5)], [("start", 0, 9), ("fill", 1, 5)], [("start", 0, 0), ("warp", 1, 5)],
                                    [("start", 0, 0), ("fill", 0, 5)]])
def test_stamps_that_are_not_a_layers_are_refused(stamps):
    with pytest.raises(ValueError, match="launch stamps"):
        host_clock.layer_us(stamps)
