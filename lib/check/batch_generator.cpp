#include "mlaplan/check/batch_generator.hpp"

#include <algorithm>
#include <array>

#include "mlaplan/plan_shape.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::check {

namespace {

constexpr std::array<const char*, 11> kShapes = {"random",          "empty-batch",   "zero-lengths", "exact-multiple",
                                                 "not-page-multiple", "page-size-1", "huge-sequence", "at-capacity",
                                                 "past-capacity",   "large-batch",   "near-32-bit-limits"};
constexpr uint64_t kU32Max = 0xffffffffu;

}  // namespace

uint64_t most_chunk_rows(const BatchGeneratorOptions& options, bool large_shape) {
  const std::vector<uint32_t>& allowed = options.limits.max_chunks;  // sorted
  const uint64_t any_shape = allowed.empty() ? options.max_chunks : allowed.back();
  if (!large_shape) return any_shape;
  // Its sequences take at most 2 pages each and its buffer at least an eighth of them, so it needs at
  // most 16 chunks, unless the padded total passes 32 bits (huge --only-page-sizes) and the count is off.
  const uint64_t largest_page = options.limits.page_sizes.empty() ? 1024 : options.limits.page_sizes.back();
  const uint64_t count = std::max(options.large_batch_size, options.max_batch_size);
  if (2 * largest_page * count > kU32Max) return any_shape;
  constexpr uint64_t kLargeShapeChunks = 16 + 1 + 3;
  if (allowed.empty()) return kLargeShapeChunks;
  // keep_to_limits picks the smallest allowed value at or above what the batch needs, else the largest.
  const auto at_least = std::lower_bound(allowed.begin(), allowed.end(), kLargeShapeChunks);
  return at_least == allowed.end() ? allowed.back() : *at_least;
}

uint64_t most_batch_size(const BatchGeneratorOptions& options, bool large_shape) {
  const uint64_t ordinary = uint64_t{std::max<uint32_t>(options.max_batch_size, 1)} + 3;
  return large_shape ? std::max<uint64_t>(options.large_batch_size, ordinary) : ordinary;
}

BatchGenerator::BatchGenerator(uint64_t seed, BatchGeneratorOptions options) : rng_(seed), options_(options) {}

uint64_t BatchGenerator::uniform(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_); }

bool BatchGenerator::chance(double p) { return std::bernoulli_distribution(p)(rng_); }

// `count` sequences of up to `max_tokens` tokens each, split at random between cache and new rows.
Batch BatchGenerator::sequences(uint32_t count, uint32_t page_size, uint32_t max_tokens, double empty_share) {
  Batch b;
  b.page_size = page_size;
  b.input_row_offsets.push_back(chance(0.2) ? static_cast<uint32_t>(uniform(0, 100000)) : 0);
  for (uint32_t i = 0; i < count; ++i) {
    // A large batch takes a while to draw: Ctrl-C is seen inside it too.
    if ((i & 0xffff) == 0xffff && profile::stop_requested()) throw Interrupted("interrupted while drawing a random batch");
    uint32_t tokens = chance(empty_share) ? 0 : static_cast<uint32_t>(uniform(0, max_tokens));
    // Some lengths sit on or next to page boundaries, where padding bugs live.
    if (chance(0.25)) {
      const uint64_t pages = tokens / page_size;
      tokens = static_cast<uint32_t>(std::min<uint64_t>(pages * page_size + uniform(0, 2) - 1 + (pages == 0), max_tokens));
    }
    const uint32_t cached = static_cast<uint32_t>(uniform(0, tokens));
    b.cache_lengths.push_back(cached);
    b.input_row_offsets.push_back(b.input_row_offsets.back() + (tokens - cached));
  }
  return b;
}

// Sets M to the minimum that fits plus `relative_to_minimum`, kept within 1..max_chunks.
void BatchGenerator::set_max_chunks(Batch& b, int64_t relative_to_minimum) {
  b.max_chunks = options_.max_chunks;
  const int64_t need = static_cast<int64_t>(plan_shape(b).min_max_chunks);
  b.max_chunks = static_cast<uint32_t>(std::clamp<int64_t>(need + relative_to_minimum, 1, options_.max_chunks));
}

