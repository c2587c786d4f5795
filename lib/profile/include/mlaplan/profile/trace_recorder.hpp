// A Chrome/Perfetto trace (Trace Event Format, "X" complete events, microseconds) of the phases
// PhaseTimer marks: host ranges nested per thread, and device times measured with CUDA events on
// a track of their own. Open the file in ui.perfetto.dev or chrome://tracing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mlaplan::profile {

class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  struct Event {
    std::string name;
    std::string category;  // "host" or "device"
    int track = 0;         // Chrome "tid": one per host thread, kDeviceTrack for device times
    double start_us = 0;   // since the recorder was made
    double duration_us = 0;
  };
  static constexpr int kDeviceTrack = 1000;
  // Events kept at most: the first ones to start (so the root range and the early phases stay);
  // later ones are counted, not kept, and the trace's otherData says how many ("dropped_events").
  // Bounds the memory (about 100 bytes an event) and the file (about 150 bytes an event, 75 MB) of
  // a long run: `verify --fuzz 1000000 --trace` records 4 million events.
  static constexpr size_t kMaxEvents = 500000;

  TraceRecorder();

  // Host ranges of the calling thread; end() closes the innermost open one.
  void begin(const std::string& name);
  void end();
  // A device interval measured elsewhere (CUDA events): `duration_us` long, starting at `start` on
  // the host clock (when its start event was enqueued). Kept from overlapping the previous one so
  // the device track stays a sequence.
  void add_device(const std::string& name, Clock::time_point start, double duration_us);

  std::vector<Event> events() const;  // completed events kept, in the order they ended
  std::string to_json() const;        // {"traceEvents": [...], "displayTimeUnit": "ns"}
  size_t dropped_events() const;      // events past kMaxEvents, counted but not kept

  // The recorder PhaseTimer feeds, if any (one per process, like an NVTX tool).
  static TraceRecorder* active();

 private:
  friend class ActiveTrace;
  double since_origin(Clock::time_point t) const;
  int track_of_this_thread();  // caller holds mutex_

  Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
  struct Open {
    Event event;
    bool keep;  // decided when it starts: within kMaxEvents
  };
  std::map<std::thread::id, std::vector<Open>> open_;  // open host ranges per thread
  size_t admitted_ = 0;  // events started within the cap (kept once they end)
  size_t dropped_ = 0;
  std::map<std::thread::id, int> tracks_;
  double device_end_us_ = 0;
};

// Makes `recorder` the active one for this object's lifetime.
class ActiveTrace {
 public:
  explicit ActiveTrace(TraceRecorder& recorder);
  ~ActiveTrace();
  ActiveTrace(const ActiveTrace&) = delete;
  ActiveTrace& operator=(const ActiveTrace&) = delete;

 private:
  TraceRecorder* previous_;
};

}  // namespace mlaplan::profile
