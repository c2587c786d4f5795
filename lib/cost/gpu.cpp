#include "mlaplan/cost/gpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/input_file.hpp"
#include "mlaplan/io/printable.hpp"

namespace mlaplan::cost {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxKey = 64;  // longer is no GPU's name (and would make a folder name of anything)

// Words of a GPU's name that say nothing of which chip and card it is: the vendor and brand, the memory
// and the SXM form factor (the data-centre default; PCIe and NVL cards run at other clocks and power).
bool dropped_word(const std::string& w) {
  static const std::set<std::string> words = {"nvidia", "tesla", "geforce", "hbm", "hbm2", "hbm2e", "hbm3", "hbm3e",
                                              "gddr6", "gddr6x", "gddr7", "sxm", "sxm2", "sxm3", "sxm4", "sxm5", "sxm6"};
  if (words.count(w)) return true;
  // Memory sizes: 80gb, 141gb.
  return w.size() > 2 && w.compare(w.size() - 2, 2, "gb") == 0 &&
         std::all_of(w.begin(), w.end() - 2, [](unsigned char c) { return std::isdigit(c); });
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "deepseek-v3 TP 8 bf16 fa3": a file's identity as --gpu matches it.
std::string describe_query(const std::string& model, uint32_t tp, const std::string& dtype, const std::string& stack,
                           const std::string& up_projection) {
  return fmt::format("{} TP {} {} {}{}", model, tp, dtype, stack.empty() ? "(no stack named)" : stack,
                     up_projection == "fused" ? " fused loop" : "");
}

struct Found {
  std::string path;
  CostModel model;
};

// The cost files the reader takes in `dir` (*.json, by name), each with its parsed model.
std::vector<Found> files_in(const fs::path& dir) {
  std::vector<Found> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  std::vector<std::string> paths;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json" && it->is_regular_file(ec)) paths.push_back(it->path().string());
  std::sort(paths.begin(), paths.end());
  for (const std::string& p : paths) {
    try {
      out.push_back({p, read_cost_model(p)});
    } catch (const InputError&) {
      // Not a cost file this reader takes: not one --gpu can pick (--cost FILE names its problem).
    }
  }
  return out;
}

bool matches(const CostModel& m, const std::string& key, const CostQuery& q) {
  return gpu_key(m.gpu) == key && lower(m.model) == lower(q.model) && m.tp == q.tp && m.dtype == q.dtype &&
         attention_stack(m) == q.stack && m.up_projection == q.up_projection;
}

// "h200: deepseek-v3 TP 1 bf16 fa2, deepseek-v3 TP 1 bf16 fa3; h100: ...": the files under the roots, by
// GPU, for the message of a file not found.
std::string listing(const std::vector<std::string>& roots) {
  std::map<std::string, std::set<std::string>> by_gpu;
  for (const std::string& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
      for (const Found& f : files_in(it->path()))
        by_gpu[it->path().filename().string()].insert(describe_query(f.model.model, f.model.tp, f.model.dtype, attention_stack(f.model),
                                                                           f.model.up_projection));
  }
  std::string out;
  for (const auto& [gpu, files] : by_gpu) {
    out += (out.empty() ? "" : "; ") + gpu + ":";
    bool first = true;
    for (const std::string& f : files) {
      out += (first ? " " : ", ") + f;
      first = false;
    }
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string gpu_key(const std::string& name) {
  // Control bytes are in no GPU's name: a terminal's escape is not filed under its letters.
  if (std::any_of(name.begin(), name.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) return "";
  std::string key, word;
  for (size_t i = 0; i <= name.size(); ++i) {
    const unsigned char c = i < name.size() ? static_cast<unsigned char>(name[i]) : ' ';
    if (std::isalnum(c)) {
      word += static_cast<char>(std::tolower(c));
      if (word.size() > kMaxKey) return "";
      continue;
    }
    if (!word.empty() && !dropped_word(word)) key += (key.empty() ? "" : "-") + word;
    word.clear();
    if (key.size() > kMaxKey) return "";
  }
  return key;
}

std::string stack_named(const std::string& name) {
  const std::string n = lower(name);
  if (n == "fa3") return "fa3";
  if (n == "fa2" || n == "flash") return "fa2";
  if (n == "cudnn") return "cudnn";
  return "";
}

std::string attention_stack(const CostModel& m) { return stack_named(m.attention.substr(0, m.attention.find(' '))); }

std::string find_cost_file(const std::vector<std::string>& roots, const CostQuery& q, const std::string& option) {
  const std::string key = gpu_key(q.gpu);
  if (key.empty())
    throw InputError(fmt::format("{}: not a GPU's name; give h100, h200 or the name nvidia-smi prints (e.g. \"NVIDIA H100 "
                                 "80GB HBM3\")",
                                 option));
  for (const std::string& root : roots) {
    std::vector<Found> found = files_in(fs::path(root) / key);
    found.erase(std::remove_if(found.begin(), found.end(), [&](const Found& f) { return !matches(f.model, key, q); }),
                found.end());
    if (found.empty()) continue;
    // The newest calibration (ISO dates compare as text); stable: the first by name among equals.
    std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.model.date > b.model.date; });
    return found.front().path;
  }
  std::string searched;  // the folders there are: an install's, a source tree's
  for (const std::string& root : roots) {
    std::error_code ec;
    if (fs::is_directory(root, ec)) searched += (searched.empty() ? "" : " and ") + root;
  }
  const std::string calibrate_attention = q.stack == "fa2" ? "flash" : q.stack;
  throw InputError(fmt::format(
      "{}: no cost file for {} on {} in {} (there are: {}); make one on that GPU with `python -m mlaplan.calibrate "
      "--model {} --tp {} --attention {}{} -o FILE` and pass --cost FILE",
      option, describe_query(q.model, q.tp, q.dtype, q.stack, q.up_projection), key,
      searched.empty() ? "no folder of cost files (an install's share/mlaplan/costs)" : io::printable(searched),
      io::printable(listing(roots)), q.model, q.tp, calibrate_attention.empty() ? "auto" : calibrate_attention,
      q.up_projection == "fused" ? " --loop fused" : ""));
}

void require_gpu(const CostModel& m, const std::string& gpu, const std::string& option) {
  const std::string mine = gpu_key(m.gpu), theirs = gpu_key(gpu);
  if (!theirs.empty() && mine == theirs) return;
  const std::string named = theirs.empty() ? io::printable(gpu) : theirs;
  throw InputError(fmt::format("{}: gpu: calibrated on {} ({}), and {} names {}; a file prices only the GPU it was "
                               "calibrated on: give a file calibrated on {} (without the file, {} {} takes the shipped "
                               "one; python -m mlaplan.calibrate makes one)",
                               io::printable(m.path), io::printable(m.gpu), mine.empty() ? "no GPU mlaplan can name" : mine,
                               option, named, named, option, named));
}

std::optional<std::string> machine_gpu_warning(const CostModel& m, const std::string& machine) {
  const std::string mine = gpu_key(m.gpu), here = gpu_key(machine);
  if (here.empty() || mine == here) return std::nullopt;
  return fmt::format("this machine's GPU is an {}, and {} was calibrated on an {}: its times are the {}'s; give --gpu {} "
                     "for this one's file",
                     io::printable(machine), io::printable(m.path), io::printable(m.gpu), mine.empty() ? "other GPU" : mine,
                     here);
}

void require_identified_host(const CostModel& m, const std::string& what) {
  if (!m.host || m.host->identified) return;
  std::string reasons;
  for (const std::string& r : m.host->unidentified_because) reasons += (reasons.empty() ? "" : "; ") + r;
  throw InputError(fmt::format("{}: host: the host section is not identified ({}), and {} would choose by it; recalibrate "
                               "with `python -m mlaplan.calibrate --model {} --tp {} --host -o FILE`, or choose by graph "
                               "time (--timing graph, plain guided)",
                               io::printable(m.path), reasons.empty() ? "no reason recorded" : io::printable(reasons), what,
                               io::printable(m.model), m.tp));
}

}  // namespace mlaplan::cost
