# The host side of the MAX harness, with no GPU in it, so that it can be tested on any machine:
# reading request lines, parsing their numbers, the refusal rule, and writing answer lines. The
# protocol is mlaplan's external-planner protocol (docs/external.md).
from std.ffi import external_call


# Reads standard input a line at a time through read(2). Mojo's input() reads ahead and drops
# what follows the first newline, which would lose pipelined requests.
struct LineReader(Movable):
    var fd: Int32
    var buf: List[UInt8]
    var start: Int
    var scan: Int
    var eof: Bool
    var chunk: List[UInt8]

    def __init__(out self, fd: Int32 = 0):
        self.fd = fd
        self.buf = List[UInt8]()
        self.start = 0
        self.scan = 0
        self.eof = False
        self.chunk = List[UInt8](length=1 << 16, fill=0)

    # The next line as [begin, end) of self.buf (valid until the next call); False at the end.
    def next_line(mut self, mut begin: Int, mut end: Int) -> Bool:
        while True:
            var i = self.scan
            while i < len(self.buf):
                if self.buf[i] == 10:
                    begin = self.start
                    end = i
                    self.start = i + 1
                    self.scan = i + 1
                    return True
                i += 1
            self.scan = len(self.buf)
            if self.eof:
                if self.start < len(self.buf):
                    begin = self.start
                    end = len(self.buf)
                    self.start = end
                    self.scan = end
                    return True
                return False
            if self.start > 0:  # drop consumed lines once per read, so long lines stay linear
                var rest = List[UInt8](capacity=len(self.buf) - self.start + (1 << 16))
                for j in range(self.start, len(self.buf)):
                    rest.append(self.buf[j])
                self.buf = rest^
                self.scan -= self.start
                self.start = 0
            var n = external_call["read", Int](self.fd, self.chunk.unsafe_ptr(), 1 << 16)
            if n <= 0:
                self.eof = True
            else:
                for k in range(n):
                    self.buf.append(self.chunk[k])


# The words of one request line: the first word, then unsigned decimal integers.
struct Request(Movable):
    var word: String
    var numbers: List[Int]

    def __init__(out self):
        self.word = String()
        self.numbers = List[Int]()


def is_space(c: UInt8) -> Bool:
    return c == 32 or c == 9 or c == 13


# Parses buf[begin:end] into `request`; raises naming the first bad word.
def parse_request(buf: List[UInt8], begin: Int, end: Int, mut request: Request) raises:
    request.numbers.clear()
    var i = begin
    while i < end and is_space(buf[i]):
        i += 1
    var word_start = i
    while i < end and not is_space(buf[i]):
        i += 1
    request.word = String(unsafe_from_utf8=Span(buf)[word_start:i])
    while i < end:
        while i < end and is_space(buf[i]):
            i += 1
        if i >= end:
            break
        var value = 0
        var digits = 0
        var token_start = i
        while i < end and not is_space(buf[i]):
            var c = buf[i]
            if c < 48 or c > 57 or digits >= 12:
                var stop = token_start
                while stop < end and not is_space(buf[stop]) and stop - token_start < 40:
                    stop += 1
                raise Error(
                    "'", String(unsafe_from_utf8=Span(buf)[token_start:stop]), "' is not a number"
                )
            value = value * 10 + Int(c) - 48
            digits += 1
            i += 1
        request.numbers.append(value)


# A batch as semantics.md names its inputs.
struct Batch(Movable):
    var page_size: Int
    var buffer_tokens: Int
    var max_chunks: Int
    var cache_lengths: List[Int]
    var input_row_offsets: List[Int]

    def __init__(out self):
        self.page_size = 0
        self.buffer_tokens = 0
        self.max_chunks = 0
        self.cache_lengths = List[Int]()
        self.input_row_offsets = List[Int]()

    def batch_size(self) -> Int:
        return len(self.cache_lengths)

    # Cached plus new tokens of sequence b.
    def tokens(self, b: Int) -> Int:
        return self.cache_lengths[b] + self.input_row_offsets[b + 1] - self.input_row_offsets[b]

    # Tokens rounded up to whole pages: the rows sequence b takes in the buffer.
    def padded(self, b: Int) -> Int:
        var p = self.page_size
        return (self.tokens(b) + p - 1) // p * p

    # The smallest max_chunks that plans this batch (semantics.md: the tail must fit, and no
    # sequence may start at or past the last chunk's end).
    def chunks_needed(self) -> Int:
        var total = 0
        for b in range(self.batch_size()):
            total += self.padded(b)
        var n = self.buffer_tokens
        var used = (total + n - 1) // n
        var need = used
        var count = self.batch_size()
        if count > 0 and total - self.padded(count - 1) >= used * n:
            need += 1
        return max(1, need)


# Fills `batch` from the numbers after a `plan` or `load` word: P N M B c_0.. o_0..o_B.
def batch_from_numbers(numbers: List[Int], mut batch: Batch) raises:
    if len(numbers) < 4:
        raise Error(len(numbers), " numbers, expected at least 4 (P N M B)")
    var count = numbers[3]
    if len(numbers) != 4 + 2 * count + 1:
        raise Error(len(numbers) - 4, " numbers after P N M, expected ", 2 * count + 2, " for B=", count)
    batch.page_size = numbers[0]
    batch.buffer_tokens = numbers[1]
    batch.max_chunks = numbers[2]
    if batch.page_size < 1 or batch.buffer_tokens < 1 or batch.max_chunks < 1:
        raise Error("P, N and M must be at least 1")
    batch.cache_lengths.clear()
    batch.input_row_offsets.clear()
    for b in range(count):
        batch.cache_lengths.append(numbers[4 + b])
    for b in range(count + 1):
        batch.input_row_offsets.append(numbers[4 + count + b])
    for b in range(count):
        if batch.input_row_offsets[b + 1] < batch.input_row_offsets[b]:
            raise Error("input_row_offsets decrease at ", b + 1)


# Collects an answer line and writes it to `fd` with one write(2) per 64 KiB.
struct AnswerWriter(Movable):
    var fd: Int32
    var out: List[UInt8]

    def __init__(out self, fd: Int32 = 1):
        self.fd = fd
        self.out = List[UInt8](capacity=1 << 16)

    def word(mut self, text: String):
        for c in text.as_bytes():
            self.out.append(c)

    # A space, then the decimal digits: written least significant first, then turned around in place.
    def number(mut self, value: Int):
        self.out.append(32)
        var v = value
        if v < 0:
            self.out.append(45)
            v = -v
        var first = len(self.out)
        while True:
            self.out.append(UInt8(48 + v % 10))
            v //= 10
            if v == 0:
                break
        var i = first
        var j = len(self.out) - 1
        while i < j:
            var t = self.out[i]
            self.out[i] = self.out[j]
            self.out[j] = t
            i += 1
            j -= 1
        if len(self.out) >= 1 << 16:
            self.flush_bytes()

    def end_line(mut self):
        self.out.append(10)
        self.flush_bytes()

    def flush_bytes(mut self):
        var at = 0
        while at < len(self.out):
            var n = external_call["write", Int](self.fd, self.out.unsafe_ptr().unsafe_offset(at), len(self.out) - at)
            if n <= 0:
                break
            at += n
        self.out.clear()
