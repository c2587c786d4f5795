// lib/cuda_support: the checked call's record and messages (no GPU needed), and with a GPU the
// device buffer and graph capture.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "mlaplan/cuda_support/graph.hpp"

namespace mlaplan::gpu_test {
namespace {

using cuda_support::CudaError;
using cuda_support::Wording;

TEST(CudaSupport, CallRecordsTextFileAndLine) {
  const int line = __LINE__ + 1;
  const cuda_support::CudaCall c = MLAPLAN_CUDA_CALL(cudaErrorInvalidValue);
  EXPECT_FALSE(c.ok());
  EXPECT_STREQ(c.call, "cudaErrorInvalidValue");
  EXPECT_NE(std::strstr(c.file, "cuda_support_test.cpp"), nullptr);
  EXPECT_EQ(c.line, line);
  EXPECT_EQ(cuda_support::describe(c), std::string(c.file) + ":" + std::to_string(line) +
                                           ": cudaErrorInvalidValue: cudaErrorInvalidValue: " +
                                           cudaGetErrorString(cudaErrorInvalidValue));
  EXPECT_TRUE(MLAPLAN_CUDA_CALL(cudaSuccess).ok());
}

// The three wordings in use: the GPU planner's, bench's and the Python module's.
TEST(CudaSupport, MessagesAreWordedByTheLayer) {
  const std::string invalid = cudaGetErrorString(cudaErrorInvalidValue);
  const Wording planner{"CUDA error in ", true, "out of GPU memory: "};
  EXPECT_EQ(cuda_support::message(planner, cudaErrorInvalidValue, "copying x"),
            "CUDA error in copying x: cudaErrorInvalidValue: " + invalid);
  EXPECT_EQ(cuda_support::message(planner, cudaErrorMemoryAllocation, "allocating 8 bytes for x"),
            "out of GPU memory: allocating 8 bytes for x");
  const Wording bench{"bench: ", false, nullptr};
  EXPECT_EQ(cuda_support::message(bench, cudaErrorMemoryAllocation, "device copy"),
            std::string("bench: device copy: ") + cudaGetErrorString(cudaErrorMemoryAllocation));
  const Wording python{"CUDA error ", false, nullptr};
  EXPECT_EQ(cuda_support::message(python, cudaErrorInvalidValue, "launching the planner"),
            "CUDA error launching the planner: " + invalid);
}

TEST(CudaSupport, CheckThrowsADeviceErrorThatKeepsTheCall) {
  const Wording bench{"bench: ", false, nullptr};
  int evaluated = 0;
  auto what = [&] {
    ++evaluated;
    return std::string("doing it");
  };
  MLAPLAN_CUDA_CHECK(cudaSuccess, bench, what());
  EXPECT_EQ(evaluated, 0);  // the message is only built for a failure
  try {
    MLAPLAN_CUDA_CHECK(cudaErrorInvalidValue, bench, what());
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    EXPECT_EQ(std::string(e.what()), std::string("bench: doing it: ") + cudaGetErrorString(cudaErrorInvalidValue));
    EXPECT_EQ(e.call().status, cudaErrorInvalidValue);
    EXPECT_STREQ(e.call().call, "cudaErrorInvalidValue");
    const DeviceError& as_device_error = e;  // exit 3, like every CUDA failure
    (void)as_device_error;
  }
  EXPECT_EQ(evaluated, 1);
}

TEST(CudaSupport, DeviceBufferAllocatesGrowsAndMoves) {
  MLAPLAN_REQUIRE_GPU();
  DeviceBuffer<uint32_t> a;
  EXPECT_EQ(a.get(), nullptr);
  CUDA_OK(a.reserve(10));
  EXPECT_EQ(a.size(), 10u);
  EXPECT_EQ(a.bytes(), 40u);
  uint32_t* p = a.get();
  CUDA_OK(a.reserve(5));  // never shrinks
  EXPECT_EQ(a.get(), p);
  DeviceBuffer<uint32_t> b = std::move(a);
  EXPECT_EQ(b.get(), p);
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  const std::vector<uint32_t> in{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<uint32_t> out(10);
  CUDA_OK(cudaMemcpy(b.get(), in.data(), b.bytes(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(out.data(), b.get(), b.bytes(), cudaMemcpyDeviceToHost));
  EXPECT_EQ(out, in);
  CUDA_OK(b.reset());
  EXPECT_EQ(b.get(), nullptr);
}

TEST(CudaSupport, CaptureReplaysAndReportsTheFailedStep) {
  MLAPLAN_REQUIRE_GPU();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceBuffer<unsigned char> buffer;
  CUDA_OK(buffer.allocate(64));
  unsigned char value = 0;
  cuda_support::Capture c = cuda_support::capture_graph(
      stream, [&] { return cudaMemsetAsync(buffer.get(), 0x5a, buffer.bytes(), stream); });
  ASSERT_TRUE(cuda_ok(c.call));
  CUDA_OK(c.exec.launch(stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemcpy(&value, buffer.get() + 63, 1, cudaMemcpyDeviceToHost));
  EXPECT_EQ(value, 0x5a);
  // A failed enqueue is reported as such, and the capture is ended: the stream works afterwards.
  const cuda_support::Capture failed = cuda_support::capture_graph(stream, [] { return cudaErrorInvalidValue; });
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.step, cuda_support::CaptureStep::enqueue);
  EXPECT_EQ(failed.call.status, cudaErrorInvalidValue);
  cudaGetLastError();
  CUDA_OK(cudaMemsetAsync(buffer.get(), 1, buffer.bytes(), stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace mlaplan::gpu_test
