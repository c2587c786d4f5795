// libFuzzer target: the lengths CSV reader of `gen/sweep --lengths FILE.csv`. Accepted requests must
// keep what lengths_csv.hpp promises (at least one row; new_tokens >= 1; cached + new below 2^31),
// and written back as a plain CSV they must read back the same. Every rejection is an InputError
// naming the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/workloads/lengths_csv.hpp"

using namespace mlaplan;
using namespace mlaplan::workloads;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = "fuzz.csv";
  std::vector<Request> requests;
  try {
    requests = parse_lengths_csv(text, path);
  } catch (const InputError& e) {
    FUZZ_CHECK(mlaplan_fuzz::names_file(e.what(), path), std::string("error message: ") + e.what());
    return 0;
  }
  FUZZ_UNEXPECTED("parse_lengths_csv")

  FUZZ_CHECK(!requests.empty(), "accepted a file without requests");
  std::string csv = "cached_tokens,new_tokens\n";
  for (const Request& r : requests) {
    FUZZ_CHECK(r.new_tokens >= 1, "a request with no new token");
    FUZZ_CHECK(uint64_t{r.cached_tokens} + r.new_tokens <= 2147483647u,
               "a request of " + std::to_string(r.cached_tokens) + " + " + std::to_string(r.new_tokens) + " tokens");
    csv += std::to_string(r.cached_tokens) + "," + std::to_string(r.new_tokens) + "\n";
  }
  std::vector<Request> again;
  try {
    again = parse_lengths_csv(csv, path);
  }
  FUZZ_UNEXPECTED("re-reading the requests written back")
  FUZZ_CHECK(again == requests, "requests changed on the way back:\n" + csv);
  return 0;
}
