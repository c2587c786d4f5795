// libFuzzer target: the planners on batches built straight from the bytes (no JSON in the way).
// Page size, buffer size, max_chunks, up to 64 sequences and their lengths are drawn from the
// bytes, small values and values near 2^31 and 2^32 alike. A batch validate_batch refuses is
// skipped. For the rest:
//   - plan_shape agrees with an independent oracle written from semantics.md (E, ceil(E/N), and the
//     smallest max_chunks: a sequence may not start at or past M*N);
//   - feasible: plan_reference and plan_fast_cpu give identical tables that keep check_properties,
//     at the given max_chunks and at the smallest one that fits; one chunk fewer is refused;
//   - infeasible: both throw InfeasibleBatch naming the same smallest max_chunks;
//   - every explorer policy: policy_outcome never throws; when it plans, plan_policy's tables keep
//     check_policy_invariants and report the same chunk count; a refusal is a throw of plan_policy.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "mlaplan/batch.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/policies/policy.hpp"
#include "mlaplan/policies/policy_check.hpp"
#include "mlaplan/fast_cpu_planner.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/check/property_check.hpp"
#include "mlaplan/reference_planner.hpp"

using namespace mlaplan;
using namespace mlaplan::policies;

namespace {

constexpr uint64_t kMaxCells = uint64_t{1} << 12;  // tables planned per input stay this small (speed)
constexpr uint32_t kMaxBatch = 64;
// Packed policies walk one piece per chunk; past this many chunks per input the fuzzer slows to a
// crawl, so only their cheap refusal (above 2^24 chunks, policy_plan.cpp) is exercised there.
constexpr uint64_t kMaxWalk = uint64_t{1} << 12;
constexpr uint64_t kLibraryWalkLimit = uint64_t{1} << 24;

std::string describe(const Batch& b) {
  std::string s = "P=" + std::to_string(b.page_size) + " N=" + std::to_string(b.buffer_token_size) +
                  " M=" + std::to_string(b.max_chunks) + " cache=[";
  for (size_t i = 0; i < b.cache_lengths.size(); ++i) s += (i ? "," : "") + std::to_string(b.cache_lengths[i]);
  s += "] offsets=[";
  for (size_t i = 0; i < b.input_row_offsets.size(); ++i) s += (i ? "," : "") + std::to_string(b.input_row_offsets[i]);
  return s + "]";
}

// A 32-bit value from one of several ranges: tiny, small, powers of two +-2, near 2^32, near 2^31, any.
uint32_t pick(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: return in.ConsumeIntegralInRange<uint32_t>(0, 16);
    case 1: return in.ConsumeIntegralInRange<uint32_t>(0, 4096);
    case 2: {
      const int k = in.ConsumeIntegralInRange<int>(0, 31);
      const int d = in.ConsumeIntegralInRange<int>(-2, 2);
      return static_cast<uint32_t>((uint64_t{1} << k) + static_cast<uint64_t>(static_cast<int64_t>(d)));
    }
    case 3: return std::numeric_limits<uint32_t>::max() - in.ConsumeIntegralInRange<uint32_t>(0, 4096);
    case 4: return 0x80000000u - 2048u + in.ConsumeIntegralInRange<uint32_t>(0, 4096);
    default: return in.ConsumeIntegral<uint32_t>();
  }
}

Batch make_batch(FuzzedDataProvider& in) {
  Batch b;
  b.page_size = pick(in);
  b.buffer_token_size = pick(in);
  b.max_chunks = pick(in);
  const uint32_t n = in.ConsumeIntegralInRange<uint32_t>(0, kMaxBatch);
  const int offsets_mode = in.ConsumeIntegralInRange<int>(0, 3);
  b.cache_lengths.resize(n);
  for (uint32_t& c : b.cache_lengths) c = pick(in);
  switch (offsets_mode) {
    case 0:  // raw values: usually refused as decreasing
      for (uint32_t i = 0; i <= n; ++i) b.input_row_offsets.push_back(pick(in));
      break;
    case 1:  // a wrong count
      for (uint32_t i = 0; i < n + (in.ConsumeBool() ? 2 : 0); ++i) b.input_row_offsets.push_back(pick(in));
      break;
    default: {  // a base and running lengths (wrapping at 2^32 is possible: then refused as decreasing)
      uint32_t at = offsets_mode == 2 ? 0 : pick(in);
      b.input_row_offsets.push_back(at);
      for (uint32_t i = 0; i < n; ++i) b.input_row_offsets.push_back(at += pick(in));
    }
  }
  return b;
}

struct Oracle {
  uint64_t E = 0, last_start = 0, input_tokens = 0, min_max_chunks = 1;
};

// semantics.md, written out independently of plan_shape.cpp.
Oracle oracle(const Batch& b) {
  Oracle o;
  const uint64_t P = b.page_size, N = b.buffer_token_size;
  for (uint32_t i = 0; i < b.batch_size(); ++i) {
    const uint64_t raw = uint64_t{b.cache_lengths[i]} + (uint64_t{b.input_row_offsets[i + 1]} - b.input_row_offsets[i]);
    o.input_tokens += raw;
    o.last_start = o.E;
    o.E += (raw + P - 1) / P * P;
  }
  if (b.batch_size() > 0) o.min_max_chunks = std::max((o.E + N - 1) / N, o.last_start / N + 1);
  return o;
}

