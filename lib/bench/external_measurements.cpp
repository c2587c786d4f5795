#include "mlaplan/bench/external_measurements.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "mlaplan/errors.hpp"
#include "mlaplan/check/external_planner.hpp"
#include "mlaplan/profile/external_process.hpp"

namespace mlaplan::bench {

namespace {

constexpr double kMaxExternalHotBatch = 10000;

std::string context_of(const Batch& b) { return fmt::format("(bench batch B={})", b.batch_size()); }

}  // namespace

ExternalBench::ExternalBench(const std::string& command, double timeout_seconds)
    : process_(std::make_unique<profile::ExternalProcess>(command)), timeout_seconds_(timeout_seconds) {
  const std::string answer = ask("info\n", "(asked for its info)");
  if (answer.rfind("info", 0) != 0)
    throw DeviceError(fmt::format("bench --max: '{}' answered '{}' to info; it must speak the timing requests of "
                                  "docs/external.md (scripts/max-reference/ does)",
                                  command, answer.substr(0, 80)));
  info_ = answer.size() > 5 ? answer.substr(5) : "";
}

ExternalBench::~ExternalBench() = default;

std::string ExternalBench::ask(const std::string& line, const std::string& context, size_t max_answer_bytes) {
  std::string answer =
      process_->ask(line, timeout_seconds_, context, max_answer_bytes ? max_answer_bytes : profile::ExternalProcess::kShortAnswerBytes);
  if (answer.rfind("error", 0) == 0)
    throw DeviceError(fmt::format("external planner '{}': {} {}", process_->command(), answer, context));
  return answer;
}

// Sends a timing request and reads `elapsed NS`, returned in microseconds.
double ExternalBench::elapsed_us(const std::string& request, const std::string& context) {
  const std::string answer = ask(request, context);
  long long ns = -1;
  if (answer.rfind("elapsed ", 0) == 0) std::from_chars(answer.data() + 8, answer.data() + answer.size(), ns);
  if (ns < 0)
    throw DeviceError(fmt::format("external planner '{}' answered '{}' to {}; 'elapsed NS' expected {}", process_->command(),
                                  answer.substr(0, 80), request.substr(0, request.size() - 1), context));
  return static_cast<double>(ns) / 1e3;
}

Measurement ExternalBench::measure(const std::vector<Batch>& sets, const std::vector<PlanTables>& references, Mode mode,
                                   const StoppingRule& rule) {
  const std::string context = context_of(sets.front());
  for (size_t i = 0; i < sets.size(); ++i) {
    if (sets[i].batch_size() > kExternalCheckLimit) continue;
    const PlanTables got = check::parse_external_answer(ask(check::external_request_line(sets[i]), context, check::max_plan_answer_bytes(sets[i])), sets[i]);
    require_same_plan(references[i], got, Kernel::max, sets[i].batch_size(), i);
  }
  for (const Batch& b : sets) {
    std::string line = check::external_request_line(b);
    line.replace(0, 4, "load");  // the same numbers as a plan request
    const std::string answer = ask(line, context);
    if (answer.rfind("loaded", 0) != 0)
      throw DeviceError(fmt::format("external planner '{}' answered '{}' to load; 'loaded K' expected {}",
                                    process_->command(), answer.substr(0, 80), context));
  }
  // The first launches load the kernel's module: untimed, then one timed launch sizes the hot batch.
  elapsed_us("time-hot 2\n", context);
  const double one = std::max(0.5, elapsed_us("time-hot 1\n", context));
  Measurement m;
  if (mode == Mode::cold) {
    m = measure_until(rule, 1, [&] { return elapsed_us("time-cold\n", context); });
  } else {
    const size_t repeat = static_cast<size_t>(std::clamp(kHotSampleUs / one, 1.0, kMaxExternalHotBatch));
    const std::string request = fmt::format("time-hot {}\n", repeat);
    m = measure_until(rule, repeat, [&] { return elapsed_us(request, context) / static_cast<double>(repeat); });
  }
  ask("unload\n", context);
  return m;
}

}  // namespace mlaplan::bench
