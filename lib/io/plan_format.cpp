#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/profile/json_text.hpp"
#include "mlaplan/io/plan_report.hpp"
#include "mlaplan/io/printable.hpp"
#include "mlaplan/io/text_wrap.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::io {

namespace {

// A name from a file name that is not valid UTF-8 is printed with U+FFFD in place of the bad bytes
// (dump() would throw and turn a valid run into an internal error).
std::string quoted(const std::string& s) { return profile::json_text(nlohmann::json(s)); }

// The text of one large plan (a gigabyte at the memory limit) takes seconds: Ctrl-C is seen inside it.
void poll_stop(size_t row) {
  if ((row & 63) == 0 && profile::stop_requested()) throw Interrupted("interrupted while formatting the tables");
}


// A table as a JSON list of rows, one row per line: readable, and far faster than a DOM for large B.
template <typename T>
void append_rows(fmt::memory_buffer& out, const std::vector<T>& flat, size_t rows, size_t cols) {
  out.push_back('[');
  for (size_t r = 0; r < rows; ++r) {
    poll_stop(r);
    fmt::format_to(std::back_inserter(out), "{}\n    [", r ? "," : "");
    for (size_t c = 0; c < cols; ++c) fmt::format_to(std::back_inserter(out), c ? ", {}" : "{}", flat[r * cols + c]);
    out.push_back(']');
  }
  fmt::format_to(std::back_inserter(out), "{}]", rows ? "\n  " : "");
}

}  // namespace

std::string format_plan_json(const PlanReport& r) {
  const Batch& b = r.scenario->batch;
  const size_t m = b.max_chunks, n = b.batch_size();
  fmt::memory_buffer out;
  auto put = [&](auto&&... args) { fmt::format_to(std::back_inserter(out), std::forward<decltype(args)>(args)...); };
  put("{{\n  \"scenario\": {},\n", quoted(r.scenario->name));
  put("  \"backend\": {},\n  \"planner\": {},\n", quoted(r.backend), quoted(r.planner));
  put("  \"device\": {},\n", r.device ? quoted(*r.device) : "null");
  put("  \"policy\": {},\n", quoted(r.policy));
  if (!r.guide_cost_file.empty()) put("  \"guide_cost_file\": {},\n", quoted(r.guide_cost_file));
  put("  \"batch_size\": {},\n  \"page_size\": {},\n  \"buffer_token_size\": {},\n  \"max_chunks\": {},\n", n, b.page_size,
      b.buffer_token_size, m);
  if (!r.refused.empty()) {  // a refusal in a run comparing policies: no plan to show
    put("  \"refused\": {}\n}}\n", quoted(r.refused));
    return fmt::to_string(out);
  }
  put("  \"chunks_used\": {},\n  \"padded_tokens\": {},\n  \"input_tokens\": {},\n", r.shape.chunks_used,
      r.shape.padded_tokens, r.shape.input_tokens);
  if (r.merges_per_query)
    put("  \"merges_per_query\": {{\"max\": {}, \"p99\": {}}},\n", r.merges_per_query->first, r.merges_per_query->second);
  if (r.memory) {
    const MemoryFigures& f = *r.memory;
    put("  \"buffer_memory\": {{\"model\": {}, \"tp\": {}, \"dtype\": {}, \"bytes_per_row\": {}, \"buffer_bytes\": {}, "
        "\"k_concat_bytes\": {}, \"latent_bytes\": {}}},\n",
        quoted(f.model), f.tp, quoted(f.dtype), f.bytes_per_row, f.buffer_bytes, f.k_concat_bytes, f.latent_bytes);
  }
  if (r.time) {
    const TimeFigures& t = *r.time;
    // Eager timing's fields: the host section, its probe and its runs' date where the file records them.
    std::string host;
    if (t.host_bound_share) {
      host = fmt::format(", \"timing\": \"eager\", \"host_bound_share\": {:.6f}, \"host_holds_for\": {}", *t.host_bound_share,
                         quoted(t.host_holds_for));
      if (t.host_probe_ms > 0)
        host += fmt::format(", \"host_probe\": {}, \"host_probe_ms\": {:.6f}", quoted(t.host_probe), t.host_probe_ms);
      if (!t.host_date.empty()) host += fmt::format(", \"host_date\": {}", quoted(t.host_date));
    }
    put("  \"predicted_time\": {{\"cost_file\": {}, \"holds_for\": {}, \"model\": {}, \"tp\": {}, \"layers\": {}, "
        "\"iterations\": {}, \"layer_ms\": {:.6f}, \"step_ms\": {:.4f}, \"iteration_overhead_share\": {:.6f}, "
        "\"lower_bound_step_ms\": {:.4f}, \"over_lower_bound\": {:.6f}, \"path\": {}, \"path_reason\": {}{}}},\n",
        quoted(t.cost_file), quoted(t.holds_for), quoted(t.model), t.tp, t.layers, t.iterations, t.layer_us / 1e3,
        t.step_ms(t.layer_us), t.iteration_share(), t.step_ms(t.lower_bound_us), t.over_lower_bound(), quoted(t.path),
        quoted(t.path_reason), host);
  }
  const size_t rows = r.tables.max_chunks;  // max_chunks for max; other policies may need more
  put("  \"buffer_row_offsets\": ");
  append_rows(out, r.tables.buffer_row_offsets, rows, n + 1);
  put(",\n  \"cache_offsets\": ");
  append_rows(out, r.tables.cache_offsets, rows, n);
  put(",\n  \"buffer_lengths\": [");
  for (size_t c = 0; c < rows; ++c) put(c ? ", {}" : "{}", r.tables.buffer_lengths[c]);
  const check::Verification& v = r.verification;
  put("],\n  \"verification\": {{\"status\": {}, \"reference\": {}, \"properties\": {}, \"expected\": {}", quoted(v.status),
      quoted(v.reference), quoted(v.properties), quoted(v.expected));
  if (!v.detail.empty()) put(", \"detail\": {}", quoted(v.detail));
  put("}},\n  \"timings_us\": {{");
  for (size_t i = 0; i < r.timings_us.size(); ++i)
    put("{}{}: {:.3f}", i ? ", " : "", quoted(r.timings_us[i].first), r.timings_us[i].second);
  put("}}\n}}\n");
  return fmt::to_string(out);
}