// Both planners at this batch's max_chunks: identical tables that keep the properties, or the same refusal.
void plan_both(const Batch& b, uint64_t want_min, bool feasible) {
  if (!feasible) {
    uint64_t mins[2] = {0, 0};
    for (int which = 0; which < 2; ++which) {
      try {
        if (which == 0) plan_reference(b); else plan_fast_cpu(b);
        mlaplan_fuzz::fail(__FILE__, __LINE__, "an infeasible batch was planned: " + describe(b));
      } catch (const InfeasibleBatch& e) {
        mins[which] = e.min_max_chunks();
        FUZZ_CHECK(std::string(e.what()).rfind("max_chunks: ", 0) == 0, std::string("message: ") + e.what());
      }
      FUZZ_UNEXPECTED("planning an infeasible batch")
    }
    FUZZ_CHECK(mins[0] == want_min && mins[1] == want_min,
               "min_max_chunks " + std::to_string(mins[0]) + " / " + std::to_string(mins[1]) + ", want " +
                   std::to_string(want_min) + ": " + describe(b));
    return;
  }
  if (uint64_t{b.max_chunks} * (uint64_t{b.batch_size()} + 1) > kMaxCells) return;
  mlaplan_fuzz::check_feasible_plan(b, describe(b));
}

void check_policies(const Batch& b, FuzzedDataProvider& in) {
  Policy packed_vllm, packed_aligned, packed_trtllm, even_vllm, even_sglang;
  packed_vllm.kind = packed_aligned.kind = packed_trtllm.kind = PolicyKind::packed;
  packed_aligned.split_align = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint32_t>(1, 256) : pick(in);
  packed_trtllm.packed = PackedVariant::trtllm;
  even_vllm.kind = even_sglang.kind = PolicyKind::even_split;
  even_sglang.even_split = EvenSplitVariant::sglang;
  const Policy policies[] = {Policy{}, packed_vllm, packed_aligned, packed_trtllm, even_vllm, even_sglang};

  uint64_t context = 0;
  for (uint32_t c : b.cache_lengths) context += c;
  const uint64_t walk_chunks = context / b.buffer_token_size;
  const bool long_walk = walk_chunks > kMaxWalk && walk_chunks <= kLibraryWalkLimit;

  for (const Policy& p : policies) {
    if (p.kind == PolicyKind::packed && long_walk) continue;
    PolicyOutcome o;
    try {
      o = policy_outcome(b, p);
    }
    FUZZ_UNEXPECTED("policy_outcome " + p.name())
    if (p.kind == PolicyKind::max) FUZZ_CHECK(o.refused == !plan_shape(b).feasible, describe(b));
    if (o.refused) {
      FUZZ_CHECK(!o.why.empty(), p.name() + " refused without a reason: " + describe(b));
      try {
        plan_policy(b, p);
        mlaplan_fuzz::fail(__FILE__, __LINE__, p.name() + ": refused by policy_outcome but planned: " + describe(b));
      } catch (const InputError&) {
      }
      FUZZ_UNEXPECTED("plan_policy (refused) " + p.name())
      continue;
    }
    FUZZ_CHECK(o.largest_chunk <= b.buffer_token_size, p.name() + ": a chunk larger than the buffer: " + describe(b));
    const uint64_t rows = std::max<uint64_t>(b.max_chunks, o.chunks);
    if (rows * (b.batch_size() + uint64_t{1}) > kMaxCells) continue;
    PolicyPlan plan;
    try {
      plan = plan_policy(b, p);
    }
    FUZZ_UNEXPECTED("plan_policy " + p.name())
    const InvariantReport r = check_policy_invariants(b, p, plan.tables, plan.outcome.chunks);
    FUZZ_CHECK(r.ok(), p.name() + ": " + r.messages.front() + ": " + describe(b));
    FUZZ_CHECK(plan.outcome.chunks == o.chunks, p.name() + ": plan_policy uses " + std::to_string(plan.outcome.chunks) +
                                                    " chunks, policy_outcome says " + std::to_string(o.chunks) + ": " +
                                                    describe(b));
    if (p.kind == PolicyKind::max) {
      FUZZ_CHECK(plan.outcome.streamed_rows == o.streamed_rows && plan.outcome.largest_chunk == o.largest_chunk,
                 "max: the outcome read from the tables differs from the closed form: " + describe(b));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Batch b = make_batch(in);
  try {
    validate_batch(b);
  } catch (const InputError&) {
    return 0;
  }
  FUZZ_UNEXPECTED("validate_batch")

  const Oracle o = oracle(b);
  const PlanShape shape = plan_shape(b);
  FUZZ_CHECK(shape.padded_tokens == o.E, "padded_tokens: " + describe(b));
  FUZZ_CHECK(shape.input_tokens == o.input_tokens, "input_tokens: " + describe(b));
  FUZZ_CHECK(shape.chunks_used == (o.E + b.buffer_token_size - 1) / b.buffer_token_size, "chunks_used: " + describe(b));
  FUZZ_CHECK(shape.min_max_chunks == o.min_max_chunks,
             "min_max_chunks " + std::to_string(shape.min_max_chunks) + ", oracle " + std::to_string(o.min_max_chunks) +
                 ": " + describe(b));
  FUZZ_CHECK(shape.feasible == (o.min_max_chunks <= b.max_chunks), "feasible: " + describe(b));

  plan_both(b, o.min_max_chunks, shape.feasible);
  // The boundary: exactly the smallest max_chunks plans, one fewer is refused.
  if (o.min_max_chunks <= std::numeric_limits<uint32_t>::max()) {
    Batch tight = b;
    tight.max_chunks = static_cast<uint32_t>(o.min_max_chunks);
    if (uint64_t{tight.max_chunks} * (b.batch_size() + uint64_t{1}) <= kMaxCells) plan_both(tight, o.min_max_chunks, true);
    if (o.min_max_chunks > 1) {
      tight.max_chunks = static_cast<uint32_t>(o.min_max_chunks - 1);
      plan_both(tight, o.min_max_chunks, false);
    }
  }
  check_policies(b, in);
  return 0;
}
