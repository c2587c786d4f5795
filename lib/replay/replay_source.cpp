#include "mlaplan/replay/replay_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mlaplan/errors.hpp"

namespace mlaplan::replay {

namespace {

template <typename T>
T quantile(std::vector<T> v, double p) {
  if (v.empty()) return T{};
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - (p > 0));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

std::string ReplayStats::describe() const {
  std::string s = fmt::format("{} request{}: {:.1f}% of input tokens cached", requests, requests == 1 ? "" : "s",
                              100.0 * hit_rate());
  if (requests)
    s += fmt::format(" (per request: cached p50 {}, p90 {}, p99 {} tokens; hit p50 {:.1f}%, p90 {:.1f}%, p99 {:.1f}%)",
                     quantile(per_request_cached, 0.5), quantile(per_request_cached, 0.9),
                     quantile(per_request_cached, 0.99), 100.0 * quantile(per_request_hit, 0.5),
                     100.0 * quantile(per_request_hit, 0.9), 100.0 * quantile(per_request_hit, 0.99));
  if (dropped) s += fmt::format("; {} over max_model_len dropped", dropped);
  if (evictions) s += fmt::format("; {} blocks evicted", evictions);
  return s;
}

ReplaySource::ReplaySource(std::unique_ptr<TraceReader> reader, const ReplayOptions& options)
    : reader_(std::move(reader)), options_(options),
      cache_(options.cache_tokens ? std::max<uint64_t>(1, options.cache_tokens / options.block_size) : 0) {
  if (options.step_ms < 0 || !std::isfinite(options.step_ms))
    throw InputError(fmt::format("--step-ms {}: give a step's duration in ms, above 0", options.step_ms));
}

bool ReplaySource::fetch() {
  while (!lookahead_ && !done_) {
    std::optional<TraceRequest> r = reader_->next();
    if (!r) {
      done_ = true;
      break;
    }
    if (options_.max_model_len && r->input_tokens > options_.max_model_len) {
      ++stats_.dropped;
      continue;
    }
    lookahead_ = std::move(r);
  }
  return lookahead_.has_value();
}

void ReplaySource::step_begins() {
  if (options_.step_ms > 0 && !started_ && fetch()) step_start_ = lookahead_->arrival_ms;  // the first step starts at the first arrival
  started_ = true;
}

std::optional<workloads::Request> ReplaySource::next() {
  if (!fetch()) return std::nullopt;
  if (options_.step_ms > 0 && lookahead_->arrival_ms > step_start_) return std::nullopt;  // not arrived yet
  TraceRequest r = std::move(*lookahead_);
  lookahead_.reset();
  const uint64_t hit = std::min<uint64_t>(uint64_t{cache_.match(r.blocks)} * options_.block_size, r.input_tokens - 1);
  stats_.requests++;
  stats_.input_tokens += r.input_tokens;
  stats_.cached_tokens += hit;
  stats_.per_request_cached.push_back(static_cast<uint32_t>(hit));
  stats_.per_request_hit.push_back(static_cast<float>(static_cast<double>(hit) / r.input_tokens));
  admitted_.push_back(std::move(r.blocks));
  return workloads::Request{static_cast<uint32_t>(hit), static_cast<uint32_t>(r.input_tokens - hit)};
}

void ReplaySource::request_done() {
  if (admitted_.empty()) return;
  finished_.push_back(std::move(admitted_.front()));
  admitted_.pop_front();
}

void ReplaySource::step_ends() {
  for (const std::vector<uint64_t>& blocks : finished_) cache_.insert(blocks);
  finished_.clear();
  stats_.evictions = cache_.evictions();
  if (options_.step_ms > 0) {
    step_start_ += options_.step_ms;
    // Nothing waiting and the next request later: the steps in between are idle, skip to its step.
    if (admitted_.empty() && fetch() && lookahead_->arrival_ms > step_start_)
      step_start_ += std::ceil((lookahead_->arrival_ms - step_start_) / options_.step_ms) * options_.step_ms;
  }
}

std::string ReplaySource::describe() const {
  std::string s = fmt::format("{} ({} trace, {} requests read", reader_->path(), to_string(reader_->format()),
                              reader_->requests());
  s += options_.cache_tokens ? fmt::format(", prefix cache of {} tokens", options_.cache_tokens)
                             : std::string(", unlimited prefix cache");
  if (options_.step_ms > 0) s += fmt::format(", arrivals in steps of {} ms", options_.step_ms);
  return s + ")";
}

}  // namespace mlaplan::replay
