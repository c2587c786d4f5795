"""The Python module on the CPU: the worked example of semantics.md, agreement with the reference on
random batches, and errors naming the argument."""
import numpy as np
import pytest

import mlaplan

WORKED = dict(page_size=128, buffer_token_size=512, max_chunks=4)


def worked_plan(**kwargs):
    return mlaplan.plan(np.array([500, 0, 100]), np.array([0, 9, 209, 229]), **WORKED, **kwargs)


def test_worked_example():
    p = worked_plan()
    assert p.buffer_row_offsets.dtype == np.uint32 and p.buffer_row_offsets.shape == (4, 4)
    assert p.buffer_row_offsets.tolist() == [[0, 512, 512, 512], [0, 0, 256, 384], [0, 0, 0, 0], [0, 0, 0, 0]]
    assert p.cache_offsets.tolist() == [[0, 0, 0], [512, 0, 0], [512, 256, 128], [512, 256, 128]]
    assert p.buffer_lengths.dtype == np.int32
    assert p.buffer_lengths.tolist() == [512, 384, -1, -1]
    assert p.status is None


def test_lists_and_any_integer_dtype_are_accepted():
    a = mlaplan.plan([500, 0, 100], [0, 9, 209, 229], **WORKED)
    b = mlaplan.plan(np.array([500, 0, 100], dtype=np.int64), np.array([0, 9, 209, 229], dtype=np.uint16), **WORKED)
    for x, y in zip(a[:3], b[:3]):
        np.testing.assert_array_equal(x, y)


def test_fast_planner_equals_the_reference_on_random_batches():
    rng = np.random.default_rng(7)
    for _ in range(300):
        b = int(rng.integers(0, 40))
        cache = rng.integers(0, 3000, b)
        offsets = np.concatenate([[int(rng.integers(0, 50))], rng.integers(0, 300, b)]).cumsum()
        page, n = int(rng.choice([1, 16, 64, 128])), int(rng.integers(1, 4096))
        total = sum(-(-(int(c) + int(o1 - o0)) // page) * page for c, o0, o1 in zip(cache, offsets, offsets[1:]))
        m = max(1, -(-total // n) + 1)
        fast = mlaplan.plan(cache, offsets, page, n, m)
        ref = mlaplan.plan(cache, offsets, page, n, m, reference=True)
        for x, y in zip(fast[:3], ref[:3]):
            np.testing.assert_array_equal(x, y)


def test_infeasible_batch_names_the_smallest_max_chunks():
    with pytest.raises(mlaplan.InfeasibleBatch) as e:
        mlaplan.plan([500, 0, 300], [0, 9, 209, 229], page_size=128, buffer_token_size=512, max_chunks=2)
    assert e.value.min_max_chunks == 3
    assert isinstance(e.value, ValueError)
    assert "max_chunks" in str(e.value)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(cache_lengths=[1, 2], input_row_offsets=[0, 1]), "input_row_offsets: expected batch_size + 1 = 3 values"),
        (dict(cache_lengths=[1], input_row_offsets=[3, 1]), "input_row_offsets[1]: 1 is below"),
        (dict(cache_lengths=[-1], input_row_offsets=[0, 1]), "cache_lengths: values must lie in 0 .. 2^32 - 1"),
        (dict(cache_lengths=[[1]], input_row_offsets=[0, 1]), "cache_lengths: expected a 1-D array"),
    ],
)
def test_bad_input_names_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=None) as e:
        mlaplan.plan(**kwargs, **WORKED)
    assert message in str(e.value)


def test_float_input_is_a_type_error():
    with pytest.raises(TypeError, match="cache_lengths: expected integers"):
        mlaplan.plan(np.array([1.5]), [0, 1], **WORKED)


def test_zero_page_size_is_refused():
    with pytest.raises(ValueError, match="page_size"):
        mlaplan.plan([1], [0, 1], page_size=0, buffer_token_size=512, max_chunks=4)


def test_out_and_workspace_are_for_cuda_arrays():
    with pytest.raises(ValueError, match="out, workspace: for CUDA arrays only"):
        worked_plan(out=(None, None, None, None))


def test_plan_shape_gives_what_the_planner_refuses_by():
    """_mlaplan.plan_shape: the padded total, the chunks a plan uses and the smallest max_chunks that fits,
    the last equal to InfeasibleBatch's, also where a sequence would start at the end (one more)."""
    from mlaplan import _mlaplan
    rng = np.random.default_rng(3)
    for _ in range(200):
        b = int(rng.integers(1, 6))
        cache = (rng.integers(0, 900, b) * (rng.random(b) < 0.8)).astype(np.uint32)
        new = rng.integers(0, 40, b)
        offsets = np.concatenate(([0], np.cumsum(new))).astype(np.uint32)
        page, n = int(rng.choice([1, 16, 64])), int(rng.integers(16, 600))
        s = _mlaplan.plan_shape(cache, offsets, page, n)
        assert s["padded_tokens"] == int((-(-(cache.astype(np.int64) + new) // page) * page).sum())
        least = s["min_max_chunks"]
        p = mlaplan.plan(cache, offsets, page, n, max_chunks=least)  # fits
        assert int((p.buffer_lengths > 0).sum()) == s["chunks_used"]
        if least > 1:  # and one fewer is refused, naming the same count
            with pytest.raises(mlaplan.InfeasibleBatch) as e:
                mlaplan.plan(cache, offsets, page, n, max_chunks=least - 1)
            assert e.value.min_max_chunks == least
    # Two sequences where the second (empty) would start exactly at the end of the first's full chunk.
    s = _mlaplan.plan_shape(np.array([64, 0], np.uint32), np.zeros(3, np.uint32), 64, 64)
    assert (s["chunks_used"], s["min_max_chunks"]) == (1, 2)
