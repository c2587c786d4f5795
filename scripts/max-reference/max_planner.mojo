# MAX's own mla_prefill_plan, as MAX ships it, behind mlaplan's external-planner protocol
# (docs/external.md), so that `mlaplan verify --external` fuzzes the shipped kernel against mlaplan's
# reference and `mlaplan bench --max` times it beside mlaplan's kernels. README.md beside this file
# says how to build and run it; docs/conformance.md what it found.
#
# Requests: `plan ...` (docs/external.md), and for bench: `load ...` (same numbers; keeps the batch
# on the device), `time-hot R` (R back-to-back launches rotating over the loaded batches, CUDA
# events around them), `time-cold` (one launch after overwriting the L2), `unload`, and `info`.
from std.sys import argv
from max.gpu.host import DeviceContext, DeviceBuffer
from layout import TileTensor, row_major, Idx
from nn.attention.gpu.mla import mla_prefill_plan
from kv_cache.types import KVCacheStaticParams, PagedKVCacheCollection

from protocol import LineReader, Request, Batch, AnswerWriter, parse_request, batch_from_numbers

# DeepSeek-V2/V3's latent cache: one head of 512 + 64 values in bf16, one layer.
comptime KV = KVCacheStaticParams(num_heads=1, head_size=576, is_mla=True)
comptime CACHE_DTYPE = DType.bfloat16
comptime HEAD_BYTES = 576 * 2

# MAX makes the page size (the cache's type) and MAX_CHUNKS (the tables' static shape) compile-time:
# these are the instantiations built. The pages are those `verify --fuzz` draws from; the chunk
# counts cover engines' settings (MAX's default is 16) and the unrolled loop's length.
comptime PAGES = (1, 2, 16, 64, 128, 256, 1024)
comptime NUM_PAGES = 7
comptime CHUNKS = (1, 2, 3, 4, 5, 6, 8, 16, 32, 64)
comptime NUM_CHUNKS = 10
comptime VERSION = "max-mojo-libs 26.7.0, mojo 1.2.0"

# The paged cache is real, its pages in one 1 GiB pool: past that logical pages share physical ones,
# and past 2^20 lookup-table cells a sequence's last pages go unmapped. The planner reads only the
# cache lengths.
comptime POOL_BYTES = 1 << 30
comptime LUT_CELLS = 1 << 20
comptime POISON = UInt32(0xA5A5A5A5)
comptime FLUSH_BYTES = 256 << 20  # over twice the H200's L2


def instantiated(page_size: Int, max_chunks: Int) -> Bool:
    var page_ok = False
    var chunks_ok = False
    comptime for i in range(NUM_PAGES):
        if page_size == PAGES[i]:
            page_ok = True
    comptime for j in range(NUM_CHUNKS):
        if max_chunks == CHUNKS[j]:
            chunks_ok = True
    return page_ok and chunks_ok


def instantiations() -> String:
    var s = String("page_size in {")
    comptime for i in range(NUM_PAGES):
        s += String(PAGES[i]) + ("," if i + 1 < NUM_PAGES else "}")
    s += " x max_chunks in {"
    comptime for j in range(NUM_CHUNKS):
        s += String(CHUNKS[j]) + ("," if j + 1 < NUM_CHUNKS else "}")
    return s


