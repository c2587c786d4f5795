// The memory budget of the plan tables a command builds (--memory-limit SIZE, default 2 GiB, on
// run, verify, sweep, bench and gen): checked before anything is allocated, so a scenario field or
// an option asking for gigabytes fails at once, naming the field, the size and the fix, instead of
// growing until the machine swaps. Sizes come from table_bytes (plan_tables.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "mlaplan/plan_tables.hpp"
#include "mlaplan/check/scenario.hpp"

namespace mlaplan::io {

// "--memory-limit 2.00 GiB", or "the default --memory-limit of 2.00 GiB" when `given` is false.
std::string describe_memory_limit(uint64_t limit, bool given);

// Throws InputError, located on the scenario ("FILE: scenarios[1].max_chunks: ..."), when planning it
// would take more than `limit` bytes: the tables of `chunk_rows` chunks (0: its max_chunks; policies
// other than max may need more rows), plus `extra_per_row` bytes per chunk row for what is built from
// them (`extra_what`: run's JSON or CSV text, the pictures). The message says how many chunks the
// batch needs and what to change.
void require_tables_fit(const check::Scenario& s, uint64_t limit, bool limit_given, uint64_t chunk_rows = 0,
                        uint64_t extra_per_row = 0, const std::string& extra_what = "");

// Bytes of run's output text per chunk row of B sequences, at most: `json` writes two numbers of up to
// 10 digits and a separator per cell (24 bytes per column), `csv` a line per cell (56 bytes per column).
uint64_t plan_text_bytes_per_row(uint64_t batch_size, bool csv);

}  // namespace mlaplan::io
