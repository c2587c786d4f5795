// A faithful port of the seed's planning kernel (mla_prefill_plan): 128 threads per block, one
// thread per sequence, each thread re-summing the padded lengths of all earlier sequences (O(B^2)
// work in all), max_chunks a template parameter for the common values with a run-time fallback.
// It is the baseline every speedup is measured against and a second, independent implementation.
#include "kernels.hpp"
#include "plan_math.cuh"

namespace mlaplan::cuda_detail {

namespace {

constexpr int kMaxPortThreads = 128;

// kMaxChunks > 0: the chunk count is a compile-time constant, as in the seed; 0: run-time `m`.
template <int kMaxChunks>
__global__ void __launch_bounds__(kMaxPortThreads) max_port_plan_kernel(DevicePlanArgs a) {
  const uint32_t m = kMaxChunks > 0 ? uint32_t{kMaxChunks} : a.max_chunks;
  const uint64_t seq = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint32_t batch = a.batch_size;
  if (seq >= batch) return;
  const uint64_t n = a.buffer_token_size;

  // The seed's prefix: this sequence's start is the sum of every earlier padded length. Bad
  // offsets are noted along the way so the last thread can report them for the whole batch.
  uint64_t start = 0;
  bool bad_any = false;
  for (uint64_t i = 0; i < seq; ++i) {
    bool bad;
    start += padded_length(a.input_row_offsets, a.cache_lengths, i, a.page_size, bad);
    bad_any |= bad;
  }
  bool bad;
  const uint64_t len = padded_length(a.input_row_offsets, a.cache_lengths, seq, a.page_size, bad);
  bad_any |= bad;

  const uint64_t start_chunk = start / n;
  const uint64_t pitch = uint64_t{batch} + 1;
  uint64_t processed = 0;
  uint64_t left = len;
#pragma unroll
  for (uint32_t c = 0; c < m; ++c) {
    const uint64_t offset = c < start_chunk ? n : c == start_chunk ? start % n : 0;
    a.buffer_row_offsets[c * pitch + seq] = static_cast<uint32_t>(offset);
    a.cache_offsets[uint64_t{c} * batch + seq] = static_cast<uint32_t>(processed);
    const uint64_t room = n - offset;
    const uint64_t take = left < room ? left : room;
    processed += take;
    left -= take;
  }

  // The last sequence's thread has seen the whole batch: it writes the sentinel column, the
  // chunk lengths and the status.
  if (seq == batch - 1) {
    const uint64_t total = start + len;
    const DevicePlanStatus st = batch_status(batch, total, start, bad_any, a.buffer_token_size, m);
    const bool ok = st.code == kPlanOk;
    const uint64_t end_chunk_plus_one = (total + n - 1) / n;  // ceil(E / N)
#pragma unroll
    for (uint32_t c = 0; c < m; ++c) {
      uint64_t offset;
      if (c + 1 < end_chunk_plus_one) {
        offset = n;
      } else if (c + 1 == end_chunk_plus_one) {
        offset = total - c * n;
      } else {
        offset = 0;
      }
      a.buffer_row_offsets[c * pitch + batch] = static_cast<uint32_t>(offset);
      a.buffer_lengths[c] = chunk_length(c, batch, total, a.buffer_token_size, ok);
    }
    *a.status = st;
  }
}

// The seed's empty-batch kernel sets every chunk length to 0; this one also writes the M x 1
// sentinel column (zeros) and the status, so no output is left unwritten.
__global__ void max_port_empty_kernel(DevicePlanArgs a) {
  const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < a.max_chunks) {
    a.buffer_row_offsets[c] = 0;
    a.buffer_lengths[c] = 0;
  }
  if (c == 0) *a.status = batch_status(0, 0, 0, false, a.buffer_token_size, a.max_chunks);
}

template <int kMaxChunks>
void launch(const DevicePlanArgs& args, cudaStream_t stream) {
  const uint32_t blocks = (args.batch_size + kMaxPortThreads - 1) / kMaxPortThreads;
  max_port_plan_kernel<kMaxChunks><<<blocks, kMaxPortThreads, 0, stream>>>(args);
}

}  // namespace

cudaError_t launch_max_port(const DevicePlanArgs& args, cudaStream_t stream) {
  if (args.batch_size == 0) {
    max_port_empty_kernel<<<static_cast<uint32_t>((uint64_t{args.max_chunks} + 127) / 128), 128, 0, stream>>>(args);
    return cudaGetLastError();
  }
  switch (args.max_chunks) {
    case 1: launch<1>(args, stream); break;
    case 2: launch<2>(args, stream); break;
    case 4: launch<4>(args, stream); break;
    case 8: launch<8>(args, stream); break;
    case 16: launch<16>(args, stream); break;
    case 32: launch<32>(args, stream); break;
    case 64: launch<64>(args, stream); break;
    default: launch<0>(args, stream); break;
  }
  return cudaGetLastError();
}

cudaError_t check_kernel_image() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, max_port_plan_kernel<0>);
}

}  // namespace mlaplan::cuda_detail
