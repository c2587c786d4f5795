"""The module on CUDA arrays (torch and CuPy): plans equal the CPU's, on the caller's stream, into
given outputs with a Workspace, captured in a CUDA graph and replayed with changed inputs; a bad
batch comes back in the device status. Skipped without a GPU or without the framework."""
import numpy as np
import pytest

import mlaplan

pytestmark = pytest.mark.skipif(not mlaplan.cuda_available(), reason="mlaplan built without CUDA")


def torch_or_skip():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch")
    return torch


def random_batch(rng, b):
    """At most 5,400 tokens a sequence: size the buffer so the plans fit."""
    cache = rng.integers(0, 5000, b)
    offsets = np.concatenate([[0], rng.integers(0, 400, b)]).cumsum()
    return cache.astype(np.int32), offsets.astype(np.int32)


def expected(cache, offsets, page, n, m):
    return mlaplan.plan(cache.astype(np.int64), offsets.astype(np.int64), page, n, m)


def as_u32(t):
    return t.cpu().numpy().view(np.uint32) if t.dtype.__str__().endswith("int32") else t.cpu().numpy()


def test_torch_plans_equal_the_cpu():
    torch = torch_or_skip()
    rng = np.random.default_rng(3)
    for b in (0, 1, 7, 128, 3000):
        cache, offsets = random_batch(rng, b)
        page, n, m = 64, 1 << 20, 64  # up to 3000 x 5400 tokens: at most 16 chunks
        want = expected(cache, offsets, page, n, m)
        p = mlaplan.plan(torch.from_numpy(cache).cuda(), torch.from_numpy(offsets).cuda(), page, n, m)
        torch.cuda.synchronize()
        assert mlaplan.decode_status(p.status)["code"] == mlaplan.STATUS_OK
        np.testing.assert_array_equal(as_u32(p.buffer_row_offsets), want.buffer_row_offsets)
        np.testing.assert_array_equal(as_u32(p.cache_offsets), want.cache_offsets)
        np.testing.assert_array_equal(p.buffer_lengths.cpu().numpy(), want.buffer_lengths)


def test_every_kernel_name_plans_alike():
    """max-port (and seed, its old name) and fast give the CPU's tables; another name is refused."""
    torch = torch_or_skip()
    cache, offsets = random_batch(np.random.default_rng(5), 300)
    want = expected(cache, offsets, 128, 65536, 64)
    for kernel in ("fast", "max-port", "seed"):
        p = mlaplan.plan(torch.from_numpy(cache).cuda(), torch.from_numpy(offsets).cuda(), 128, 65536, 64, kernel=kernel)
        torch.cuda.synchronize()
        np.testing.assert_array_equal(as_u32(p.buffer_row_offsets), want.buffer_row_offsets)
        np.testing.assert_array_equal(p.buffer_lengths.cpu().numpy(), want.buffer_lengths)
    with pytest.raises(ValueError, match="fast or max-port"):
        mlaplan.plan(torch.from_numpy(cache).cuda(), torch.from_numpy(offsets).cuda(), 128, 65536, 64, kernel="slow")


def test_cupy_plans_equal_the_cpu():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(4)
    cache, offsets = random_batch(rng, 500)
    want = expected(cache, offsets, 128, 65536, 64)
    p = mlaplan.plan(cupy.asarray(cache.view(np.uint32)), cupy.asarray(offsets.view(np.uint32)), 128, 65536, 64)
    cupy.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(p.buffer_row_offsets), want.buffer_row_offsets)
    np.testing.assert_array_equal(cupy.asnumpy(p.cache_offsets), want.cache_offsets)
    np.testing.assert_array_equal(cupy.asnumpy(p.buffer_lengths), want.buffer_lengths)


def test_infeasible_batch_is_reported_in_the_device_status():
    torch = torch_or_skip()
    cache = torch.tensor([500, 0, 300], dtype=torch.int32, device="cuda")
    offsets = torch.tensor([0, 9, 209, 229], dtype=torch.int32, device="cuda")
    p = mlaplan.plan(cache, offsets, 128, 512, 2)
    status = mlaplan.decode_status(p.status)
    assert status["code"] == mlaplan.STATUS_INFEASIBLE and status["min_max_chunks"] == 3
    assert p.buffer_lengths.tolist() == [-1, -1]


def test_on_a_side_stream_into_given_outputs():
    torch = torch_or_skip()
    b, m = 256, 16
    ws = mlaplan.Workspace(b, m)
    cache, offsets = random_batch(np.random.default_rng(5), b)
    out = (torch.empty((m, b + 1), dtype=torch.int32, device="cuda"), torch.empty((m, b), dtype=torch.int32, device="cuda"),
           torch.empty(m, dtype=torch.int32, device="cuda"), torch.empty(4, dtype=torch.int32, device="cuda"))
    side = torch.cuda.Stream()
    c, o = torch.from_numpy(cache).cuda(), torch.from_numpy(offsets).cuda()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        p = mlaplan.plan(c, o, 16, 65536, m, out=out, workspace=ws)
    side.synchronize()
    assert p.buffer_row_offsets is out[0]
    np.testing.assert_array_equal(p.buffer_lengths.cpu().numpy(), expected(cache, offsets, 16, 65536, m).buffer_lengths)


