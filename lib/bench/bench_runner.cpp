// The bench loop: limits first, then every size, kernel and mode, then the derived columns.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "mlaplan/bench/bench_report.hpp"
#include "mlaplan/bench/cpu_measurements.hpp"
#include "mlaplan/bench/external_measurements.hpp"
#include "mlaplan/bench/gpu_measurements.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/profile/phase_timer.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/reference_planner.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::bench {

namespace {

bool wants(const BenchOptions& o, Kernel k) {
  for (Kernel x : o.kernels)
    if (x == k) return true;
  return false;
}

const BenchRow* find_row(const std::vector<BenchRow>& rows, uint32_t size, Kernel k, Mode m) {
  for (const BenchRow& r : rows)
    if (r.size == size && r.kernel == k && r.mode == m) return &r;
  return nullptr;
}

}  // namespace

void derive_columns(BenchReport& report) {
  for (BenchRow& r : report.rows) {
    const double median = r.measurement.stats.median;
    if (median <= 0) continue;
    r.gbps = r.bytes / median / 1e3;
    if (report.copy && gpu_resident(r.kernel) && report.copy->gbps() > 0) r.pct_copy = 100.0 * r.gbps / report.copy->gbps();
    // A graph launch's floor is an empty graph's replay, not an empty kernel's launch.
    const bool graph = r.kernel == Kernel::graph && (r.mode == Mode::hot ? report.empty_graph_hot : report.empty_graph_cold);
    const auto& empty = graph ? (r.mode == Mode::hot ? report.empty_graph_hot : report.empty_graph_cold)
                              : (r.mode == Mode::hot ? report.empty_hot : report.empty_cold);
    if (empty && empty->stats.median > 0) r.x_empty = median / empty->stats.median;
    if (empty && gpu_resident(r.kernel) && report.write && report.write->gbps() > 0) {
      // Every byte the planner must move: its tables written at the write-only bandwidth, its two input
      // arrays read once at the copy's (whose rate counts a byte read and a byte written alike). At
      // M = 1 the inputs are as many bytes as the tables, so a roofline of the tables alone halves it.
      const double tables = static_cast<double>(table_bytes(r.size, report.options.workload.max_chunks));
      const double read_gbps = report.copy && report.copy->gbps() > 0 ? report.copy->gbps() : report.write->gbps();
      r.roofline_us = empty->stats.median + tables / report.write->gbps() / 1e3 + (r.bytes - tables) / read_gbps / 1e3;
      r.x_roofline = median / *r.roofline_us;
    }
    if (const BenchRow* port = find_row(report.rows, r.size, Kernel::max_port, r.mode))
      r.speedup_vs_max_port = port->measurement.stats.median / median;
    if (const BenchRow* cc = find_row(report.rows, r.size, Kernel::cpu_copy, r.mode)) r.speedup_vs_cpu_copy = cc->measurement.stats.median / median;
  }
}

