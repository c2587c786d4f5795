# Tests of the harness's host side (protocol.mojo), which needs no GPU: `build.sh` runs them with
# `mojo run` before building the harness.
from std.ffi import external_call
from std.testing import assert_equal, assert_true, assert_false, assert_raises

from protocol import AnswerWriter, LineReader, Request, Batch, parse_request, batch_from_numbers


def bytes_of(text: String) -> List[UInt8]:
    var out = List[UInt8]()
    for c in text.as_bytes():
        out.append(c)
    return out^


def batch_of(text: String) raises -> Batch:
    var buf = bytes_of(text)
    var request = Request()
    parse_request(buf, 0, len(buf), request)
    var batch = Batch()
    batch_from_numbers(request.numbers, batch)
    return batch^


def test_parse_request() raises:
    var buf = bytes_of("  plan 128 4096\t16 0 7 \r")
    var request = Request()
    parse_request(buf, 0, len(buf), request)
    assert_equal(request.word, "plan")
    assert_equal(len(request.numbers), 5)
    assert_equal(request.numbers[0], 128)
    assert_equal(request.numbers[2], 16)
    assert_equal(request.numbers[4], 7)
    var bad = bytes_of("plan 12x 3")
    with assert_raises(contains="'12x' is not a number"):
        parse_request(bad, 0, len(bad), request)
    var negative = bytes_of("plan -1")
    with assert_raises(contains="is not a number"):
        parse_request(negative, 0, len(negative), request)


def test_batch_from_numbers() raises:
    var b = batch_of("plan 16 64 4 2 3 4 0 1 2")
    assert_equal(b.batch_size(), 2)
    assert_equal(b.tokens(0), 4)
    assert_equal(b.padded(0), 16)
    assert_equal(b.padded(1), 16)
    with assert_raises(contains="expected 6 for B=2"):
        _ = batch_of("plan 16 64 4 2 3 4 0 1")
    with assert_raises(contains="decrease"):
        _ = batch_of("plan 16 64 4 2 3 4 0 5 2")
    with assert_raises(contains="at least 1"):
        _ = batch_of("plan 16 0 4 0 0")


# Hand-computed against semantics.md: chunks = ceil(E / N), plus one when the last sequence would
# start at or past that many chunks' end (trailing empty sequences); at least 1.
def test_chunks_needed() raises:
    assert_equal(batch_of("plan 16 64 4 0 0").chunks_needed(), 1)  # empty batch
    assert_equal(batch_of("plan 16 64 4 2 3 4 0 1 2").chunks_needed(), 1)  # E = 32
    assert_equal(batch_of("plan 16 16 1 2 3 4 0 1 2").chunks_needed(), 2)  # E = 32, N = 16
    assert_equal(batch_of("plan 1 10 1 1 25 0 0").chunks_needed(), 3)  # 25 rows in 10-row chunks
    # E = 32 = 2 N exactly, then an empty sequence that starts at row 32: a third chunk.
    assert_equal(batch_of("plan 16 16 1 3 3 4 0 0 1 2 2").chunks_needed(), 3)
    assert_equal(batch_of("plan 128 4096 16 1 0 0 0").chunks_needed(), 1)  # one empty sequence


def test_line_reader() raises:
    var long_line = String()
    for _ in range(20000):
        long_line += "1234 "
    var text = "plan 1\n\n" + long_line + "\nlast"
    # Through a pipe made large enough to hold it all, so no second thread has to write.
    var fds = List[Int32](length=2, fill=-1)
    assert_equal(external_call["pipe", Int32](fds.unsafe_ptr()), 0)
    _ = external_call["fcntl", Int32](fds[1], Int32(1031), Int32(1 << 20))  # F_SETPIPE_SZ
    var data = bytes_of(text)
    assert_equal(external_call["write", Int](fds[1], data.unsafe_ptr(), len(data)), len(data))
    _ = external_call["close", Int32](fds[1])
    var fd = fds[0]
    var reader = LineReader(fd)
    var begin = 0
    var end = 0
    assert_true(reader.next_line(begin, end))
    assert_equal(end - begin, 6)
    assert_true(reader.next_line(begin, end))
    assert_equal(end - begin, 0)
    assert_true(reader.next_line(begin, end))
    assert_equal(end - begin, 100000)  # longer than one read
    assert_true(reader.next_line(begin, end))
    assert_equal(end - begin, 4)  # no newline at the end
    assert_false(reader.next_line(begin, end))


# Answers come out as the protocol spells them: words and signed decimals, one line each, whole
# even past the 64 KiB at which the writer flushes.
def test_answer_writer() raises:
    var fds = List[Int32](length=2, fill=-1)
    assert_equal(external_call["pipe", Int32](fds.unsafe_ptr()), 0)
    _ = external_call["fcntl", Int32](fds[1], Int32(1031), Int32(1 << 20))  # F_SETPIPE_SZ
    var out = AnswerWriter(fds[1])
    out.word("tables")
    out.number(0)
    out.number(7)
    out.number(4294967295)
    out.number(-17)
    out.number(1024)
    out.end_line()
    out.word("elapsed")
    for _ in range(20000):
        out.number(12345)
    out.end_line()
    _ = external_call["close", Int32](fds[1])
    var reader = LineReader(fds[0])
    var begin = 0
    var end = 0
    assert_true(reader.next_line(begin, end))
    assert_equal(String(unsafe_from_utf8=Span(reader.buf)[begin:end]), "tables 0 7 4294967295 -17 1024")
    assert_true(reader.next_line(begin, end))
    assert_equal(end - begin, 7 + 6 * 20000)
    assert_equal(String(unsafe_from_utf8=Span(reader.buf)[end - 11:end]), "12345 12345")
    assert_false(reader.next_line(begin, end))


def main() raises:
    test_parse_request()
    test_batch_from_numbers()
    test_chunks_needed()
    test_line_reader()
    test_answer_writer()
    print("protocol tests: 5 passed")
