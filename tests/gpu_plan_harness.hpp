// Runs many batches through plan_on_device in one launch sequence (packed inputs, one copy each
// way, outputs poisoned first) and compares every plan with the CPU reference and plan_shape.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gpu_test_support.hpp"
#include "mlaplan/device_plan.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/reference_planner.hpp"

namespace mlaplan::gpu_test {

class PlanHarness {
 public:
  PlanHarness() { ok_ = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess; }
  ~PlanHarness() { cudaStreamDestroy(stream_); }
  cudaStream_t stream() const { return stream_; }

  // Plans every batch with `kernel` and checks it; returns the number of wrong plans (reported
  // through ADD_FAILURE, at most a few in detail).
  size_t run(const std::vector<Batch>& batches, GpuKernel kernel) {
    if (!ok_) {
      ADD_FAILURE() << "no stream";
      return batches.size();
    }
    struct Slot {
      size_t offsets, cache, rows, cache_out, lengths;
    };
    std::vector<Slot> slots(batches.size());
    size_t n_offsets = 0, n_cache = 0, n_rows = 0, n_cache_out = 0, n_lengths = 0, ws = 0;
    for (size_t i = 0; i < batches.size(); ++i) {
      const Batch& b = batches[i];
      const size_t bs = b.batch_size(), m = b.max_chunks;
      slots[i] = {n_offsets, n_cache, n_rows, n_cache_out, n_lengths};
      n_offsets += bs + 1;
      n_cache += bs;
      n_rows += m * (bs + 1);
      n_cache_out += m * bs;
      n_lengths += m;
      ws = std::max(ws, plan_workspace_bytes(b.batch_size(), b.max_chunks, kernel));
    }
    std::vector<uint32_t> h_offsets(n_offsets), h_cache(n_cache);
    for (size_t i = 0; i < batches.size(); ++i) {
      std::copy(batches[i].input_row_offsets.begin(), batches[i].input_row_offsets.end(), h_offsets.begin() + slots[i].offsets);
      std::copy(batches[i].cache_lengths.begin(), batches[i].cache_lengths.end(), h_cache.begin() + slots[i].cache);
    }
    const size_t old_ws = workspace_.bytes();
    if (!expect(MLAPLAN_CUDA_CALL(offsets_.reserve(n_offsets + 1))) || !expect(MLAPLAN_CUDA_CALL(cache_.reserve(n_cache + 1))) ||
        !expect(MLAPLAN_CUDA_CALL(rows_.reserve(n_rows + 1))) || !expect(MLAPLAN_CUDA_CALL(cache_out_.reserve(n_cache_out + 1))) ||
        !expect(MLAPLAN_CUDA_CALL(lengths_.reserve(n_lengths + 1))) ||
        !expect(MLAPLAN_CUDA_CALL(status_.reserve(batches.size() + 1))) || !expect(MLAPLAN_CUDA_CALL(workspace_.reserve(ws + 16))))
      return batches.size();
    // The workspace is zeroed once, when it is (re)allocated: plan_on_device must reset it itself.
    if (workspace_.bytes() != old_ws && !expect(MLAPLAN_CUDA_CALL(cudaMemsetAsync(workspace_.get(), 0, workspace_.bytes(), stream_))))
      return batches.size();
    if (!expect(MLAPLAN_CUDA_CALL(cudaMemcpyAsync(offsets_.get(), h_offsets.data(), n_offsets * 4, cudaMemcpyHostToDevice, stream_))) ||
        !expect(MLAPLAN_CUDA_CALL(cudaMemcpyAsync(cache_.get(), h_cache.data(), n_cache * 4, cudaMemcpyHostToDevice, stream_))) ||
        !expect(MLAPLAN_CUDA_CALL(cudaMemsetAsync(rows_.get(), kPoison, n_rows * 4, stream_))) ||
        !expect(MLAPLAN_CUDA_CALL(cudaMemsetAsync(cache_out_.get(), kPoison, n_cache_out * 4, stream_))) ||
        !expect(MLAPLAN_CUDA_CALL(cudaMemsetAsync(lengths_.get(), kPoison, n_lengths * 4, stream_))) ||
        !expect(MLAPLAN_CUDA_CALL(cudaMemsetAsync(status_.get(), kPoison, batches.size() * sizeof(DevicePlanStatus), stream_))))
      return batches.size();
    for (size_t i = 0; i < batches.size(); ++i) {
      const Batch& b = batches[i];
      DevicePlanArgs a;
      a.input_row_offsets = offsets_.get() + slots[i].offsets;
      a.cache_lengths = cache_.get() + slots[i].cache;
      a.batch_size = b.batch_size();
      a.page_size = b.page_size;
      a.buffer_token_size = b.buffer_token_size;
      a.max_chunks = b.max_chunks;
      a.buffer_row_offsets = rows_.get() + slots[i].rows;
      a.cache_offsets = cache_out_.get() + slots[i].cache_out;
      a.buffer_lengths = lengths_.get() + slots[i].lengths;
      a.status = status_.get() + i;
      if (!expect(MLAPLAN_CUDA_CALL(plan_on_device(a, workspace_.get(), workspace_.bytes(), stream_, kernel)))) return batches.size();
    }
    std::vector<uint32_t> h_rows(n_rows), h_cache_out(n_cache_out);
    std::vector<int32_t> h_lengths(n_lengths);
    std::vector<DevicePlanStatus> h_status(batches.size());
    if (!expect(MLAPLAN_CUDA_CALL(cudaMemcpyAsync(h_rows.data(), rows_.get(), n_rows * 4, cudaMemcpyDeviceToHost, stream_))) ||
        !expect(MLAPLAN_CUDA_CALL(cudaMemcpyAsync(h_cache_out.data(), cache_out_.get(), n_cache_out * 4, cudaMemcpyDeviceToHost, stream_))) ||
        !expect(MLAPLAN_CUDA_CALL(cudaMemcpyAsync(h_lengths.data(), lengths_.get(), n_lengths * 4, cudaMemcpyDeviceToHost, stream_))) ||
        !expect(MLAPLAN_CUDA_CALL(cudaMemcpyAsync(h_status.data(), status_.get(), h_status.size() * sizeof(DevicePlanStatus),
                                cudaMemcpyDeviceToHost, stream_))) ||
        !expect(MLAPLAN_CUDA_CALL(cudaStreamSynchronize(stream_))))
      return batches.size();

    size_t wrong = 0;
    for (size_t i = 0; i < batches.size(); ++i) {
      const Batch& b = batches[i];
      const size_t bs = b.batch_size(), m = b.max_chunks;
      const PlanShape shape = plan_shape(b);
      const DevicePlanStatus& st = h_status[i];
      std::string problem;
      if (shape.feasible) {
        const PlanTables ref = plan_reference(b);
        if (st.code != kPlanOk) problem = "status " + std::to_string(st.code) + " for a feasible batch";
        else if (st.min_max_chunks != shape.min_max_chunks) problem = "min_max_chunks " + std::to_string(st.min_max_chunks);
        else if (st.padded_tokens != shape.padded_tokens) problem = "padded_tokens " + std::to_string(st.padded_tokens);
        else problem = first_difference(ref, &h_rows[slots[i].rows], &h_cache_out[slots[i].cache_out], &h_lengths[slots[i].lengths]);
      } else {
        if (st.code != kPlanInfeasible) problem = "status " + std::to_string(st.code) + " for an infeasible batch";
        else if (st.min_max_chunks != shape.min_max_chunks)
          problem = "min_max_chunks " + std::to_string(st.min_max_chunks) + ", plan_shape says " + std::to_string(shape.min_max_chunks);
        for (size_t c = 0; c < m && problem.empty(); ++c)
          if (h_lengths[slots[i].lengths + c] != -1) problem = "buffer_lengths[" + std::to_string(c) + "] != -1 for an infeasible batch";
      }
      if (!problem.empty()) {
        if (++wrong <= 5)
          ADD_FAILURE() << to_string(kernel) << " kernel, batch " << i << " (B=" << bs << " P=" << b.page_size
                        << " N=" << b.buffer_token_size << " M=" << m << " E=" << shape.padded_tokens << "): " << problem;
      }
      ++checked_;
      if (!shape.feasible) ++infeasible_;
    }
    return wrong;
  }

