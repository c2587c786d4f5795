// Batches from a stream of requests, formed the way a serving engine's scheduler forms prefill
// steps: either by a token budget per step (vLLM's max_num_batched_tokens, with chunked prefill of
// requests that do not fit) or by a batch size drawn from a range.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "mlaplan/batch.hpp"
#include "mlaplan/workloads/workload.hpp"

namespace mlaplan::workloads {

// Where requests come from: a preset's draws (endless) or a list such as a user's trace (finite).
// A source whose requests depend on the steps (a trace replayed through a prefix cache, with
// arrival times: mlaplan::replay) also hears when steps begin and end and when a request is done.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  // The next request, or nothing: the source is dry, or (see exhausted) nothing more has arrived yet.
  virtual std::optional<Request> next() = 0;
  virtual std::string describe() const = 0;  // "workload coding-agent (seed 1)", "trace.csv (1,000 requests)"

  // After next() gave nothing: true when no request will ever come (the default), false when one
  // will in a later step; a step that formed empty is then ended and the next one begins.
  virtual bool exhausted() const { return true; }
  virtual void step_begins() {}
  // The oldest request next() returned that was not done yet has prefilled its last token in this
  // step (requests finish in the order they came: one at a time is ever partly prefilled).
  virtual void request_done() {}
  virtual void step_ends() {}
};
std::unique_ptr<RequestSource> preset_source(const WorkloadPreset& preset, uint64_t seed);
std::unique_ptr<RequestSource> list_source(std::vector<Request> requests, std::string name);
// Drops the requests longer than an engine's max_model_len (cached + new > max_len), as the engine
// would refuse them; describe() says how many were dropped so far, and so does *dropped where given
// (it must outlive the source).
std::unique_ptr<RequestSource> capped_source(std::unique_ptr<RequestSource> source, uint64_t max_len,
                                             uint64_t* dropped = nullptr);

struct BatchFormation {
  enum class Mode { token_budget, batch_size };
  Mode mode = Mode::token_budget;
  // token_budget: new tokens per step, like max_num_batched_tokens. A request that does not fit
  // prefills what fits and continues in the next step, its prefilled part now cached context.
  uint32_t token_budget = 8192;
  uint32_t max_sequences = 256;  // token_budget: sequences per step, like max_num_seqs
  // batch_size: each batch takes a size drawn uniformly from [min_batch, max_batch] whole requests.
  uint32_t min_batch = 1, max_batch = 32;

  // The most memory the formed batches may take (0: no cap): their arrays as the heap allocates them
  // and the list of structs (while it grows, its old and new copies), plus `bytes_per_batch` more for
  // what the caller keeps per batch (a sweep's iteration counts). Forming stops with an InputError
  // naming --batches once they would pass it.
  uint64_t memory_limit = 0;
  uint64_t bytes_per_batch = 0;
  std::string memory_limit_text;  // how the limit is named in the message ("--memory-limit 2.00 GiB")
  // Whether max_batches is a count the user asked for (--batches K) or one the source will reach (an
  // endless preset): then max_batches of the smallest batches (one sequence) passing memory_limit is
  // refused before forming any. False for a bound of the tool's own that a trace may never reach
  // (gen's whole trace); the messages then speak of the trace's steps.
  bool batches_given = true;
  // A caller that holds every step as a batch only to count it (mlaplan.replay): the limit's message
  // then names `limit_subject` ("replay"), calls the batches steps and gives `limit_fix` as the fix.
  std::string limit_subject, limit_fix;

  std::string describe() const;  // "token budget 8192 per step, at most 256 sequences" / "batches of 1..32 requests"
};

// The planner settings every formed batch gets (sweeps change buffer and chunks per setting).
struct BatchSettings {
  uint32_t page_size = 128;
  uint32_t buffer_token_size = 16384;
  uint32_t max_chunks = 16;
};

// Up to `max_batches` batches, in order, until the source runs dry; `seed` drives the batch-size
// draws. Every batch passes validate_batch; one that cannot (its padded total past 32 bits) is an
// InputError naming the batch and the fix.
std::vector<Batch> form_batches(RequestSource& source, const BatchFormation& formation, const BatchSettings& settings,
                                size_t max_batches, uint64_t seed);

}  // namespace mlaplan::workloads
