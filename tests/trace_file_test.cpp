// --trace FILE.json on run and bench: valid Trace Event Format JSON, "X" events in microseconds,
// ranges properly nested per track, and the phases named as the NVTX ranges are.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/profile/trace_recorder.hpp"

using nlohmann::json;
using mlaplan::test::run_cli;
namespace fs = std::filesystem;

namespace {

struct Event {
  std::string name;
  int tid;
  double ts, dur;
};

std::vector<Event> complete_events(const json& doc) {
  std::vector<Event> events;
  for (const json& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M") continue;  // thread and process names
    EXPECT_EQ(e.at("ph"), "X") << e.dump();
    events.push_back({e.at("name").get<std::string>(), e.at("tid").get<int>(), e.at("ts").get<double>(), e.at("dur").get<double>()});
    EXPECT_GE(events.back().dur, 0) << e.dump();
  }
  return events;
}

// Every pair of events on one track is disjoint or one contains the other.
void expect_nested(const std::vector<Event>& events) {
  constexpr double eps = 1e-6;  // us; ends are rounded to whole nanoseconds
  for (size_t i = 0; i < events.size(); ++i)
    for (size_t j = i + 1; j < events.size(); ++j) {
      const Event &a = events[i], &b = events[j];
      if (a.tid != b.tid) continue;
      const double a_end = a.ts + a.dur, b_end = b.ts + b.dur;
      const bool disjoint = a_end <= b.ts + eps || b_end <= a.ts + eps;
      const bool a_in_b = a.ts >= b.ts - eps && a_end <= b_end + eps;
      const bool b_in_a = b.ts >= a.ts - eps && b_end <= a_end + eps;
      EXPECT_TRUE(disjoint || a_in_b || b_in_a) << a.name << " [" << a.ts << ", " << a_end << ") overlaps " << b.name << " ["
                                                << b.ts << ", " << b_end << ")";
    }
}

const Event* find(const std::vector<Event>& events, const std::string& name) {
  for (const Event& e : events)
    if (e.name == name) return &e;
  return nullptr;
}

// The trace of one command, and how long the whole command took by the test's own clock, in us.
struct Traced {
  json doc;
  double wall_us;
};

Traced traced(const std::string& args) {
  const fs::path path = fs::temp_directory_path() / ("mlaplan_trace_" + std::to_string(::getpid()) + ".json");
  fs::remove(path);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_cli(args + " --trace " + path.string());
  const double wall_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 0) << r.err;
  Traced t{json::parse(mlaplan::test::slurp(path)), wall_us};  // throws on invalid JSON
  fs::remove(path);
  return t;
}

}  // namespace

TEST(TraceFile, RunPhasesNestInsideTheRootInMicroseconds) {
  const Traced t = traced("run " MLAPLAN_SOURCE_DIR "/scenarios/worked-example.json --backend cpu -o /dev/null");
  const auto events = complete_events(t.doc);
  expect_nested(events);
  const Event* root = find(events, "mlaplan run");
  ASSERT_NE(root, nullptr);
  for (const char* phase : {"load", "plan", "check", "format", "write"}) {
    const Event* e = find(events, phase);
    ASSERT_NE(e, nullptr) << phase;
    EXPECT_GE(e->ts, root->ts);
    EXPECT_LE(e->ts + e->dur, root->ts + root->dur + 1e-6);
  }
  // Microseconds: the run lasts more than one (it reads, plans and checks a file) and no longer than the
  // command did by the test's clock, which nanoseconds would pass by 1000x.
  EXPECT_GT(root->dur, 1.0);
  EXPECT_LE(root->dur, t.wall_us);
}

