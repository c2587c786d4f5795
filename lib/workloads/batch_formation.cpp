#include "mlaplan/workloads/batch_formation.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::workloads {

namespace {

class PresetSource : public RequestSource {
 public:
  PresetSource(const WorkloadPreset& preset, uint64_t seed) : preset_(preset), seed_(seed), rng_(seed) {}
  std::optional<Request> next() override { return preset_.draw(rng_); }
  std::string describe() const override { return fmt::format("workload {} (seed {})", preset_.name, seed_); }

 private:
  const WorkloadPreset& preset_;
  uint64_t seed_;
  std::mt19937_64 rng_;
};

class ListSource : public RequestSource {
 public:
  ListSource(std::vector<Request> requests, std::string name) : requests_(std::move(requests)), name_(std::move(name)) {}
  std::optional<Request> next() override {
    if (at_ == requests_.size()) return std::nullopt;
    return requests_[at_++];
  }
  std::string describe() const override { return fmt::format("{} ({} requests)", name_, requests_.size()); }

 private:
  std::vector<Request> requests_;
  std::string name_;
  size_t at_ = 0;
};

class CappedSource : public RequestSource {
 public:
  CappedSource(std::unique_ptr<RequestSource> inner, uint64_t max_len, uint64_t* dropped)
      : inner_(std::move(inner)), max_len_(max_len), counted_(dropped) {}
  std::optional<Request> next() override {
    // A preset that draws only over-long requests would loop forever: give up after a million in a row.
    for (uint32_t tries = 0; tries < 1000000; ++tries) {
      std::optional<Request> r = inner_->next();
      if (!r || uint64_t{r->cached_tokens} + r->new_tokens <= max_len_) return r;
      ++dropped_;
      if (counted_) ++*counted_;
    }
    throw InputError(fmt::format("--max-model-len {}: a million requests in a row are longer; raise it", max_len_));
  }
  std::string describe() const override {
    return fmt::format("{}, {} request{} over max_model_len {} dropped", inner_->describe(), dropped_,
                       dropped_ == 1 ? "" : "s", max_len_);
  }

 private:
  std::unique_ptr<RequestSource> inner_;
  uint64_t max_len_;
  uint64_t dropped_ = 0;
  uint64_t* counted_;  // the caller's count too (the Python API reports it), or null
};

Batch empty_batch(const BatchSettings& s) {
  Batch b;
  b.page_size = s.page_size;
  b.buffer_token_size = s.buffer_token_size;
  b.max_chunks = s.max_chunks;
  b.input_row_offsets.push_back(0);
  return b;
}

void add_sequence(Batch& b, uint64_t cached, uint64_t fresh) {
  // A batch of millions of sequences takes seconds to draw: Ctrl-C is seen inside it too.
  if ((b.cache_lengths.size() & 4095) == 4095 && profile::stop_requested())
    throw Interrupted(fmt::format("interrupted while forming a batch ({} sequences drawn)", b.cache_lengths.size()));
  // A request continued across steps caches what it prefilled: cached + new of one request.
  if (cached > UINT32_MAX)
    throw InputError(fmt::format("a request's context reached {} tokens, past the 32-bit cache_lengths; shorten the "
                                 "requests in the trace",
                                 cached));
  b.cache_lengths.push_back(static_cast<uint32_t>(cached));
  b.input_row_offsets.push_back(b.input_row_offsets.back() + static_cast<uint32_t>(fresh));
}

void validated(Batch& b, size_t index) {
  if (profile::stop_requested()) throw Interrupted(fmt::format("interrupted while forming batch {}", index));
  try {
    validate_batch(b);
  } catch (const InputError& e) {
    throw InputError(fmt::format("batch {}: {} ({} sequences); lower --token-budget or --batch-size", index, e.what(),
                                 b.batch_size()));
  }
}

}  // namespace

std::unique_ptr<RequestSource> preset_source(const WorkloadPreset& preset, uint64_t seed) {
  return std::make_unique<PresetSource>(preset, seed);
}

std::unique_ptr<RequestSource> list_source(std::vector<Request> requests, std::string name) {
  return std::make_unique<ListSource>(std::move(requests), std::move(name));
}

std::unique_ptr<RequestSource> capped_source(std::unique_ptr<RequestSource> source, uint64_t max_len, uint64_t* dropped) {
  return std::make_unique<CappedSource>(std::move(source), max_len, dropped);
}

std::string BatchFormation::describe() const {
  if (mode == Mode::batch_size)
    return min_batch == max_batch ? fmt::format("batches of {} requests", min_batch)
                                  : fmt::format("batches of {}..{} requests", min_batch, max_batch);
  return fmt::format("a budget of {} new tokens per step, at most {} sequences", token_budget, max_sequences);
}