BenchReport run_bench(const BenchOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  BenchReport report;
  report.options = o;
  profile::PhaseTimer timer;
  auto say = [&o](const std::string& s) {
    if (o.progress) o.progress(s);
  };

  bool any_gpu = false;
  for (Kernel k : o.kernels) any_gpu = any_gpu || on_gpu(k);
  std::unique_ptr<GpuBench> gpu;
  std::string why;
  if (any_gpu) {
    auto scope = timer.phase("open device");
    gpu = open_gpu_bench(&why);
  }
  report.host_device = gpu ? gpu->device() : "none";
  std::unique_ptr<ExternalBench> max;
  if (wants(o, Kernel::max)) {
    auto scope = timer.phase("start max");
    try {
      max = std::make_unique<ExternalBench>(o.max_command);
      report.max_info = max->info();
    } catch (const DeviceError& e) {
      report.unavailable.push_back({Kernel::max, e.what()});
    }
  }
  for (Kernel k : o.kernels) {
    if (!on_gpu(k) || k == Kernel::max) continue;
    if (!gpu) {
      report.unavailable.push_back({k, why});
    } else if (auto reason = gpu->unavailable(k)) {
      report.unavailable.push_back({k, *reason});
    }
  }
  auto runnable = [&](Kernel k) {
    if (!wants(o, k)) return false;
    for (const Unavailable& u : report.unavailable)
      if (u.kernel == k) return false;
    return true;
  };
  // The planners' measurements ahead (the GPU's interleaved ones count once per mode), for the
  // progress line's count and time left: each takes at most the rule's time, usually less.
  size_t total = 0, done = 0;
  {
    bool gpu_planners = false;
    for (Kernel k : o.kernels) {
      if (is_limit(k) || !runnable(k)) continue;
      if (on_gpu(k) && k != Kernel::max)
        gpu_planners = true;
      else
        total += o.modes.size();
    }
    total = (total + (gpu_planners ? o.modes.size() : 0)) * o.sizes.size();
  }
  const auto measuring = [&](const std::string& what) {
    if (!o.progress) return;
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double left = done ? spent / static_cast<double>(done) * static_cast<double>(total - done)
                             : static_cast<double>(total) * o.rule.max_time_s;
    const auto secs = static_cast<long>(left + 0.5);
    o.progress(fmt::format("{} of {}: {}, about {}:{:02d} left", done + 1, total, what, secs / 60, secs % 60));
    ++done;
  };

  if (gpu) {
    auto scope = timer.phase("clock before");
    report.sm_mhz_max = gpu->max_sm_clock_mhz();
    report.sm_mhz_before = gpu->sm_clock_mhz();
  }
  if (runnable(Kernel::empty)) {
    for (Mode m : o.modes) {
      say(fmt::format("empty launch ({})", to_string(m)));
      auto scope = timer.phase(fmt::format("empty {}", to_string(m)));
      (m == Mode::hot ? report.empty_hot : report.empty_cold) = gpu->measure_empty(m, o.rule);
      (m == Mode::hot ? report.empty_graph_hot : report.empty_graph_cold) = gpu->measure_empty_graph(m, o.rule);
    }
  }
  if (runnable(Kernel::copy)) {
    say("device-to-device copy");
    auto scope = timer.phase("copy");
    report.copy = gpu->measure_copy(o.rule);
    report.write = gpu->measure_write(o.rule);
  }

  for (uint32_t size : o.sizes) {
    if (report.interrupted || profile::stop_requested()) {
      report.interrupted = true;
      break;
    }
    auto size_scope = timer.phase(fmt::format("size {}", size));
    std::vector<Batch> sets;
    {
      auto scope = timer.phase("inputs");
      sets = make_input_sets(size, o.workload);
    }
    std::vector<PlanTables> references;
    {
      auto scope = timer.phase("reference");
      for (const Batch& b : sets) references.push_back(plan_reference(b));
    }
    // The GPU planners' samples are interleaved (one measurement per mode for all of them); max
    // and the CPU planners are measured one after another.
    std::vector<Kernel> interleaved;
    for (Kernel k : o.kernels)
      if (!is_limit(k) && runnable(k) && on_gpu(k) && k != Kernel::max) interleaved.push_back(k);
    std::vector<BenchRow> measured;
    auto row_for = [&](Kernel k, Mode m) {
      BenchRow row;
      row.size = size;
      row.kernel = k;
      row.mode = m;
      row.buffer_tokens = sets[0].buffer_token_size;
      row.padded_tokens = plan_shape(sets[0]).padded_tokens;
      row.bytes = plan_bytes(size, o.workload.max_chunks);
      return row;
    };
    for (Mode m : o.modes) {
      if (interleaved.empty() || report.interrupted) break;
      std::string names;
      for (Kernel k : interleaved) names += (names.empty() ? "" : ", ") + std::string(to_string(k));
      measuring(fmt::format("batch {}: {} ({}, interleaved)", size, names, to_string(m)));
      auto scope = timer.phase(fmt::format("gpu {}", to_string(m)));
      const std::vector<Measurement> ms = gpu->measure(interleaved, sets, references, m, o.rule);
      if (profile::stop_requested()) {  // cut short: none of them is finished
        report.interrupted = true;
        break;
      }
      for (size_t i = 0; i < interleaved.size(); ++i) {
        BenchRow row = row_for(interleaved[i], m);
        row.measurement = ms[i];
        measured.push_back(std::move(row));
      }
    }
    for (Kernel k : o.kernels) {
      if (report.interrupted) break;
      if (is_limit(k) || !runnable(k)) continue;
      for (Mode m : o.modes) {
        if (std::find(interleaved.begin(), interleaved.end(), k) != interleaved.end()) {
          for (BenchRow& r : measured)
            if (r.kernel == k && r.mode == m) report.rows.push_back(std::move(r));
          continue;
        }
        measuring(fmt::format("batch {}: {} ({})", size, to_string(k), to_string(m)));
        auto scope = timer.phase(fmt::format("{} {}", to_string(k), to_string(m)));
        BenchRow row = row_for(k, m);
        row.measurement = k == Kernel::max ? max->measure(sets, references, m, o.rule) : measure_cpu(k, sets, references, m, o.rule);
        if (profile::stop_requested()) {  // the measurement was cut short: keep only the finished rows
          report.interrupted = true;
          break;
        }
        report.rows.push_back(std::move(row));
      }
    }
  }

  if (gpu) {
    auto scope = timer.phase("clock after");
    report.sm_mhz_after = gpu->sm_clock_mhz();
  }
  derive_columns(report);
  report.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace mlaplan::bench