# A batch on the device: its inputs, a paged KV cache holding its sequences, and its three tables.
struct DeviceBatch(Movable):
    var page_size: Int
    var buffer_tokens: Int
    var max_chunks: Int
    var batch_size: Int
    var pool_pages: Int
    var lut_columns: Int
    var max_seq: Int
    var max_cache: Int
    var blocks: DeviceBuffer[CACHE_DTYPE]
    var cache_lengths: DeviceBuffer[DType.uint32]
    var lookup_table: DeviceBuffer[DType.uint32]
    var input_row_offsets: DeviceBuffer[DType.uint32]
    var rows: DeviceBuffer[DType.uint32]
    var cache_offsets: DeviceBuffer[DType.uint32]
    var lengths: DeviceBuffer[DType.int32]

    # `shift_cache_lengths` is the planted defect of --bug off-by-one: sequence b is given the
    # cache length of b + 1.
    # `pool`: the block pool every batch shares (POOL_BYTES); allocating it per batch cost more
    # than the plan.
    def __init__(
        out self, ctx: DeviceContext, batch: Batch, pool: DeviceBuffer[CACHE_DTYPE], shift_cache_lengths: Bool
    ) raises:
        var count = batch.batch_size()
        var p = batch.page_size
        self.page_size = p
        self.buffer_tokens = batch.buffer_tokens
        self.max_chunks = batch.max_chunks
        self.batch_size = count
        var total_pages = 0
        var widest = 1
        self.max_seq = 0
        self.max_cache = 0
        for b in range(count):
            var pages = (batch.tokens(b) + p - 1) // p
            total_pages += pages
            widest = max(widest, pages)
            self.max_seq = max(self.max_seq, batch.input_row_offsets[b + 1] - batch.input_row_offsets[b])
            self.max_cache = max(self.max_cache, batch.cache_lengths[b])
        self.pool_pages = max(1, min(total_pages, POOL_BYTES // (p * HEAD_BYTES)))
        self.lut_columns = max(1, min(widest, LUT_CELLS // max(1, count)))
        self.blocks = pool
        self.cache_lengths = ctx.enqueue_create_buffer[DType.uint32](max(1, count))
        self.lookup_table = ctx.enqueue_create_buffer[DType.uint32](max(1, count) * self.lut_columns)
        self.input_row_offsets = ctx.enqueue_create_buffer[DType.uint32](count + 1)
        self.rows = ctx.enqueue_create_buffer[DType.uint32](self.max_chunks * (count + 1))
        self.cache_offsets = ctx.enqueue_create_buffer[DType.uint32](max(1, self.max_chunks * count))
        self.lengths = ctx.enqueue_create_buffer[DType.int32](self.max_chunks)
        # Inputs go up with one copy each (a mapping would copy both ways and wait for each).
        var cache_lengths = List[UInt32](length=max(1, count), fill=0)
        for b in range(count):
            var from_b = min(b + 1, count - 1) if shift_cache_lengths else b
            cache_lengths[b] = UInt32(batch.cache_lengths[from_b])
        var offsets = List[UInt32](length=count + 1, fill=0)
        for b in range(count + 1):
            offsets[b] = UInt32(batch.input_row_offsets[b])
        # Each sequence's pages follow the previous sequence's in the pool.
        var lookup = List[UInt32](length=max(1, count) * self.lut_columns, fill=0)
        var next_page = 0
        for b in range(count):
            var pages = (batch.tokens(b) + p - 1) // p
            for j in range(min(pages, self.lut_columns)):
                lookup[b * self.lut_columns + j] = UInt32((next_page + j) % self.pool_pages)
            next_page += pages
        ctx.enqueue_copy(self.cache_lengths, cache_lengths.unsafe_ptr())
        ctx.enqueue_copy(self.input_row_offsets, offsets.unsafe_ptr())
        ctx.enqueue_copy(self.lookup_table, lookup.unsafe_ptr())
        ctx.synchronize()  # the host lists end here

    # Fills the tables with a pattern no plan contains, so a cell the kernel leaves alone shows.
    # `zero_empty_batch`: an empty batch's buffer_row_offsets (M x 1) read as zeros, as mlaplan writes
    # them; MAX writes only buffer_lengths then (docs/conformance.md).
    def poison(self, ctx: DeviceContext, zero_empty_batch: Bool) raises:
        ctx.enqueue_memset(self.rows, UInt32(0) if (self.batch_size == 0 and zero_empty_batch) else POISON)
        ctx.enqueue_memset(self.cache_offsets, POISON)
        ctx.enqueue_memset(self.lengths, Int32(-1431655766))


def launch_instance[P: Int, M: Int](ctx: DeviceContext, mut d: DeviceBatch) raises:
    var count = d.batch_size
    var blocks = TileTensor(d.blocks, row_major((d.pool_pages, Idx[1], Idx[1], Idx[P], Idx[1], Idx[576])))
    var cache_lengths = TileTensor(d.cache_lengths, row_major(count))
    var lookup_table = TileTensor(d.lookup_table, row_major((count, d.lut_columns)))
    var collection = PagedKVCacheCollection[CACHE_DTYPE, KV, P, scales_origin=MutAnyOrigin](
        blocks, cache_lengths, lookup_table, UInt32(d.max_seq), UInt32(d.max_cache)
    )
    mla_prefill_plan(
        TileTensor(d.rows, row_major((Idx[M], count + 1))),
        TileTensor(d.cache_offsets, row_major((Idx[M], count))),
        TileTensor(d.lengths, row_major(Idx[M])),
        TileTensor(d.input_row_offsets, row_major(count + 1)),
        collection.get_key_cache(0),
        UInt32(d.buffer_tokens),
        ctx,
    )


# Calls the instantiation for the batch's page size and max_chunks.
def launch(ctx: DeviceContext, mut d: DeviceBatch) raises:
    comptime for i in range(NUM_PAGES):
        if d.page_size == PAGES[i]:
            comptime for j in range(NUM_CHUNKS):
                if d.max_chunks == CHUNKS[j]:
                    launch_instance[PAGES[i], CHUNKS[j]](ctx, d)
                    return
    raise Error(
        "no MAX instantiation for page_size=", d.page_size, " max_chunks=", d.max_chunks,
        " (built: ", instantiations(), "; restrict verify with --fuzz-page-sizes and --fuzz-max-chunks)",
    )


def write_tables(ctx: DeviceContext, d: DeviceBatch, mut out: AnswerWriter) raises:
    # One copy down per table and one wait for all three.
    var rows = List[UInt32](length=d.max_chunks * (d.batch_size + 1), fill=0)
    var cache_offsets = List[UInt32](length=max(1, d.max_chunks * d.batch_size), fill=0)
    var lengths = List[Int32](length=d.max_chunks, fill=0)
    ctx.enqueue_copy(rows.unsafe_ptr(), d.rows)
    ctx.enqueue_copy(cache_offsets.unsafe_ptr(), d.cache_offsets)
    ctx.enqueue_copy(lengths.unsafe_ptr(), d.lengths)
    ctx.synchronize()
    out.word("tables")
    for i in range(d.max_chunks * (d.batch_size + 1)):
        out.number(Int(rows[i]))
    for i in range(d.max_chunks * d.batch_size):
        out.number(Int(cache_offsets[i]))
    for i in range(d.max_chunks):
        out.number(Int(lengths[i]))
    out.end_line()


struct Options:
    var strict: Bool
    var off_by_one: Bool

    def __init__(out self) raises:
        self.strict = False
        self.off_by_one = False
        var args = argv()
        var i = 1
        while i < len(args):
            var a = String(args[i])
            if a == "--strict":
                self.strict = True
            elif a == "--bug" and i + 1 < len(args) and String(args[i + 1]) == "off-by-one":
                self.off_by_one = True
                i += 1
            elif a == "--help" or a == "-h":
                print("usage: max_planner [--strict] [--bug off-by-one]")
                print("  MAX's mla_prefill_plan behind mlaplan's external-planner protocol (docs/external.md).")
                print("  --strict           no refusal and no empty-batch zeros: MAX exactly as it behaves")
                print("  --bug off-by-one   give sequence b the cache length of b + 1 (a planted defect)")
                print("  built:", instantiations())
                raise Error("help")
            else:
                raise Error("unknown argument '", a, "' (try --help)")
            i += 1


def serve(ctx: DeviceContext, options: Options) raises:
    var reader = LineReader()
    var request = Request()
    var batch = Batch()
    var out = AnswerWriter()
    var loaded = List[DeviceBatch]()
    var flush = ctx.enqueue_create_buffer[DType.uint8](FLUSH_BYTES)
    var pool = ctx.enqueue_create_buffer[CACHE_DTYPE](POOL_BYTES // 2)
    var begin = 0
    var end = 0
    while reader.next_line(begin, end):
        try:
            parse_request(reader.buf, begin, end, request)
            if request.word == "":
                continue
            if request.word == "plan" or request.word == "load":
                batch_from_numbers(request.numbers, batch)
                var need = batch.chunks_needed()
                if request.word == "plan" and not options.strict and need > batch.max_chunks:
                    # MAX has no refusal (it writes wrong offsets); an engine must refuse on the host.
                    out.word("infeasible")
                    out.number(need)
                    out.end_line()
                    continue
                var d = DeviceBatch(ctx, batch, pool, options.off_by_one)
                d.poison(ctx, not options.strict)
                launch(ctx, d)
                ctx.synchronize()
                if request.word == "plan":
                    write_tables(ctx, d, out)
                else:
                    loaded.append(d^)
                    out.word("loaded")
                    out.number(len(loaded))
                    out.end_line()
            elif request.word == "time-hot" or request.word == "time-cold":
                if len(loaded) == 0:
                    raise Error(request.word, " before load")
                var hot = request.word == "time-hot"
                if hot and (len(request.numbers) != 1 or request.numbers[0] < 1):
                    raise Error("time-hot needs one launch count")
                var n = len(loaded)
                var counter = List[Int](length=1, fill=0)

                def body(c: DeviceContext) raises {mut counter, mut loaded, var n}:
                    launch(c, loaded[counter[0] % n])
                    counter[0] += 1

                if not hot:  # overwrite the L2 so the launch reads its inputs from memory
                    ctx.enqueue_memset(flush, UInt8(1))
                var ns = ctx.execution_time(body, request.numbers[0] if hot else 1)
                out.word("elapsed")
                out.number(ns)
                out.end_line()
            elif request.word == "unload":
                loaded.clear()
                ctx.synchronize()
                out.word("unloaded")
                out.end_line()
            elif request.word == "info":
                out.word("info " + VERSION + "; " + instantiations())
                out.end_line()
            else:
                raise Error("unknown request '", request.word, "'")
        except e:
            out.out.clear()
            out.word("error " + String(e))
            out.end_line()


def main() raises:
    var options: Options
    try:
        options = Options()
    except e:
        if String(e) == "help":
            return
        print("max_planner:", e)
        raise e
    var ctx = DeviceContext()
    serve(ctx, options)
