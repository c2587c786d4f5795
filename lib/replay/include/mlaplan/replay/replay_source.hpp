// A request trace replayed through a prefix cache, as a request source for the workloads' batch
// formation (form_batches): the scheduler's steps decide what each request finds cached.
// docs/workloads.md ("Replaying a trace") has the rules.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/replay/prefix_cache.hpp"
#include "mlaplan/replay/trace_reader.hpp"

namespace mlaplan::replay {

struct ReplayOptions {
  uint32_t block_size = 512;   // tokens per hash_ids block (Mooncake's)
  uint64_t cache_tokens = 0;   // the prefix cache's size in tokens, whole blocks of block_size; 0: unlimited
  double step_ms = 0;          // > 0: steps take only the requests that arrived by their start, each lasting step_ms
  uint64_t max_model_len = 0;  // drop requests of more input tokens (0: none), as an engine refuses them
};

// What the replay saw. cached_tokens counts the prefix cache's hits when a request is admitted
// (chunked prefill's continuation is not a hit); the per-request vectors are in admission order.
struct ReplayStats {
  uint64_t requests = 0;  // admitted
  uint64_t dropped = 0;   // longer than max_model_len
  uint64_t input_tokens = 0;
  uint64_t cached_tokens = 0;
  uint64_t evictions = 0;
  std::vector<uint32_t> per_request_cached;
  std::vector<float> per_request_hit;  // cached / input tokens of each request

  double hit_rate() const { return input_tokens ? static_cast<double>(cached_tokens) / input_tokens : 0.0; }
  // "12,031 requests: 37.4% of input tokens cached (per request: cached p50 512, p90 12,800, p99
  // 54,272 tokens; hit p50 7.1%, p90 ..., p99 ...)".
  std::string describe() const;
};

// A request's cached tokens are the longest leading run of its blocks in the cache, times
// block_size, capped so that at least one token is new (a hit refreshes the run's blocks). Its
// blocks enter the cache when the step that prefills its last token ends, so the requests of one
// step do not see each other's blocks. A request without blocks (Azure's) finds nothing cached.
class ReplaySource : public workloads::RequestSource {
 public:
  ReplaySource(std::unique_ptr<TraceReader> reader, const ReplayOptions& options);
  std::optional<workloads::Request> next() override;
  std::string describe() const override;
  bool exhausted() const override { return done_ && !lookahead_; }
  void step_begins() override;
  void request_done() override;
  void step_ends() override;

  const ReplayStats& stats() const { return stats_; }
  const PrefixCache& cache() const { return cache_; }

 private:
  bool fetch();  // fills lookahead_ with the next request not dropped; false when the trace is done

  std::unique_ptr<TraceReader> reader_;
  ReplayOptions options_;
  PrefixCache cache_;
  ReplayStats stats_;
  std::optional<TraceRequest> lookahead_;
  bool done_ = false;
  std::deque<std::vector<uint64_t>> admitted_;  // blocks of the requests not done yet, oldest first
  std::vector<std::vector<uint64_t>> finished_;  // blocks of the requests done in this step
  double step_start_ = 0;
  bool started_ = false;
};

}  // namespace mlaplan::replay
