// The GPU planner behind the Planner interface: names, phases, refusals worded like the CPU's,
// and buffers reused across calls of different sizes.
#include <gtest/gtest.h>

#include "gpu_test_support.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/profile/gpu_planner.hpp"
#include "mlaplan/reference_planner.hpp"

namespace mlaplan::gpu_test {
namespace {

Batch worked_example() {
  Batch b;
  b.page_size = 128;
  b.buffer_token_size = 512;
  b.max_chunks = 4;
  b.cache_lengths = {500, 0, 100};
  b.input_row_offsets = {0, 9, 209, 229};
  return b;
}

TEST(GpuPlanner, FindsTheDevice) {
  MLAPLAN_REQUIRE_GPU();
  std::string why;
  const auto name = profile::find_usable_gpu(&why);
  ASSERT_TRUE(name.has_value()) << why;
  EXPECT_FALSE(name->empty());
}

TEST(GpuPlanner, NamesPhasesAndPlans) {
  MLAPLAN_REQUIRE_GPU();
  for (GpuKernel k : {GpuKernel::fast, GpuKernel::max_port}) {
    auto planner = profile::make_gpu_planner(k);
    EXPECT_EQ(planner->name(), std::string("gpu-") + to_string(k));
    EXPECT_EQ(planner->backend(), "gpu");
    EXPECT_TRUE(planner->device().has_value());
    profile::PhaseTimer timer;
    const PlanTables t = planner->plan(worked_example(), timer);
    EXPECT_TRUE(t == plan_reference(worked_example()));
    std::vector<std::string> names;
    for (const auto& [name, us] : timer.phases()) names.push_back(name);
    EXPECT_EQ(names, (std::vector<std::string>{"copy in", "plan", "copy out"}));
  }
}

TEST(GpuPlanner, RefusesLikeTheCpu) {
  MLAPLAN_REQUIRE_GPU();
  Batch b = worked_example();
  b.max_chunks = 1;
  std::string cpu_message;
  try {
    plan_reference(b);
  } catch (const InfeasibleBatch& e) {
    cpu_message = e.what();
  }
  ASSERT_EQ(cpu_message.rfind("max_chunks: ", 0), 0u);
  for (GpuKernel k : {GpuKernel::fast, GpuKernel::max_port}) {
    auto planner = profile::make_gpu_planner(k);
    profile::PhaseTimer timer;
    try {
      planner->plan(b, timer);
      ADD_FAILURE() << "no InfeasibleBatch from " << planner->name();
    } catch (const InfeasibleBatch& e) {
      EXPECT_EQ(std::string(e.what()), cpu_message);
      EXPECT_EQ(e.min_max_chunks(), 2u);
    }
  }
}

// Small, large, empty, small again: grow-only buffers and the workspace survive size changes.
TEST(GpuPlanner, ReusesBuffersAcrossSizes) {
  MLAPLAN_REQUIRE_GPU();
  std::mt19937_64 rng(11);
  auto planner = profile::make_gpu_planner(GpuKernel::fast);
  for (uint32_t b : {3u, 70000u, 0u, 5u, 9000u, 70000u}) {
    Batch batch = random_batch(rng, b, uint64_t{1} << 22);
    profile::PhaseTimer timer;
    if (!plan_shape(batch).feasible) batch.max_chunks = static_cast<uint32_t>(plan_shape(batch).min_max_chunks);
    if (uint64_t{batch.max_chunks} * (b + 1) > kMaxTableCells) continue;
    EXPECT_TRUE(planner->plan(batch, timer) == plan_reference(batch)) << "B=" << b;
  }
}

}  // namespace
}  // namespace mlaplan::gpu_test
