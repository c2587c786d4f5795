// `mlaplan gen`: scenario files from a workload, batches formed like a scheduler's prefill steps.
#include <fmt/format.h>

#include "cli_common.hpp"
#include "commands.hpp"
#include "explore_options.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/io/input_file.hpp"
#include "mlaplan/io/memory_limit.hpp"
#include "mlaplan/plan_shape.hpp"
#include "mlaplan/io/scenario_io.hpp"
#include "mlaplan/profile/stop_request.hpp"

namespace mlaplan::cli {

namespace {

constexpr size_t kMaxGenBatches = 1000000;

struct GenOptions {
  WorkloadOptions workload;
  size_t batches = 1;
  bool batches_given = false;  // without it, --replay writes every step of the trace (a finite source)
  workloads::BatchSettings settings;
  std::string name;
  std::string output;
  MemoryLimit memory_limit;
};

// Before forming anything: even the smallest batches must make a file run can read. After forming,
// require_tables_fit_all: every batch one that run and verify plan within the memory limit.
void require_gen_fits(const GenOptions& opt, const workloads::BatchFormation& formation) {
  const bool by_size = formation.mode == workloads::BatchFormation::Mode::batch_size;
  // A scenario in a list takes at least ~100 bytes of keys and at least 4 bytes a sequence ("0, " twice, less the commas).
  const uint64_t least = static_cast<uint64_t>(opt.batches) * (100 + 4 * uint64_t{by_size ? formation.min_batch : 1});
  if (opt.batches > 1 && least > io::kMaxInputBytes)
    throw InputError(fmt::format("--batches {}: the file would take at least {}, more than the {} run and verify read; "
                                 "write at most {} batches per file",
                                 opt.batches, io::format_bytes(least), io::format_bytes(io::kMaxInputBytes),
                                 io::kMaxInputBytes / (least / opt.batches)));
}

// The bytes of a list of numbers as scenario_to_json writes it ("[58,0,730]"), without writing it.
uint64_t list_bytes(const std::vector<uint32_t>& values) {
  uint64_t bytes = 2 + (values.empty() ? 0 : values.size() - 1);
  for (uint32_t v : values) {
    for (bytes += 1; v >= 10; v /= 10) ++bytes;
  }
  return bytes;
}

// What a message about a file past the reader's limit calls the batches: --batches K only where the
// user gave it (a whole trace's steps otherwise).
std::string batches_subject(const GenOptions& opt, size_t formed) {
  if (opt.batches_given) return fmt::format("--batches {}", opt.batches);
  return fmt::format("--replay {}: its {}{} steps", opt.workload.replay, formed == kMaxGenBatches ? "first " : "", formed);
}

// How to write fewer batches per file: another --seed only where one draws them (a preset workload;
// a trace refuses --seed), else the input split.
std::string fewer_batches(const GenOptions& opt, size_t fit) {
  if (!opt.workload.workload.empty())
    return fmt::format("write at most about {} batches per file (run gen several times with other --seed values)", fit);
  if (!opt.workload.replay.empty())
    return fmt::format("write at most about {} steps per file (--batches {}), or split the trace into shorter files", fit,
                       fit);
  return fmt::format("write at most about {} batches per file (--batches {}), or split the lengths file", fit, fit);
}

// After forming: the file's size from the batches' numbers and the first scenario's keys, name and
// settings (later names are no shorter), so a file run would refuse is refused before any text is built.
void require_file_fits(const GenOptions& opt, const std::vector<Batch>& batches, const check::Scenario& first) {
  const uint64_t keys = io::scenario_to_json(first).size() - list_bytes(first.batch.cache_lengths) -
                        list_bytes(first.batch.input_row_offsets) - 1;  // the newline the list drops
  uint64_t least = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    least += keys + list_bytes(batches[i].cache_lengths) + list_bytes(batches[i].input_row_offsets);
    if (least > io::kMaxInputBytes)
      throw InputError(fmt::format("{}: the file would pass {} by scenario {}, more than run and verify read; {}",
                                   batches_subject(opt, batches.size()), io::format_bytes(io::kMaxInputBytes), i,
                                   fewer_batches(opt, std::max<size_t>(1, i * 9 / 10))));
  }
}

void require_tables_fit_all(const GenOptions& opt, const std::vector<Batch>& batches) {
  size_t largest = 0;
  for (size_t i = 1; i < batches.size(); ++i)
    if (batches[i].batch_size() > batches[largest].batch_size()) largest = i;
  const uint64_t b = batches[largest].batch_size(), bytes = table_bytes(batches[largest]);
  if (bytes <= opt.memory_limit.bytes) return;
  throw InputError(fmt::format("--max-chunks {}: batch {} holds {} sequences, and its tables in {} chunks take {}, above {}, "
                               "so run would refuse it; lower --max-chunks to at most {}, form smaller batches or raise "
                               "--memory-limit",
                               opt.settings.max_chunks, largest, b, opt.settings.max_chunks, io::format_bytes(bytes),
                               io::describe_memory_limit(opt.memory_limit.bytes, opt.memory_limit.given),
                               opt.memory_limit.bytes / table_bytes(b, 1)));
}

int gen(GenOptions opt) {
  // A replayed trace is finite: by default gen writes all of its steps (as a list).
  const bool whole_trace = !opt.workload.replay.empty() && !opt.batches_given;
  if (whole_trace) opt.batches = kMaxGenBatches;
  outputs().claim_input(opt.workload.lengths, "the --lengths file");  // before any work
  outputs().claim_input(opt.workload.replay, "the --replay trace");
  outputs().claim_output(opt.output, "-o");
  InterruptScope interrupt_scope;  // Ctrl-C: forming batches and building the text stop; nothing written (exit 130)
  std::unique_ptr<workloads::RequestSource> source = make_source(opt.workload);
  workloads::BatchFormation formation = make_formation(opt.workload);
  if (!whole_trace) require_gen_fits(opt, formation);  // a bound for --batches K; the whole trace is checked as formed
  formation.memory_limit = opt.memory_limit.bytes;  // the formed batches themselves, counted as they come
  formation.batches_given = !whole_trace;
  formation.memory_limit_text = io::describe_memory_limit(opt.memory_limit.bytes, opt.memory_limit.given);
  std::vector<Batch> batches;
  {
    profile::PhaseTimer timer;
    auto scope = timer.phase("form batches");
    batches = workloads::form_batches(*source, formation, opt.settings, opt.batches, opt.workload.seed);
  }
  if (batches.empty())
    throw InputError(opt.workload.replay.empty()
                         ? fmt::format("--lengths {}: no requests, so no batch to write", opt.workload.lengths)
                         : fmt::format("--replay {}: no request within --max-model-len, so no batch to write",
                                       opt.workload.replay));
  require_tables_fit_all(opt, batches);

  const std::string base = !opt.name.empty() ? opt.name : !opt.workload.workload.empty() ? opt.workload.workload : "trace";
  const std::string replayed = replay_summary(*source);
  const std::string description = fmt::format("{}; {}; mlaplan gen", source->describe(), formation.describe());
  // The shape --batches asks for, even when a trace runs out first: a script asking for a list gets one.
  const bool list = opt.batches > 1;
  {
    check::Scenario first;
    first.name = list ? fmt::format("{}-0", base) : base;
    first.description = description;
    first.batch = batches[0];
    require_file_fits(opt, batches, first);
  }
  std::string text = list ? "{\"scenarios\": [\n" : "";
  size_t refused = 0, sequences = 0;
  const std::string where = opt.output.empty() || opt.output == "-" ? std::string("the output") : opt.output;
  for (size_t i = 0; i < batches.size(); ++i) {
    if ((i & 1023) == 0 && profile::stop_requested())
      throw Interrupted(fmt::format("gen: interrupted while writing scenario {} of {}", i, batches.size()));
    check::Scenario s;
    s.name = list ? fmt::format("{}-{}", base, i) : base;
    s.description = description;
    s.batch = batches[i];
    refused += !plan_shape(s.batch).feasible;
    sequences += s.batch.batch_size();
    std::string one = io::scenario_to_json(s);
    if (list) one.pop_back();  // its newline: the list puts ",\n" between scenarios
    text += (i ? ",\n" : "") + one;
    // run reads at most kMaxInputBytes: a larger file would be refused, so stop as soon as it passes that.
    if (text.size() > io::kMaxInputBytes)
      throw InputError(fmt::format("{}: {} would pass {} at scenario {}, more than run and verify read; {}",
                                   batches_subject(opt, batches.size()), where, io::format_bytes(io::kMaxInputBytes), i,
                                   fewer_batches(opt, std::max<size_t>(1, i * (io::kMaxInputBytes / 1024) /
                                                                              (text.size() / 1024) * 9 / 10))));
  }
  text += list ? "\n]}\n" : "";
  if (text.size() > io::kMaxInputBytes)
    throw InputError(fmt::format("{}: {} would be {}, more than the {} run and verify read; write fewer batches",
                                 batches_subject(opt, batches.size()), where, io::format_bytes(text.size()),
                                 io::format_bytes(io::kMaxInputBytes)));
  write_output(opt.output, text);
  // "1 batch of 47 sequences", "3 batches of 37.0 sequences on average".
  const std::string size = batches.size() == 1 ? fmt::format("1 batch of {} sequence{}", sequences, sequences == 1 ? "" : "s")
                                               : fmt::format("{} batches of {:.1f} sequences on average", batches.size(),
                                                             static_cast<double>(sequences) / static_cast<double>(batches.size()));
  note(fmt::format("{}{} from {}{}",
                   batches.size() < opt.batches && !whole_trace
                       ? fmt::format("--batches {}: the trace ran out after ", opt.batches)
                       : "",
                   size, source->describe(),
                   refused ? fmt::format("; {} need more than max_chunks {} under max (run refuses them; "
                                         "try --buffer-tokens or --max-chunks, or mlaplan sweep)",
                                         refused, opt.settings.max_chunks)
                           : ""));
  if (!replayed.empty()) note("replay: " + replayed);
  return kOk;
}

}  // namespace