// A page size to draw: one of the common ones, or of the limits' when there are limits; at least
// `at_least` where one is allowed.
uint32_t BatchGenerator::page_size(uint32_t at_least) {
  static const std::vector<uint32_t> common = {1, 2, 16, 64, 128, 256, 1024};
  const std::vector<uint32_t>& from = options_.limits.page_sizes.empty() ? common : options_.limits.page_sizes;
  std::vector<uint32_t> big;
  for (uint32_t p : from)
    if (p >= at_least) big.push_back(p);
  const std::vector<uint32_t>& pick = big.empty() ? from : big;
  return pick[uniform(0, pick.size() - 1)];
}

// With a max_chunks limit: M becomes an allowed value as close as it can to the minimum plus
// `relative_to_minimum` (below the minimum for the past-capacity shape), and a batch needing more
// chunks than the largest allowed gets a larger buffer rather than becoming a refusal.
void BatchGenerator::keep_to_limits(Batch& b, int64_t relative_to_minimum) {
  const std::vector<uint32_t>& allowed = options_.limits.max_chunks;
  if (allowed.empty()) return;
  if (b.batch_size() == 0) {
    b.max_chunks = allowed[uniform(0, allowed.size() - 1)];
    return;
  }
  const uint32_t most = allowed.back();
  uint32_t need = plan_shape(b).min_max_chunks;
  if (relative_to_minimum >= 0) {
    while (need > most && b.buffer_token_size < 0x7fffffffu) {
      const uint64_t wider = std::max<uint64_t>(2ull * b.buffer_token_size, plan_shape(b).padded_tokens / most + 1);
      b.buffer_token_size = static_cast<uint32_t>(std::min<uint64_t>(wider, 0x7fffffffu));
      need = plan_shape(b).min_max_chunks;
    }
    const uint64_t target = need + static_cast<uint64_t>(relative_to_minimum);
    auto at_least = std::lower_bound(allowed.begin(), allowed.end(), target);
    if (at_least == allowed.end()) at_least = std::lower_bound(allowed.begin(), allowed.end(), need);
    b.max_chunks = at_least == allowed.end() ? most : *at_least;
  } else {  // the largest allowed below the minimum, else the smallest allowed (then feasible)
    auto below = std::lower_bound(allowed.begin(), allowed.end(), need);
    b.max_chunks = below == allowed.begin() ? allowed.front() : *std::prev(below);
  }
}