namespace {

// What the heap takes for an array of `bytes`: glibc's chunks carry 8 bytes of header, are rounded to
// 16 and are at least 32, so a batch of one sequence takes 64 bytes for its 12 (the count of the
// arrays alone was a fifth of it, and a sweep of 1-token steps passed its limit by half again).
uint64_t heap_bytes(uint64_t bytes) { return bytes == 0 ? 0 : std::max<uint64_t>(32, (bytes + 8 + 15) / 16 * 16); }

// The least one formed batch takes: one sequence (one cache length, two offsets).
uint64_t least_batch_bytes(const BatchFormation& f) {
  return sizeof(Batch) + f.bytes_per_batch + heap_bytes(4) + heap_bytes(8);
}

std::string batches_named(const BatchFormation& f, size_t max_batches) {
  return f.batches_given ? fmt::format("--batches {}", max_batches) : std::string("the trace's steps");
}

// Counts what the formed batches hold and refuses to go past the formation's memory limit.
class Footprint {
 public:
  Footprint(const BatchFormation& f, size_t max_batches) : f_(f), max_batches_(max_batches) {
    // Before forming any: that many batches of one sequence each must fit.
    const uint64_t least = least_batch_bytes(f);
    if (f.memory_limit && f.batches_given && max_batches > f.memory_limit / least)
      throw InputError(fmt::format("--batches {}: that many batches take at least {} ({} bytes each with one sequence), "
                                   "above {}; form at most about {}, or raise --memory-limit",
                                   max_batches, io::format_bytes(static_cast<uint64_t>(std::min<long double>(
                                                    static_cast<long double>(max_batches) * least, 1.8e19L))),
                                   least, f.memory_limit_text, f.memory_limit / least));
  }
  // Before `b` joins `batches`.
  void add(const std::vector<Batch>& batches, const Batch& b) {
    if (f_.memory_limit == 0) return;
    arrays_ += f_.bytes_per_batch + heap_bytes(4 * b.cache_lengths.capacity()) + heap_bytes(4 * b.input_row_offsets.capacity());
    // The list: its capacity, and where this push grows it, the old copy beside the new one.
    const uint64_t cap = batches.capacity();
    const uint64_t list = batches.size() < cap ? cap : cap + std::max<uint64_t>(1, 2 * cap);
    const uint64_t total = arrays_ + list * sizeof(Batch);
    if (total > f_.memory_limit && !f_.limit_subject.empty())
      throw InputError(fmt::format("{}: the first {} steps formed already take {}, above {}; {}", f_.limit_subject,
                                   batches.size() + 1, io::format_bytes(total), f_.memory_limit_text, f_.limit_fix));
    if (total > f_.memory_limit)
      throw InputError(fmt::format("{}: the first {} batches formed already take {}, above {}; form fewer "
                                   "batches (about {} fit, --batches {}) or smaller ones, or raise --memory-limit",
                                   batches_named(f_, max_batches_), batches.size() + 1, io::format_bytes(total),
                                   f_.memory_limit_text, batches.size() * 9 / 10, batches.size() * 9 / 10));
  }

 private:
  const BatchFormation& f_;
  size_t max_batches_;
  uint64_t arrays_ = 0;  // every batch's arrays and the caller's bytes per batch
};

}  // namespace

std::vector<Batch> form_batches(RequestSource& source, const BatchFormation& f, const BatchSettings& settings,
                                size_t max_batches, uint64_t seed) {
  std::vector<Batch> batches;
  Footprint footprint(f, max_batches);
  std::mt19937_64 rng(seed);
  if (f.mode == BatchFormation::Mode::batch_size) {
    std::uniform_int_distribution<uint32_t> size(f.min_batch, f.max_batch);
    bool dry = false;
    while (batches.size() < max_batches && !dry) {
      Batch b = empty_batch(settings);
      source.step_begins();
      for (uint32_t n = size(rng); n > 0; --n) {
        const std::optional<Request> r = source.next();
        if (!r) {
          dry = source.exhausted();
          break;
        }
        add_sequence(b, r->cached_tokens, r->new_tokens);
        source.request_done();
      }
      source.step_ends();
      if (b.batch_size() == 0) {
        if (dry) break;
        continue;  // nothing had arrived: the next step
      }
      validated(b, batches.size());
      footprint.add(batches, b);
      batches.push_back(std::move(b));
    }
    return batches;
  }

  // Token budget: requests in arrival order; the one that does not fit prefills what fits and
  // stays at the head of the queue, its prefilled tokens now part of its cached context.
  std::optional<Request> head;
  uint64_t head_cached = 0, head_left = 0;
  while (batches.size() < max_batches) {
    Batch b = empty_batch(settings);
    uint64_t budget = f.token_budget;
    source.step_begins();
    bool dry = false;
    while (budget > 0 && b.batch_size() < f.max_sequences) {
      if (!head) {
        head = source.next();
        if (!head) {
          dry = source.exhausted();
          break;
        }
        head_cached = head->cached_tokens;
        head_left = head->new_tokens;
      }
      const uint64_t take = std::min(head_left, budget);
      add_sequence(b, head_cached, take);
      head_cached += take;
      head_left -= take;
      budget -= take;
      if (head_left == 0) {
        head.reset();
        source.request_done();
      }
    }
    source.step_ends();
    if (b.batch_size() == 0) {
      if (dry) break;
      continue;  // nothing had arrived: the next step
    }
    validated(b, batches.size());
    footprint.add(batches, b);
    batches.push_back(std::move(b));
  }
  return batches;
}

}  // namespace mlaplan::workloads
