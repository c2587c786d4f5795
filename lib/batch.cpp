#include "mlaplan/batch.hpp"

#include <fmt/format.h>

#include <limits>

#include "mlaplan/errors.hpp"

namespace mlaplan {

void validate_batch(const Batch& batch) {
  if (batch.page_size < 1) throw InputError("page_size: expected an integer >= 1, got 0");
  if (batch.buffer_token_size < 1) throw InputError("buffer_token_size: expected an integer >= 1, got 0");
  if (batch.buffer_token_size > uint32_t{std::numeric_limits<int32_t>::max()})
    throw InputError(fmt::format(
        "buffer_token_size: {} does not fit in int32 (buffer_lengths is int32); use a value below 2^31",
        batch.buffer_token_size));
  if (batch.max_chunks < 1) throw InputError("max_chunks: expected an integer >= 1, got 0");

  const size_t b = batch.cache_lengths.size();
  if (batch.input_row_offsets.size() != b + 1)
    throw InputError(fmt::format(
        "input_row_offsets: expected batch_size + 1 = {} values (cache_lengths has {}), got {}", b + 1, b,
        batch.input_row_offsets.size()));
  if (b > std::numeric_limits<uint32_t>::max() - 1)
    throw InputError(fmt::format("cache_lengths: {} sequences is more than a 32-bit batch size allows", b));
  const uint64_t cells = uint64_t{batch.max_chunks} * (b + 1);
  if (cells > kMaxTableCells)
    throw InputError(fmt::format(
        "max_chunks: {} chunks x {} columns = {} table cells, above the limit of {}; lower max_chunks or split the batch",
        batch.max_chunks, b + 1, cells, kMaxTableCells));

  for (size_t i = 0; i + 1 < batch.input_row_offsets.size(); ++i) {
    if (batch.input_row_offsets[i + 1] < batch.input_row_offsets[i])
      throw InputError(fmt::format(
          "input_row_offsets[{}]: {} is below input_row_offsets[{}] = {}; offsets must be non-decreasing", i + 1,
          batch.input_row_offsets[i + 1], i, batch.input_row_offsets[i]));
  }

  // Every stored value is at most E, so E fitting in uint32 makes every table cell fit.
  uint64_t total = 0;
  for (uint32_t i = 0; i < b; ++i) {
    total += batch.padded_length(i);
    if (total > std::numeric_limits<uint32_t>::max())
      throw InputError(fmt::format(
          "cache_lengths[{}]: the padded token total reaches {} at sequence {}, above 2^32 - 1; tables are 32-bit, "
          "so shorten the sequences or split the batch",
          i, total, i));
  }
}

}  // namespace mlaplan
