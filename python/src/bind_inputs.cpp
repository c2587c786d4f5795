// For the prefill executor and the calibration: the model presets and config.json reader, scenario
// files and sizes, with the CLI's own checks and messages (an InputError is a ValueError naming the
// file and field).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "mlaplan/models/model.hpp"
#include "mlaplan/sweeps/recommend.hpp"
#include "mlaplan/workloads/batch_formation.hpp"
#include "mlaplan/workloads/workload.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/io/input_file.hpp"
#include "mlaplan/io/printable.hpp"
#include "mlaplan/io/scenario_io.hpp"

namespace mlaplan::python {

using namespace nb::literals;

void bind_inputs(nb::module_& m) {
  m.def(
      "model_dims",
      [](const std::string& name, const std::string& config) {
        const models::ModelDims d = config.empty() ? models::find_model_preset(name) : models::read_model_config(config);
        nb::dict r;
        r["name"] = d.name;
        r["title"] = d.title();
        r["num_heads"] = d.num_heads;
        r["qk_nope_head_dim"] = d.qk_nope_head_dim;
        r["qk_rope_head_dim"] = d.qk_rope_head_dim;
        r["v_head_dim"] = d.v_head_dim;
        r["kv_lora_rank"] = d.kv_lora_rank;
        r["num_layers"] = d.num_layers;
        return r;
      },
      "name"_a, "config"_a = "", "A model preset by name, or the MLA dimensions of a config.json (config non-empty).");
  m.def("model_names", [] {
    std::vector<std::string> names;
    for (const auto& p : models::model_presets()) names.push_back(p.name);
    return names;
  });
  m.def(
      "read_scenarios",
      [](const std::string& path) {
        std::vector<check::Scenario> scenarios = interruptible([&] { return io::load_scenario_file(path); });
        nb::list out;
        for (const check::Scenario& s : scenarios) {
          nb::dict d;
          // Bytes that are not UTF-8 (a file name without "name") come through as U+FFFD, not an error.
          d["name"] = nb::steal(PyUnicode_DecodeUTF8(s.name.data(), static_cast<Py_ssize_t>(s.name.size()), "replace"));
          d["page_size"] = s.batch.page_size;
          d["buffer_token_size"] = s.batch.buffer_token_size;
          d["max_chunks"] = s.batch.max_chunks;
          d["cache_lengths"] = s.batch.cache_lengths;
          d["input_row_offsets"] = s.batch.input_row_offsets;
          out.append(d);
        }
        return out;
      },
      "path"_a, "The batches of a scenario file (one, or a {\"scenarios\": [...]} list), checked as `mlaplan run` checks them.");
  m.def("workload_names", [] {
    std::vector<std::string> names;
    for (const auto& p : workloads::workload_presets()) names.push_back(p.name);
    return names;
  });
  m.def(
      "workload_batches",
      [](const std::string& workload, size_t batches, uint64_t seed, uint32_t page_size, uint32_t token_budget,
         uint32_t max_sequences) {
        // As `mlaplan gen --workload W --seed S --page-size P --batches K` forms them (its defaults for the
        // rest), so the calibration's built-in batches are the scenario files an expert would generate.
        const std::vector<Batch> formed = interruptible([&] {
          workloads::BatchFormation formation;
          formation.token_budget = token_budget;
          formation.max_sequences = max_sequences;
          formation.memory_limit = uint64_t{2} << 30;
          formation.memory_limit_text = "2.00 GiB";
          workloads::BatchSettings settings;
          settings.page_size = page_size;
          auto source = workloads::preset_source(workloads::find_workload_preset(workload), seed);
          return workloads::form_batches(*source, formation, settings, batches, seed);
        });
        nb::list out;
        for (const Batch& b : formed) {
          nb::dict d;
          d["page_size"] = b.page_size;
          d["cache_lengths"] = b.cache_lengths;
          d["input_row_offsets"] = b.input_row_offsets;
          out.append(d);
        }
        return out;
      },
      "workload"_a, "batches"_a, "seed"_a, "page_size"_a = 64, "token_budget"_a = 8192, "max_sequences"_a = 256,
      "A workload preset's first `batches` scheduler steps, formed as `mlaplan gen` forms them: dicts of page_size, "
      "cache_lengths and input_row_offsets (read_scenarios' keys).");
  m.def(
      "parse_byte_size", [](const std::string& text, const std::string& name) { return sweeps::parse_byte_size(text, name); },
      "text"_a, "name"_a, "A size as --memory-limit takes it (512MiB, 4GiB, 2GB), in bytes; ValueError naming `name`.");
  m.def("format_bytes", [](uint64_t bytes) { return io::format_bytes(bytes); }, "bytes"_a, "2.00 GiB, as the CLI writes sizes.");
  m.def("printable", [](const std::string& text) { return io::printable(text); }, "text"_a,
        "The text as the CLI shows user text in messages and tables: control characters (C0, C1), NUL and bytes "
        "outside UTF-8 as \\n, \\r, \\xNN.");
  m.attr("MAX_INPUT_BYTES") = io::kMaxInputBytes;
}

}  // namespace mlaplan::python
