// The hand-written cost file the tests price with (tests/data/cost/deepseek-v3-tp8-example.json: an
// H200's round numbers, DeepSeek-V3 at TP 8), by path and as text.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace mlaplan::test {

inline const std::string kExampleCost = std::string(MLAPLAN_SOURCE_DIR) + "/tests/data/cost/deepseek-v3-tp8-example.json";

inline std::string example_cost_text() {
  std::ifstream f(kExampleCost);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace mlaplan::test
