#include "nvtx_range.hpp"

#if MLAPLAN_HAVE_NVTX
#include <nvtx3/nvtx3.hpp>
#endif

namespace mlaplan::profile::nvtx {

#if MLAPLAN_HAVE_NVTX

namespace {
// The domain keeps our ranges apart from CUDA's and other libraries' in a timeline.
struct mlaplan_domain {
  static constexpr const char* name{"mlaplan"};
};
}  // namespace

bool enabled() { return true; }

void push(const char* name) {
  // Without a tool attached this is one indirect call to a no-op.
  const nvtx3::event_attributes attributes{nvtx3::message{name}};
  nvtxDomainRangePushEx(nvtx3::domain::get<mlaplan_domain>(), attributes.get());
}

void pop() { nvtxDomainRangePop(nvtx3::domain::get<mlaplan_domain>()); }

#else

bool enabled() { return false; }
void push(const char*) {}
void pop() {}

#endif

}  // namespace mlaplan::profile::nvtx