Batch BatchGenerator::next(std::string* shape_name) {
  size_t kind = uniform(0, kShapes.size() - 1);
  if (!options_.infeasible && kind == 8) kind = 7;
  if (kind == 5 && !options_.limits.admits_page_size(1)) kind = 0;  // no page size 1 to draw
  const uint32_t max_b = std::max<uint32_t>(options_.max_batch_size, 1);
  uint32_t p = page_size();
  Batch b;
  int64_t slack = static_cast<int64_t>(uniform(0, 3));  // chunks beyond the minimum

  switch (kind) {
    case 1:  // empty batch
      b = sequences(0, p, 0, 0);
      b.buffer_token_size = static_cast<uint32_t>(uniform(1, 4096));
      b.max_chunks = static_cast<uint32_t>(uniform(1, std::min<uint32_t>(options_.max_chunks, 64)));
      break;
    case 2:  // mostly zero-length sequences, some leading and trailing
      b = sequences(static_cast<uint32_t>(uniform(1, max_b)), p, 3 * p, 0.7);
      b.buffer_token_size = static_cast<uint32_t>(uniform(1, 8) * p);
      break;
    case 3: {  // padded total an exact multiple of the buffer
      b = sequences(static_cast<uint32_t>(uniform(1, max_b)), p, 4 * p + 5, 0.1);
      const uint32_t n = static_cast<uint32_t>(uniform(1, 6) * p);
      b.buffer_token_size = n;
      const uint64_t e = plan_shape(b).padded_tokens;
      b.cache_lengths.back() += static_cast<uint32_t>((n - e % n) % n);  // a multiple of p, so still aligned
      if (chance(0.5)) {  // and sometimes trailing empty sequences right at the end
        for (uint64_t i = uniform(1, 3); i > 0; --i) {
          b.cache_lengths.push_back(0);
          b.input_row_offsets.push_back(b.input_row_offsets.back());
        }
      }
      slack = static_cast<int64_t>(uniform(0, 1));
      break;
    }
    case 4:  // a buffer that is not a multiple of the page size: pages straddle chunks
      p = page_size(16);
      b = sequences(static_cast<uint32_t>(uniform(1, max_b)), p, 3 * p, 0.1);
      b.buffer_token_size = static_cast<uint32_t>(uniform(1, 4 * p));
      if (b.buffer_token_size % p == 0) b.buffer_token_size += 1;
      break;
    case 5:  // page size 1: no padding
      b = sequences(static_cast<uint32_t>(uniform(1, max_b)), 1, 200, 0.1);
      b.buffer_token_size = static_cast<uint32_t>(uniform(1, 300));
      break;
    case 6: {  // one huge sequence among small ones, many chunks
      b = sequences(static_cast<uint32_t>(uniform(1, std::min<uint32_t>(max_b, 8))), p, 2 * p, 0.2);
      const size_t at = uniform(0, b.cache_lengths.size() - 1);
      b.cache_lengths[at] = static_cast<uint32_t>(uniform(1u << 20, 1u << 28));
      b.buffer_token_size = static_cast<uint32_t>(uniform(1u << 16, 1u << 22));
      break;
    }
    case 7:  // exactly at capacity: M is the minimum
    case 8:  // one past capacity: M is one below the minimum (infeasible)
      b = sequences(static_cast<uint32_t>(uniform(1, max_b)), p, 4 * p, 0.15);
      {  // one draw a statement: the order of the operands' evaluation is the compiler's (a sanitizer
         // build drew other batches from the same --seed)
        const uint64_t pages = uniform(1, 6);
        const uint64_t unit = chance(0.7) ? p : 1;
        const uint64_t extra = chance(0.3) ? 1 : 0;
        b.buffer_token_size = static_cast<uint32_t>(pages * unit + extra);
      }
      slack = kind == 7 ? 0 : -1;
      break;
    case 9: {  // a large batch, in a few chunks so the tables stay small
      const uint32_t count = static_cast<uint32_t>(uniform(max_b, std::max(options_.large_batch_size, max_b)));
      b = sequences(count, p, 2 * p, 0.1);
      b.buffer_token_size = static_cast<uint32_t>(std::min<uint64_t>(uniform(count / 8 + 1, count) * p, 0x7fffffff));
      break;
    }
    case 10: {  // totals near 2^32 and a buffer near 2^31: every value at the edge of its width
      b = sequences(static_cast<uint32_t>(uniform(1, 4)), 1, 16, 0.2);
      b.page_size = p;
      const uint64_t e = plan_shape(b).padded_tokens;
      const uint64_t room = (kU32Max - e) / p * p;  // what can still be added, page-aligned
      const uint64_t big = room - uniform(0, std::min<uint64_t>(room, 3ull * p));
      // Put most of it in the cache (uint32), some in new rows near the top of the row space.
      const size_t at = uniform(0, b.cache_lengths.size() - 1);
      const uint64_t room_in_cache = kU32Max - b.cache_lengths[at] - b.input_length(static_cast<uint32_t>(at));
      b.cache_lengths[at] += static_cast<uint32_t>(std::min(big, room_in_cache) / p * p);
      if (chance(0.5)) {  // shift every offset toward 2^32
        const uint32_t shift = kU32Max - b.input_row_offsets.back();
        for (auto& o : b.input_row_offsets) o += shift;
      }
      b.buffer_token_size = static_cast<uint32_t>(uniform((1u << 31) - 1024, (1u << 31) - 1));
      break;
    }
    default:  // ordinary mixed batches
    {  // one draw a statement, as above: arguments are evaluated in no set order
      // The order the release builds drew them in (the last argument first), so that a --seed's
      // batches stay what CI gates and reproducers have recorded.
      const auto most = static_cast<uint32_t>(uniform(1, 8) * p);
      const auto count = static_cast<uint32_t>(uniform(0, max_b));
      b = sequences(count, p, most, 0.1);
    }
      b.buffer_token_size = static_cast<uint32_t>(uniform(1, 16 * p));
      break;
  }
  set_max_chunks(b, slack);
  if (kind == 8 && plan_shape(b).feasible && b.max_chunks > 1) --b.max_chunks;  // clamped at 1: feasible after all
  keep_to_limits(b, slack);
  if (shape_name) *shape_name = kShapes[kind];
  return b;
}

}  // namespace mlaplan::check
