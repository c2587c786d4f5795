// Timing a planner in another process (MAX's own kernel behind scripts/max-reference, or an
// engine's port) through the timing requests of docs/external.md: `load` puts a batch on the
// device, `time-hot R` times R back-to-back launches over the loaded batches with CUDA events,
// `time-cold` one launch after the L2 is overwritten, `unload` frees them. `bench --max CMD` uses it
// for the `max` row.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/bench/measurement.hpp"
#include "mlaplan/plan_tables.hpp"

namespace mlaplan::profile {
class ExternalProcess;
}

namespace mlaplan::bench {

// The largest batch whose tables are checked against the reference through `plan` before timing:
// larger tables would be hundreds of MB of text (verify --external checks correctness at scale).
constexpr size_t kExternalCheckLimit = 65536;

class ExternalBench {
 public:
  // Starts `command`; throws DeviceError when it cannot, or answers `info` with an error.
  explicit ExternalBench(const std::string& command, double timeout_seconds = 600);
  ~ExternalBench();

  const std::string& info() const { return info_; }  // what the program says of itself (`info`)

  // Checks the plan of every set of at most kExternalCheckLimit sequences against `references`
  // (PlanMismatch), loads the sets, times them rotating among them, and unloads them.
  Measurement measure(const std::vector<Batch>& sets, const std::vector<PlanTables>& references, Mode mode,
                      const StoppingRule& rule);

 private:
  // `max_answer_bytes` 0: a short answer (ExternalProcess::kShortAnswerBytes); plan answers are longer.
  std::string ask(const std::string& line, const std::string& context, size_t max_answer_bytes = 0);
  double elapsed_us(const std::string& request, const std::string& context);

  std::unique_ptr<profile::ExternalProcess> process_;
  double timeout_seconds_;
  std::string info_;
};

}  // namespace mlaplan::bench
