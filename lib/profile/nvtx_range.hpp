// NVTX ranges in the `mlaplan` domain, for Nsight Systems and any NVTX tool (injection library).
// A build without the NVTX headers compiles these to nothing.
#pragma once

namespace mlaplan::profile::nvtx {

// Whether the ranges are compiled in (the NVTX3 headers were found at configure time).
bool enabled();
// Push/pop a range on the calling thread; `name` is copied by NVTX (ASCII message).
void push(const char* name);
void pop();

}  // namespace mlaplan::profile::nvtx
