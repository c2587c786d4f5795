#include "mlaplan/cost/eager.hpp"

namespace mlaplan::cost {

const char* launch_kind_name(LaunchKind k) {
  switch (k) {
    case LaunchKind::gather: return "gather";
    case LaunchKind::up_projection: return "up_projection";
    case LaunchKind::concat: return "concat";
    case LaunchKind::attention: return "attention";
    case LaunchKind::merge: return "merge";
    case LaunchKind::fill: return "fill";
  }
  return "";
}

Clock eager_fills(const HostCosts& host, uint32_t states) {
  Clock k;
  for (uint32_t i = 0; i < 2 * states; ++i) k.launch(LaunchKind::fill, host.of(LaunchKind::fill), 0);
  return k;
}

}  // namespace mlaplan::cost