def test_graph_capture_replays_with_changed_inputs():
    torch = torch_or_skip()
    b, m, page, n = 128, 16, 16, 65536
    ws = mlaplan.Workspace(b, m)
    c = torch.zeros(b, dtype=torch.int32, device="cuda")
    o = torch.zeros(b + 1, dtype=torch.int32, device="cuda")
    out = (torch.empty((m, b + 1), dtype=torch.int32, device="cuda"), torch.empty((m, b), dtype=torch.int32, device="cuda"),
           torch.empty(m, dtype=torch.int32, device="cuda"), torch.empty(4, dtype=torch.int32, device="cuda"))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up outside the graph, as torch recommends
        mlaplan.plan(c, o, page, n, m, out=out, workspace=ws)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mlaplan.plan(c, o, page, n, m, out=out, workspace=ws)
    rng = np.random.default_rng(6)
    for _ in range(5):
        cache, offsets = random_batch(rng, b)
        c.copy_(torch.from_numpy(cache))
        o.copy_(torch.from_numpy(offsets))
        graph.replay()
        torch.cuda.synchronize()
        want = expected(cache, offsets, page, n, m)
        assert mlaplan.decode_status(out[3])["code"] == mlaplan.STATUS_OK
        np.testing.assert_array_equal(as_u32(out[0]), want.buffer_row_offsets)
        np.testing.assert_array_equal(as_u32(out[1]), want.cache_offsets)
        np.testing.assert_array_equal(out[2].cpu().numpy(), want.buffer_lengths)


def test_mismatched_outputs_name_the_argument():
    torch = torch_or_skip()
    ws = mlaplan.Workspace(8, 4)
    c = torch.zeros(3, dtype=torch.int32, device="cuda")
    o = torch.zeros(4, dtype=torch.int32, device="cuda")
    good = [torch.empty((4, 4), dtype=torch.int32, device="cuda"), torch.empty((4, 3), dtype=torch.int32, device="cuda"),
            torch.empty(4, dtype=torch.int32, device="cuda"), torch.empty(4, dtype=torch.int32, device="cuda")]
    bad_shape = list(good)
    bad_shape[0] = torch.empty((3, 4), dtype=torch.int32, device="cuda")
    with pytest.raises(ValueError, match="buffer_row_offsets: dimension 0 is 3, expected 4"):
        mlaplan.plan(c, o, 16, 64, 4, out=bad_shape, workspace=ws)
    bad_type = list(good)
    bad_type[2] = torch.empty(4, dtype=torch.float32, device="cuda")
    with pytest.raises(ValueError, match="buffer_lengths: expected int32 or uint32"):
        mlaplan.plan(c, o, 16, 64, 4, out=bad_type, workspace=ws)
    with pytest.raises(ValueError, match="workspace: sized for 8 sequences x 4 chunks"):
        mlaplan.plan(torch.zeros(9, dtype=torch.int32, device="cuda"), torch.zeros(10, dtype=torch.int32, device="cuda"),
                     16, 64, 4, workspace=ws)
    with pytest.raises(ValueError, match="input_row_offsets: expected a CUDA array"):
        mlaplan.plan(c, np.zeros(4, dtype=np.int32), 16, 64, 4)


def test_bound_plan_follows_the_arrays_contents():
    torch = torch_or_skip()
    b, m, page, n = 64, 8, 16, 65536
    c = torch.zeros(b, dtype=torch.int32, device="cuda")
    o = torch.zeros(b + 1, dtype=torch.int32, device="cuda")
    bound = mlaplan.bind(c, o, page, n, m)
    assert bound.batch_size == b
    rng = np.random.default_rng(8)
    stream = torch.cuda.current_stream().cuda_stream
    for _ in range(3):
        cache, offsets = random_batch(rng, b)
        c.copy_(torch.from_numpy(cache))
        o.copy_(torch.from_numpy(offsets))
        bound(stream)
        torch.cuda.synchronize()
        want = expected(cache, offsets, page, n, m)
        np.testing.assert_array_equal(as_u32(bound.tables.buffer_row_offsets), want.buffer_row_offsets)
        np.testing.assert_array_equal(bound.tables.buffer_lengths.cpu().numpy(), want.buffer_lengths)
    with pytest.raises(ValueError, match="bind takes CUDA arrays"):
        mlaplan.bind(np.zeros(3, np.int32), np.zeros(4, np.int32), page, n, m)
