// Device memory for a number of values of T, freed with the object; move-only. Allocating returns
// the CUDA status rather than throwing, so each caller checks it its own way (MLAPLAN_CUDA_CHECK, a
// test's CUDA_OK) and words the failure.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace mlaplan::cuda_support {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  // Frees the memory. The status is cudaFree's, which may be a sticky error of earlier work.
  cudaError_t reset() {
    if (ptr_ == nullptr) return cudaSuccess;
    size_ = 0;
    return cudaFree(std::exchange(ptr_, nullptr));
  }

  // Frees what it holds, then allocates room for `count` values (nothing for 0), uninitialised.
  cudaError_t allocate(size_t count) {
    if (const cudaError_t e = reset(); e != cudaSuccess) return e;
    if (count == 0) return cudaSuccess;
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, count * sizeof(T));
    if (e == cudaSuccess) {
      ptr_ = static_cast<T*>(p);
      size_ = count;
    }
    return e;
  }

  // Grows to room for at least `count` values (reallocated: the contents are then undefined).
  cudaError_t reserve(size_t count) { return count <= size_ ? cudaSuccess : allocate(count); }

  T* get() const { return ptr_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace mlaplan::cuda_support
