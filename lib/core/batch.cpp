#include "mlaplan/batch.hpp"

#include <limits>
#include <string>

#include "mlaplan/errors.hpp"

namespace mlaplan {

namespace {
// core stays free of fmt (an engine links it alone), so messages are built with std::to_string.
template <typename T>
std::string str(T value) {
  return std::to_string(value);
}
}  // namespace

void validate_batch(const Batch& batch) {
  if (batch.page_size < 1) throw InputError("page_size: expected an integer >= 1, got 0");
  if (batch.buffer_token_size < 1) throw InputError("buffer_token_size: expected an integer >= 1, got 0");
  if (batch.buffer_token_size > uint32_t{std::numeric_limits<int32_t>::max()})
    throw InputError("buffer_token_size: " + str(batch.buffer_token_size) +
                     " does not fit in int32 (buffer_lengths is int32); use a value below 2^31");
  if (batch.max_chunks < 1) throw InputError("max_chunks: expected an integer >= 1, got 0");

  const size_t b = batch.cache_lengths.size();
  if (batch.input_row_offsets.size() != b + 1)
    throw InputError("input_row_offsets: expected batch_size + 1 = " + str(b + 1) + " values (cache_lengths has " +
                     str(b) + "), got " + str(batch.input_row_offsets.size()));
  if (b > std::numeric_limits<uint32_t>::max() - 1)
    throw InputError("cache_lengths: " + str(b) + " sequences is more than a 32-bit batch size allows");
  const uint64_t cells = uint64_t{batch.max_chunks} * (b + 1);
  if (cells > kMaxTableCells)
    throw InputError("max_chunks: " + str(batch.max_chunks) + " chunks x " + str(b + 1) + " columns = " + str(cells) +
                     " table cells, above the limit of " + str(kMaxTableCells) +
                     "; lower max_chunks or split the batch");

  for (size_t i = 0; i + 1 < batch.input_row_offsets.size(); ++i) {
    if (batch.input_row_offsets[i + 1] < batch.input_row_offsets[i])
      throw InputError("input_row_offsets[" + str(i + 1) + "]: " + str(batch.input_row_offsets[i + 1]) +
                       " is below input_row_offsets[" + str(i) + "] = " + str(batch.input_row_offsets[i]) +
                       "; offsets must be non-decreasing");
  }

  // Every stored value is at most E, so E fitting in uint32 makes every table cell fit.
  uint64_t total = 0;
  for (uint32_t i = 0; i < b; ++i) {
    total += batch.padded_length(i);
    if (total > std::numeric_limits<uint32_t>::max())
      throw InputError("cache_lengths[" + str(i) + "]: the padded token total reaches " + str(total) + " at sequence " +
                       str(i) + ", above 2^32 - 1; tables are 32-bit, so shorten the sequences or split the batch");
  }
}

}  // namespace mlaplan