std::string format_plan_csv(const PlanReport& r, bool header) {
  const PlanTables& t = r.tables;
  fmt::memory_buffer out;
  if (header) fmt::format_to(std::back_inserter(out), "chunk,sequence,buffer_row_offset,cache_offset,buffer_length\n");
  for (uint32_t c = 0; c < t.max_chunks; ++c) {
    poll_stop(c);
    for (uint32_t b = 0; b < t.batch_size; ++b)
      fmt::format_to(std::back_inserter(out), "{},{},{},{},{}\n", c, b, t.row_offset(c, b), t.cache_offset(c, b),
                     t.buffer_lengths[c]);
    fmt::format_to(std::back_inserter(out), "{},{},{},,{}\n", c, t.batch_size, t.row_offset(c, t.batch_size),
                   t.buffer_lengths[c]);
  }
  return fmt::to_string(out);
}

std::string format_plan_table(const PlanReport& r, size_t max_sequences) {
  const check::Scenario& s = *r.scenario;
  const Batch& b = s.batch;
  const PlanTables& t = r.tables;
  const uint64_t n = b.buffer_token_size;
  fmt::memory_buffer out;
  auto put = [&](auto&&... args) { fmt::format_to(std::back_inserter(out), std::forward<decltype(args)>(args)...); };

  // Names, descriptions and paths come from the user: escaped, so they cannot drive the terminal.
  put("scenario  {}{}\n", printable(s.name), s.file.empty() ? "" : fmt::format("  ({})", printable(s.file)));
  if (!s.description.empty()) put("          {}\n", printable(s.description));
  put("batch     {} sequences, page {} tokens, buffer {} rows, max {} chunks\n", b.batch_size(), b.page_size, n,
      b.max_chunks);
  put("planner   {} on {}{}{}\n", printable(r.planner), r.backend, r.device ? fmt::format(" ({})", printable(*r.device)) : "",
      r.policy == "max" ? "" : fmt::format(", policy {}: the cached context only", printable(r.policy)));
  if (r.memory) {
    const MemoryFigures& f = *r.memory;
    if (f.fused_loop)  // no K concat or latent to list: said why, on a line of its own within 120 columns
      put("memory    {} TP {} {}: buffer {} rows x {} (K + V) = {}\n          mlaplan's fused loop: it gathers no latent and "
          "builds no K concat\n",
          printable(f.model), f.tp, printable(f.dtype), n, format_bytes(f.bytes_per_row), format_bytes(f.buffer_bytes));
    else
      put("memory    {} TP {} {}: buffer {} rows x {} = {}, K concat {}, latent {}\n", printable(f.model), f.tp, printable(f.dtype),
          n, format_bytes(f.bytes_per_row), format_bytes(f.buffer_bytes), format_bytes(f.k_concat_bytes),
          format_bytes(f.latent_bytes));
  }
  if (r.time && r.refused.empty()) {
    const TimeFigures& t = *r.time;
    put("time      {:.3f} ms/step predicted{} ({:.4f} ms/layer x {} layers, {} TP {}): per-iteration overhead {:.1f}%, "
        "{:.1f}% over a buffer holding the batch whole{}\n          by {}: {}\n",
        t.step_ms(t.layer_us), t.gpu.empty() ? "" : " on " + printable(t.gpu), t.layer_us / 1e3, t.layers, printable(t.model), t.tp, 100.0 * t.iteration_share(),
        100.0 * t.over_lower_bound(),
        t.host_bound_share ? fmt::format(", host-bound {:.1f}% (eager timing: the share of the step the device waits "
                                         "for the host)", 100.0 * *t.host_bound_share)
                           : "",
        shorten_path(printable(t.cost_file)), printable(t.holds_for));  // a path within a 120-column line
    if (t.host_bound_share)
      put("          host costs: {}{}{}\n", printable(t.host_holds_for),
          t.host_probe_ms > 0 ? fmt::format("; stated at a {} probe of {:.3f} ms", t.host_probe == "dispatch" ? "dispatch" : "CPU",
                                            t.host_probe_ms)
                              : "",
          t.host_date.empty() ? "" : fmt::format("; timed {}", printable(t.host_date)));
    put("path      {}: {}{}\n", printable(t.path), printable(t.path_reason),
        t.path == "chunked" ? "" : "; the chunk table below is the policy's plan, which it does not run");
  }
  put("\n");
  if (!r.refused.empty()) {
    put("refused: {}\n", printable(r.refused));
    return fmt::to_string(out);
  }

  // The right-hand range is of the sequence's padded tokens (cache + new + page padding: cache_offsets'
  // unit), not of its cache alone.
  put("chunk    rows    fill  sequences: s<b> [buffer rows) <- [padded tokens)\n");
  size_t shown_chunks = 0;
  for (uint32_t c = 0; c < t.max_chunks; ++c) {
    const int32_t len = t.buffer_lengths[c];
    if (len <= 0) continue;
    ++shown_chunks;
    put("{:>5} {:>7} {:>6.1f}%  ", c, len, 100.0 * len / static_cast<double>(n));
    size_t listed = 0, total = 0;
    for (uint32_t q = 0; q < t.batch_size; ++q) {
      const uint32_t lo = t.row_offset(c, q), hi = t.row_offset(c, q + 1);
      if (hi <= lo) continue;
      ++total;
      if (listed == max_sequences) continue;
      ++listed;
      const uint32_t from = t.cache_offset(c, q);
      put("{}s{} [{}, {}) <- [{}, {})", listed > 1 ? "  " : "", q, lo, hi, from, from + (hi - lo));
    }
    if (total > listed) put("  ... {} more", total - listed);
    put("\n");
  }
  if (shown_chunks == 0) put("    (no chunk is used: {})\n", b.batch_size() ? "every sequence is empty" : "the batch is empty");

  const uint64_t e = r.shape.padded_tokens, used = r.shape.chunks_used;
  const double fill = used ? 100.0 * static_cast<double>(e) / static_cast<double>(used * n) : 0.0;
  if (r.policy == "max") {
    put("\n{} of {} chunks used | {} padded tokens ({} tokens + {} page padding) | buffer fill {:.1f}%\n", used,
        b.max_chunks, e, r.shape.input_tokens, e - r.shape.input_tokens, fill);
  } else {
    put("\n{} chunks used{} | {} context tokens streamed | buffer fill {:.1f}%\n", used,
        used > b.max_chunks ? fmt::format(", more than max_chunks {} (max would refuse)", b.max_chunks) : "", e, fill);
  }
  const check::Verification& v = r.verification;
  put("verification: {} (reference {}, properties {}, expected {})\n", v.status, v.reference, v.properties, v.expected);
  if (!v.detail.empty()) put("  {}\n", printable(v.detail));
  put("timings (us):");
  for (const auto& [name, us] : r.timings_us) put(" {} {:.1f}", name, us);
  put("\n");
  return fmt::to_string(out);
}

}  // namespace mlaplan::io
