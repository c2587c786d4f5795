#include "mlaplan/profile/trace_recorder.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <nlohmann/json.hpp>

#include "mlaplan/profile/json_text.hpp"

namespace mlaplan::profile {

namespace {
std::atomic<TraceRecorder*> g_active{nullptr};
}

TraceRecorder::TraceRecorder() : origin_(Clock::now()) {}

double TraceRecorder::since_origin(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

int TraceRecorder::track_of_this_thread() {
  const auto id = std::this_thread::get_id();
  auto it = tracks_.find(id);
  if (it == tracks_.end()) it = tracks_.emplace(id, static_cast<int>(tracks_.size()) + 1).first;
  return it->second;
}

void TraceRecorder::begin(const std::string& name) {
  const double now = since_origin(Clock::now());
  std::lock_guard<std::mutex> lock(mutex_);
  Event e;
  e.name = name;
  e.category = "host";
  e.track = track_of_this_thread();
  e.start_us = now;
  const bool keep = admitted_ < kMaxEvents;
  admitted_ += keep;
  open_[std::this_thread::get_id()].push_back({std::move(e), keep});
}

void TraceRecorder::end() {
  const double now = since_origin(Clock::now());
  std::lock_guard<std::mutex> lock(mutex_);
  auto& stack = open_[std::this_thread::get_id()];
  if (stack.empty()) return;  // an end without a begin (the recorder was installed mid-scope)
  Open open = std::move(stack.back());
  stack.pop_back();
  if (!open.keep) {
    ++dropped_;
    return;
  }
  open.event.duration_us = now - open.event.start_us;
  events_.push_back(std::move(open.event));
}

void TraceRecorder::add_device(const std::string& name, Clock::time_point start, double duration_us) {
  std::lock_guard<std::mutex> lock(mutex_);
  Event e;
  e.name = name;
  e.category = "device";
  e.track = kDeviceTrack;
  e.start_us = std::max(since_origin(start), device_end_us_);
  e.duration_us = std::max(0.0, duration_us);
  device_end_us_ = e.start_us + e.duration_us;
  if (admitted_ >= kMaxEvents) {
    ++dropped_;
    return;
  }
  ++admitted_;
  events_.push_back(std::move(e));
}

std::vector<TraceRecorder::Event> TraceRecorder::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

size_t TraceRecorder::dropped_events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

std::string TraceRecorder::to_json() const {
  using nlohmann::json;
  std::lock_guard<std::mutex> lock(mutex_);
  // Written event by event, the way json::dump(1) writes the whole document (keys sorted, one space
  // per level), without building it: a document of half a million events took gigabytes.
  std::string out;
  out.reserve(160 * (events_.size() + tracks_.size() + 4));
  bool first = true;
  auto item = [&out, &first](const json& e) {
    out += first ? "\n  " : ",\n  ";
    first = false;
    for (char c : json_text(e, 1)) {  // one level deeper: strings are escaped, so every newline is layout
      out += c;
      if (c == '\n') out += "  ";
    }
  };
  json other = {{"producer", "mlaplan"}, {"time_unit", "us"}};
  if (dropped_) {
    other["dropped_events"] = dropped_;
    other["max_events"] = kMaxEvents;
  }
  out += "{\n \"displayTimeUnit\": \"ns\",\n \"otherData\": ";
  for (char c : json_text(other, 1)) {
    out += c;
    if (c == '\n') out += ' ';
  }
  out += ",\n \"traceEvents\": [";
  // Track names, so the timeline reads without the source.
  item({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "mlaplan"}}}});
  for (const auto& [id, track] : tracks_) {
    const std::string name = track == 1 ? "host" : "host thread " + std::to_string(track);
    item({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", track}, {"args", {{"name", name}}}});
  }
  const bool any_device = std::any_of(events_.begin(), events_.end(), [](const Event& e) { return e.track == kDeviceTrack; });
  if (any_device)
    item({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", kDeviceTrack}, {"args", {{"name", "GPU (CUDA event times)"}}}});
  // Sorted by start, outer ranges first, so viewers and readers see parents before children.
  std::vector<const Event*> sorted;
  sorted.reserve(events_.size());
  for (const Event& e : events_) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Event* a, const Event* b) {
    return a->start_us != b->start_us ? a->start_us < b->start_us : a->duration_us > b->duration_us;
  });
  // Whole nanoseconds; rounding both ends (not the duration) keeps children inside their parents.
  auto ns = [](double us) { return std::round(us * 1000.0) / 1000.0; };
  for (const Event* e : sorted) {
    const double ts = ns(e->start_us);
    item({{"name", e->name}, {"cat", e->category}, {"ph", "X"}, {"pid", 1}, {"tid", e->track},
          {"ts", ts}, {"dur", ns(e->start_us + e->duration_us) - ts}});
  }
  out += "\n ]\n}\n";
  return out;
}

TraceRecorder* TraceRecorder::active() { return g_active.load(std::memory_order_acquire); }

ActiveTrace::ActiveTrace(TraceRecorder& recorder) : previous_(g_active.exchange(&recorder)) {}
ActiveTrace::~ActiveTrace() { g_active.store(previous_); }

}  // namespace mlaplan::profile
