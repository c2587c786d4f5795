// The GPU as an axis (cost/gpu.hpp): GPU names to keys, the shipped file for a GPU, model, TP and
// stack found by the files' fields, a file refused for another GPU, and a host section the
// calibration could not identify refused for eager choices. The reader takes the fields calibrate
// adds (host.identified, host.unidentified_because, heldout).
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "mlaplan/cost/gpu.hpp"
#include "mlaplan/errors.hpp"

namespace mlaplan::cost {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kCosts = std::string(MLAPLAN_SOURCE_DIR) + "/costs";
const std::string kFa3 = kCosts + "/h200/deepseek-v3-tp8-bf16-fa3.json";

json shipped() {
  std::ifstream in(kFa3);
  return json::parse(in);
}

// A fresh folder for one test's cost files.
fs::path gpu_scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("mlaplan_gpu_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void put(const fs::path& p, const json& j) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << j.dump(2);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(GpuKey, NamesOfOneCardAreOneKey) {
  for (const char* name : {"h100", "H100", "NVIDIA H100 80GB HBM3", "nvidia h100 80gb hbm3", "H100-SXM5-80GB", "H100 SXM"})
    EXPECT_EQ(gpu_key(name), "h100") << name;
  for (const char* name : {"h200", "H200", "NVIDIA H200", "NVIDIA H200 141GB HBM3e"}) EXPECT_EQ(gpu_key(name), "h200") << name;
  // Other cards of one chip run at other clocks and power: other keys.
  EXPECT_EQ(gpu_key("NVIDIA H100 PCIe"), "h100-pcie");
  EXPECT_EQ(gpu_key("NVIDIA H100 NVL"), "h100-nvl");
  EXPECT_EQ(gpu_key("NVIDIA H200 NVL"), "h200-nvl");
  EXPECT_EQ(gpu_key("NVIDIA A100-SXM4-80GB"), "a100");
  EXPECT_EQ(gpu_key("NVIDIA GeForce RTX 4090"), "rtx-4090");
  // No GPU's name: nothing to file it under (a folder name made of anything).
  for (const char* name : {"", "!!!", "NVIDIA", " 80GB HBM3 "}) EXPECT_EQ(gpu_key(name), "") << name;
  EXPECT_EQ(gpu_key("../../etc"), "etc");  // a key is letters, digits and '-': never a path out of the folder
  EXPECT_EQ(gpu_key(std::string(100, 'a')), "");
  EXPECT_EQ(gpu_key("\x1b[31mh100"), "");  // control bytes are in no GPU's name
}

TEST(GpuKey, StacksByName) {
  EXPECT_EQ(stack_named("FA3"), "fa3");
  EXPECT_EQ(stack_named("flash"), "fa2");
  EXPECT_EQ(stack_named("fa2"), "fa2");
  EXPECT_EQ(stack_named("fa4"), "");
  EXPECT_EQ(attention_stack(read_cost_model(kFa3)), "fa3");
  EXPECT_EQ(attention_stack(read_cost_model(kCosts + "/h200/deepseek-v3-tp8-bf16.json")), "fa2");
}

TEST(FindCostFile, ShippedH200ByModelTpAndStack) {
  struct Case {
    const char *gpu, *model;
    uint32_t tp;
    const char *stack, *file;
  };
  for (const Case& c : {Case{"h200", "deepseek-v3", 8, "fa3", "deepseek-v3-tp8-bf16-fa3.json"},
                        Case{"NVIDIA H200", "deepseek-v3", 8, "fa2", "deepseek-v3-tp8-bf16.json"},
                        Case{"H200", "DeepSeek-V3", 1, "fa3", "deepseek-v3-tp1-bf16-fa3.json"},
                        Case{"h200", "deepseek-v3", 1, "fa2", "deepseek-v3-tp1-bf16.json"},
                        Case{"h200", "kimi-k2", 8, "fa3", "kimi-k2-tp8-bf16-fa3.json"},
                        Case{"h200", "kimi-k2", 8, "fa2", "kimi-k2-tp8-bf16.json"}}) {
    const std::string found = find_cost_file({"/nonexistent", kCosts}, {c.gpu, c.model, c.tp, "bf16", c.stack}, "--gpu");
    EXPECT_EQ(fs::path(found), fs::path(kCosts) / "h200" / c.file) << c.gpu << " " << c.model << " " << c.tp << " " << c.stack;
  }
}

TEST(FindCostFile, NoneSaysWhatThereIsAndHowToMakeOne) {
  const std::string m = message_of([] { find_cost_file({kCosts}, {"NVIDIA B200", "deepseek-v3", 8, "bf16", "fa3"}, "--gpu b200"); });
  EXPECT_NE(m.find("--gpu b200: no cost file for deepseek-v3 TP 8 bf16 fa3 on b200"), std::string::npos) << m;
  EXPECT_NE(m.find("h200: deepseek-v3 TP 1 bf16 fa2, deepseek-v3 TP 1 bf16 fa3"), std::string::npos) << m;
  EXPECT_NE(m.find("python -m mlaplan.calibrate --model deepseek-v3 --tp 8 --attention fa3 -o FILE"), std::string::npos) << m;
  EXPECT_NE(m.find("--cost FILE"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  // A TP with no file on a GPU that has files.
  const std::string tp2 = message_of([] { find_cost_file({kCosts}, {"h200", "deepseek-v3", 2, "bf16", "fa2"}, "--gpu h200"); });
  EXPECT_NE(tp2.find("--attention flash"), std::string::npos) << tp2;  // calibrate's name of FlashAttention-2
  EXPECT_NE(message_of([] { find_cost_file({kCosts}, {"???", "deepseek-v3", 8, "bf16", "fa3"}, "--gpu ???"); }).find("not a GPU's name"),
            std::string::npos);
}

// A new GPU's file dropped in its folder is found: nothing else changes.
TEST(FindCostFile, AddingAFileIsAllItTakes) {
  const fs::path root = gpu_scratch("add");
  EXPECT_THROW(find_cost_file({root.string()}, {"h100", "deepseek-v3", 8, "bf16", "fa3"}, "--gpu h100"), InputError);
  json j = shipped();
  j["gpu"] = "NVIDIA H100 80GB HBM3";
  put(root / "h100" / "any-name.json", j);
  // Not cost files, or another card's: passed over.
  std::ofstream(root / "h100" / "broken.json") << "{";
  json pcie = j;
  pcie["gpu"] = "NVIDIA H100 PCIe";
  put(root / "h100" / "a-pcie.json", pcie);
  EXPECT_EQ(find_cost_file({root.string()}, {"NVIDIA H100 80GB HBM3", "deepseek-v3", 8, "bf16", "fa3"}, "--gpu"),
            (root / "h100" / "any-name.json").string());
  // A newer calibration of the same wins over the older, whatever their names.
  j["date"] = "2027-01-01";
  put(root / "h100" / "zz-newer.json", j);
  EXPECT_EQ(find_cost_file({root.string()}, {"h100", "deepseek-v3", 8, "bf16", "fa3"}, "--gpu"), (root / "h100" / "zz-newer.json").string());
  // The first root with a file wins (an install's before a source tree's).
  EXPECT_EQ(find_cost_file({root.string(), kCosts}, {"h200", "deepseek-v3", 8, "bf16", "fa3"}, "--gpu"), kFa3);
  // The PCIe card's file under its own key.
  put(root / "h100-pcie" / "p.json", pcie);
  EXPECT_EQ(find_cost_file({root.string()}, {"NVIDIA H100 PCIe", "deepseek-v3", 8, "bf16", "fa3"}, "--gpu"),
            (root / "h100-pcie" / "p.json").string());
  fs::remove_all(root);
}

// mlaplan's fused loop is a file of its own (kernels.up_projection "fused"): --loop fused takes it, and
// the engines' query (the default) never does, however new it is.
TEST(FindCostFile, TheFusedLoopsFileIsPickedByItsLoopOnly) {
  const fs::path root = gpu_scratch("loop");
  json engine = shipped();
  put(root / "h200" / "engine.json", engine);
  json fused = engine;
  fused["kernels"]["up_projection"] = "fused";
  fused["date"] = "2027-01-01";
  put(root / "h200" / "fused.json", fused);
  CostQuery q{"h200", "deepseek-v3", 8, "bf16", "fa3"};
  EXPECT_EQ(find_cost_file({root.string()}, q, "--gpu"), (root / "h200" / "engine.json").string());
  q.up_projection = "fused";
  EXPECT_EQ(find_cost_file({root.string()}, q, "--gpu"), (root / "h200" / "fused.json").string());
  const CostModel m = read_cost_model((root / "h200" / "fused.json").string());
  EXPECT_EQ(m.up_projection, "fused");
  EXPECT_NE(m.describe().find("mlaplan's fused loop"), std::string::npos) << m.describe();
  EXPECT_EQ(read_cost_model(kFa3).up_projection, "unfused");  // a file without the field
  // None for the loop: the message says which loop and how to make its file.
  fs::remove(root / "h200" / "fused.json");
  const std::string none = message_of([&] { find_cost_file({root.string()}, q, "--gpu h200"); });
  EXPECT_NE(none.find("deepseek-v3 TP 8 bf16 fa3 fused loop on h200"), std::string::npos) << none;
  EXPECT_NE(none.find("--attention fa3 --loop fused -o FILE"), std::string::npos) << none;
  // Another word is refused naming the field and the fix.
  fused["kernels"]["up_projection"] = "fast";
  const std::string bad = message_of([&] { parse_cost_model(fused.dump(), "f.json"); });
  EXPECT_NE(bad.find("f.json: kernels.up_projection: \"fast\" is not unfused"), std::string::npos) << bad;
  fs::remove_all(root);
}

TEST(RequireGpu, AnotherGpusFileIsRefusedNamingBoth) {
  const CostModel h200 = read_cost_model(kFa3);
  EXPECT_NO_THROW(require_gpu(h200, "h200", "--gpu"));
  EXPECT_NO_THROW(require_gpu(h200, "NVIDIA H200", "--gpu"));
  const std::string m = message_of([&] { require_gpu(h200, "NVIDIA H100 80GB HBM3", "--gpu"); });
  EXPECT_NE(m.find("deepseek-v3-tp8-bf16-fa3.json: gpu: calibrated on NVIDIA H200 (h200), and --gpu names h100"), std::string::npos) << m;
  CostModel pcie = h200;
  pcie.gpu = "NVIDIA H100 PCIe";
  EXPECT_THROW(require_gpu(pcie, "h100", "--gpu"), InputError);  // "h100" is the SXM card
  EXPECT_NO_THROW(require_gpu(pcie, "nvidia h100 pcie", "--gpu"));
  EXPECT_THROW(require_gpu(h200, "!!!", "--gpu"), InputError);
}

TEST(MachineGpu, WarnsWhereTheFileIsAnotherGpus) {
  const CostModel h200 = read_cost_model(kFa3);
  EXPECT_FALSE(machine_gpu_warning(h200, "NVIDIA H200"));
  const auto w = machine_gpu_warning(h200, "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(w);
  EXPECT_NE(w->find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(w->find("--gpu h100"), std::string::npos);
}

TEST(HostIdentified, ReadAndRefusedForEagerChoices) {
  json j = shipped();
  EXPECT_TRUE(parse_cost_model(j.dump(), "a.json").host->identified);  // older files: identified
  j["heldout"] = {{"coding-agent", {{"median", 0.011}, {"p90", 0.027}, {"tau", 0.91}}}};
  j["host"]["identified"] = false;
  j["host"]["unidentified_because"] = {"gather: not identifiable", "fill: not identifiable"};
  const CostModel m = parse_cost_model(j.dump(), "a.json");
  ASSERT_TRUE(m.host);
  EXPECT_FALSE(m.host->identified);
  ASSERT_EQ(m.host->unidentified_because.size(), 2u);
  const std::string why = message_of([&] { require_identified_host(m, "guided/eager"); });
  EXPECT_NE(why.find("a.json: host: the host section is not identified (gather: not identifiable; fill: not identifiable), and "
                     "guided/eager would choose by it"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("--host"), std::string::npos);
  EXPECT_NE(why.find("graph time"), std::string::npos);
  j["host"]["identified"] = true;
  EXPECT_NO_THROW(require_identified_host(parse_cost_model(j.dump(), "a.json"), "--timing eager"));
  j["host"]["identified"] = "no";
  EXPECT_NE(message_of([&] { parse_cost_model(j.dump(), "a.json"); }).find("a.json: host.identified: \"no\" is not true or false"),
            std::string::npos);
  j["host"]["identified"] = false;
  j["host"]["unidentified_because"] = {1};
  EXPECT_NE(message_of([&] { parse_cost_model(j.dump(), "a.json"); }).find("host.unidentified_because"), std::string::npos);
  j["host"]["unidentified_because"] = "gather";
  EXPECT_NE(message_of([&] { parse_cost_model(j.dump(), "a.json"); }).find("is not a list"), std::string::npos);
}

}  // namespace
}  // namespace mlaplan::cost

namespace mlaplan::cost {
namespace {

// A file whose own held-out check missed (calibrate's heldout.workloads.*.verdict MISS) says on which
// workloads and by what; one that passed, had no check, or holds another shape of the section, none.
TEST(HeldoutMissed, ReadFromCalibratesVerdicts) {
  json j = shipped();
  j["heldout"] = {{"workloads",
                   {{"coding-agent", {{"verdict", "MISS"}, {"missed", {"median 2.2% > 2%", "tau 0.84 < 0.85"}}}},
                    {"short-chat", {{"verdict", "PASS"}, {"missed", json::array()}}},
                    {"mooncake-conv", {{"verdict", "MISS"}}}}}};
  const CostModel m = parse_cost_model(j.dump(), "m.json");
  ASSERT_EQ(m.heldout_missed.size(), 2u);
  EXPECT_EQ(m.heldout_missed[0], "coding-agent (median 2.2% > 2%; tau 0.84 < 0.85)");
  EXPECT_EQ(m.heldout_missed[1], "mooncake-conv");
  EXPECT_TRUE(parse_cost_model(shipped().dump(), "s.json").heldout_missed.empty());  // passed everywhere
  for (const json& odd : {json(nullptr), json("MISS"), json{{"workloads", 3}}, json{{"workloads", {{"x", {{"verdict", 1}}}}}},
                          json{{"workloads", {{"x", {{"verdict", "MISS"}, {"missed", "all"}}}}}}}) {
    json k = shipped();
    k["heldout"] = odd;
    const CostModel c = parse_cost_model(k.dump(), "k.json");  // never refused: the section prices nothing
    EXPECT_LE(c.heldout_missed.size(), 1u) << odd.dump();
  }
  // The H100 DeepSeek-V3 TP 1 file of 1d3e663 missed on coding-agent; its refit with the small-GEMM term passed.
  const CostModel tp1 = read_cost_model(std::string(MLAPLAN_SOURCE_DIR) +
                                        "/docs/data/cost-validation/h100-2026-12-06/deepseek-v3-tp1-fa3-1d3e663-miss.json");
  ASSERT_EQ(tp1.heldout_missed.size(), 1u);
  EXPECT_EQ(tp1.heldout_missed[0].rfind("coding-agent (median 2.2% > 2%", 0), 0u) << tp1.heldout_missed[0];
  EXPECT_TRUE(read_cost_model(kCosts + "/h100/deepseek-v3-tp1-bf16-fa3.json").heldout_missed.empty());
}

}  // namespace
}  // namespace mlaplan::cost