  size_t checked() const { return checked_; }
  size_t infeasible() const { return infeasible_; }

 private:
  static std::string first_difference(const PlanTables& ref, const uint32_t* rows, const uint32_t* cache_out,
                                      const int32_t* lengths) {
    const size_t cols = size_t{ref.batch_size} + 1;
    for (size_t i = 0; i < ref.buffer_row_offsets.size(); ++i)
      if (rows[i] != ref.buffer_row_offsets[i])
        return "buffer_row_offsets[" + std::to_string(i / cols) + "][" + std::to_string(i % cols) + "] = " +
               std::to_string(rows[i]) + ", reference " + std::to_string(ref.buffer_row_offsets[i]);
    for (size_t i = 0; i < ref.cache_offsets.size(); ++i)
      if (cache_out[i] != ref.cache_offsets[i])
        return "cache_offsets[" + std::to_string(i / ref.batch_size) + "][" + std::to_string(i % ref.batch_size) +
               "] = " + std::to_string(cache_out[i]) + ", reference " + std::to_string(ref.cache_offsets[i]);
    for (size_t i = 0; i < ref.buffer_lengths.size(); ++i)
      if (lengths[i] != ref.buffer_lengths[i])
        return "buffer_lengths[" + std::to_string(i) + "] = " + std::to_string(lengths[i]) + ", reference " +
               std::to_string(ref.buffer_lengths[i]);
    return {};
  }
  bool expect(const cuda_support::CudaCall& c) {
    const ::testing::AssertionResult ok = cuda_ok(c);
    if (!ok) ADD_FAILURE() << ok.message();
    return ok;
  }

  bool ok_ = false;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer<uint32_t> offsets_, cache_, rows_, cache_out_;
  DeviceBuffer<int32_t> lengths_;
  DeviceBuffer<DevicePlanStatus> status_;
  DeviceBuffer<unsigned char> workspace_;
  size_t checked_ = 0, infeasible_ = 0;
};

}  // namespace mlaplan::gpu_test