TEST(TraceFile, BenchTraceNestsSizesAndKernels) {
  const Traced t = traced("bench --sizes 4,64 --kernels cpu-fast --mode both --max-time 0.01 --min-samples 3 -o /dev/null");
  const auto events = complete_events(t.doc);
  expect_nested(events);
  const Event* root = find(events, "mlaplan bench");
  const Event* size = find(events, "size 64");
  const Event* cold = find(events, "cpu-fast cold");
  const Event* hot = find(events, "cpu-fast hot");
  ASSERT_TRUE(root && size && cold && hot);
  EXPECT_TRUE(size->ts >= root->ts && size->ts + size->dur <= root->ts + root->dur + 1e-6);
  // Microseconds: the bench's root range lies within the command's wall time as the test clocked it,
  // and is most of it (four measurements, the cold ones flushing the last-level cache, against one
  // process start). Milliseconds or nanoseconds would be off by 1000. A measurement's own length is
  // no test of the unit: it stops early once its samples agree (sample_stats.cpp), so it may last
  // from a few plans to --max-time.
  EXPECT_LE(root->dur, t.wall_us);
  EXPECT_GE(root->dur, t.wall_us / 20) << "wall " << t.wall_us << " us";
  const Event* measure = nullptr;
  for (const Event& e : events)
    if (e.name == "measure" && e.ts >= hot->ts && e.ts <= hot->ts + hot->dur) measure = &e;
  ASSERT_NE(measure, nullptr);
  EXPECT_GT(measure->dur, 0);
}

TEST(TraceFile, DeviceTimesGoOnTheirOwnTrackWithoutOverlap) {
  mlaplan::profile::TraceRecorder recorder;
  {
    mlaplan::profile::ActiveTrace active(recorder);
    mlaplan::profile::PhaseTimer timer;
    auto scope = timer.phase("outer");
    timer.add("kernel", 50.0);
    timer.add("kernel", 50.0);  // measured back to back: placed one after the other
  }
  const auto events = complete_events(json::parse(recorder.to_json()));
  expect_nested(events);
  int device = 0;
  for (const Event& e : events) device += e.tid == mlaplan::profile::TraceRecorder::kDeviceTrack;
  EXPECT_EQ(device, 2);
}

// The trace is written event by event; it must be byte for byte what json::dump(1) gives for the
// same document (the format of every trace written so far).
TEST(TraceFile, StreamedJsonIsWhatDumpWrites) {
  mlaplan::profile::TraceRecorder recorder;
  {
    mlaplan::profile::ActiveTrace active(recorder);
    mlaplan::profile::PhaseTimer timer;
    auto scope = timer.phase("outer \"quoted\" \\ name\n");
    { auto inner = timer.phase("inner"); }
    timer.add("kernel", 12.345678);
    std::thread([&] { mlaplan::profile::PhaseTimer t; auto s = t.phase("other thread"); }).join();
  }
  const std::string text = recorder.to_json();
  EXPECT_EQ(json::parse(text).dump(1) + "\n", text);
  EXPECT_FALSE(json::parse(text).at("otherData").contains("dropped_events"));
}

// Past kMaxEvents, events are counted, not kept: the first to start stay (the root among them), and
// the metadata says how many were dropped.
TEST(TraceFile, EventsPastTheCapAreCountedNotKept) {
  using mlaplan::profile::TraceRecorder;
  TraceRecorder recorder;
  const size_t extra = 1234;
  recorder.begin("root");
  for (size_t i = 0; i < TraceRecorder::kMaxEvents + extra; ++i) {
    recorder.begin("case");
    recorder.end();
  }
  recorder.add_device("kernel", TraceRecorder::Clock::now(), 1.0);
  recorder.end();
  EXPECT_EQ(recorder.events().size(), TraceRecorder::kMaxEvents);
  EXPECT_EQ(recorder.dropped_events(), extra + 2);  // the cases past the cap and the device event
  const std::vector<TraceRecorder::Event> kept = recorder.events();
  EXPECT_EQ(kept.back().name, "root");  // it started first, so it stays although it ended last
  // The metadata, read from the text: parsing 75 MB of JSON would be most of the test's time.
  const std::string text = recorder.to_json();
  const std::string head = text.substr(0, 200);
  EXPECT_NE(head.find("\"dropped_events\": " + std::to_string(extra + 2)), std::string::npos) << head;
  EXPECT_NE(head.find("\"max_events\": " + std::to_string(TraceRecorder::kMaxEvents)), std::string::npos) << head;
  EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '{')), TraceRecorder::kMaxEvents + 6)
      << "the kept events; the document and otherData; the process and the thread name, each with its args";
}