void add_gen_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<GenOptions>();
  CLI::App* cmd = app.add_subcommand("gen", "Write scenario files from a workload (a preset or your trace), batches formed like a scheduler's steps");
  add_workload_options(*cmd, opt->workload);
  cmd->footer(help_footer(
      "  mlaplan gen --workload coding-agent --batches 20 -o coding-agent.json\n"
      "  mlaplan gen --workload short-chat --batches 100 --token-budget 16384 --page-size 64 -o short-chat.json\n"
      "  mlaplan gen --replay conversation_trace.jsonl --batches 100 -o mooncake.json   (Mooncake's published trace)"));
  cmd->add_option_function<size_t>(
         "--batches",
         [opt](const size_t& v) {
           opt->batches = v;
           opt->batches_given = true;
         },
         "Batches to write: one scenario, or a {\"scenarios\": [...]} list; with --replay, default every step of the trace")
      ->default_str("1")
      ->transform(whole_number(1, kMaxGenBatches));
  cmd->add_option("--page-size", opt->settings.page_size, "page_size of every scenario")
      ->default_str("128")
      ->transform(whole_number(1, 1u << 30));
  cmd->add_option("--buffer-tokens", opt->settings.buffer_token_size, "buffer_token_size of every scenario")
      ->default_str("16384")
      ->transform(whole_number(1, 0x7fffffffu));
  cmd->add_option("--max-chunks", opt->settings.max_chunks, "max_chunks of every scenario")
      ->default_str("16")
      ->transform(whole_number(1, 1u << 20));
  add_memory_limit_option(*cmd, opt->memory_limit);
  cmd->add_option("--name", opt->name, "Scenario name (with -0, -1, ... for several); default: the workload's")->type_name("NAME");
  cmd->add_option("-o,--output", opt->output, "Write the scenarios to FILE (atomically) instead of stdout")->type_name("FILE");
  cmd->callback(traced(*cmd, [opt, &exit_code] { exit_code = gen(*opt); }));
}

}  // namespace mlaplan::cli
