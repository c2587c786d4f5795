#include "mlaplan/io/memory_limit.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/plan_shape.hpp"

namespace mlaplan::io {

namespace {
uint64_t saturating_product(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }
}  // namespace

std::string describe_memory_limit(uint64_t limit, bool given) {
  return given ? fmt::format("--memory-limit {}", format_bytes(limit))
               : fmt::format("the default --memory-limit of {}", format_bytes(limit));
}

uint64_t plan_text_bytes_per_row(uint64_t batch_size, bool csv) { return (csv ? 56 : 24) * (batch_size + 1); }

void require_tables_fit(const check::Scenario& s, uint64_t limit, bool limit_given, uint64_t chunk_rows, uint64_t extra_per_row,
                        const std::string& extra_what) {
  const Batch& b = s.batch;
  const uint64_t rows = chunk_rows ? chunk_rows : b.max_chunks;
  const uint64_t per_row = table_bytes(b.batch_size(), 1) + extra_per_row;  // at most 2^32 x 64: no overflow
  const uint64_t tables = table_bytes(b.batch_size(), rows);
  const uint64_t need = saturating_product(rows, per_row);
  if (need <= limit) return;
  const std::string text =
      extra_per_row ? fmt::format(" (and up to {} more for {})", format_bytes(need - tables), extra_what) : "";
  // The most chunk rows that fit, and what the batch itself needs (validate_batch ran: the shape is defined).
  const uint64_t fit = limit / per_row;
  const uint64_t needed = plan_shape(b).min_max_chunks;
  const std::string field = chunk_rows && chunk_rows != b.max_chunks
                                ? fmt::format("max_chunks: the plan's {} chunks", rows)
                                : fmt::format("max_chunks: {} chunks", rows);
  std::string fix;
  if (chunk_rows && chunk_rows != b.max_chunks)
    fix = "raise buffer_token_size (fewer chunks), split the batch, or raise --memory-limit";
  else if (needed <= fit)
    fix = fmt::format("the batch needs only {} chunk{}, so lower max_chunks to at most {}, or raise --memory-limit",
                      needed, needed == 1 ? "" : "s", fit);
  else
    fix = fmt::format("even the {} chunks it needs take {}; split the batch, raise buffer_token_size or raise --memory-limit",
                      needed, format_bytes(saturating_product(needed, per_row)));
  throw InputError(s.locate(fmt::format("{} x {} columns of tables take {}{}, above {}; {}", field, b.batch_size() + 1ull,
                                        format_bytes(tables), text, describe_memory_limit(limit, limit_given), fix)));
}

}  // namespace mlaplan::io
