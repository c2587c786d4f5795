// Capturing work into a CUDA graph: capture_graph records what a callable enqueues on a stream and
// instantiates it as a GraphExec, destroyed with the object. Every step's status comes back with
// the step, so each caller words the failure its own way.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "mlaplan/cuda_support/cuda_call.hpp"

namespace mlaplan::cuda_support {

// An instantiated graph; move-only.
class GraphExec {
 public:
  GraphExec() = default;
  explicit GraphExec(cudaGraphExec_t exec) : exec_(exec) {}
  GraphExec(GraphExec&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&& o) noexcept {
    if (this != &o) {
      reset();
      exec_ = std::exchange(o.exec_, nullptr);
    }
    return *this;
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() { reset(); }

  void reset() {
    if (exec_ != nullptr) cudaGraphExecDestroy(std::exchange(exec_, nullptr));
  }
  cudaGraphExec_t get() const { return exec_; }
  cudaError_t launch(cudaStream_t stream) const { return cudaGraphLaunch(exec_, stream); }
  cudaError_t upload(cudaStream_t stream) const { return cudaGraphUpload(exec_, stream); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

// The steps of a capture, in order.
enum class CaptureStep { begin, enqueue, end, instantiate };

struct Capture {
  CaptureStep step;  // the step that failed, or instantiate when all went well
  CudaCall call;     // that step's status
  GraphExec exec;    // the graph, when ok()
  bool ok() const { return call.ok(); }
};

// Captures what `enqueue` puts on `stream` (it returns the status of what it enqueued), in
// thread-local mode, and instantiates it. The capture is ended even when enqueuing failed, so the
// stream is usable afterwards.
template <class Enqueue>
Capture capture_graph(cudaStream_t stream, Enqueue&& enqueue) {
  const CudaCall begun = MLAPLAN_CUDA_CALL(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  if (!begun.ok()) return {CaptureStep::begin, begun, {}};
  cudaGraph_t graph = nullptr;
  const CudaCall enqueued = MLAPLAN_CUDA_CALL(enqueue());
  const CudaCall ended = MLAPLAN_CUDA_CALL(cudaStreamEndCapture(stream, &graph));
  if (!enqueued.ok() || !ended.ok()) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    return enqueued.ok() ? Capture{CaptureStep::end, ended, {}} : Capture{CaptureStep::enqueue, enqueued, {}};
  }
  cudaGraphExec_t exec = nullptr;
  const CudaCall instantiated = MLAPLAN_CUDA_CALL(cudaGraphInstantiate(&exec, graph, 0));
  cudaGraphDestroy(graph);
  return {CaptureStep::instantiate, instantiated, GraphExec(instantiated.ok() ? exec : nullptr)};
}

}  // namespace mlaplan::cuda_support
