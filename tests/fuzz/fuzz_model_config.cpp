// libFuzzer target: the Hugging Face config.json reader of `--model-config` and the buffer memory
// computed from it. Accepted dimensions must lie in the documented ranges; buffer_memory for TP 1, 2
// and 8 (bf16 and fp8) may refuse only a TP that does not divide the heads, and its figures must be
// the exact products, saturating at 2^64 - 1 rather than wrapping. Every rejection is an InputError
// naming the file.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "fuzz_check.hpp"
#include "mlaplan/io/byte_format.hpp"
#include "mlaplan/errors.hpp"
#include "mlaplan/models/model.hpp"

using namespace mlaplan;
using namespace mlaplan::models;

namespace {

using u128 = unsigned __int128;

uint64_t saturated(u128 v) {
  return v > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(v);
}

bool dim_ok(uint32_t v, uint32_t lo) { return v >= lo && v <= 65536; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = "fuzz/config.json";
  ModelDims m;
  try {
    m = parse_model_config(text, path);
  } catch (const InputError& e) {
    FUZZ_CHECK(mlaplan_fuzz::names_file(e.what(), path), std::string("error message: ") + e.what());
    return 0;
  }
  FUZZ_UNEXPECTED("parse_model_config")

  FUZZ_CHECK(dim_ok(m.num_heads, 1) && dim_ok(m.qk_nope_head_dim, 1) && dim_ok(m.qk_rope_head_dim, 1) &&
                 dim_ok(m.v_head_dim, 1) && dim_ok(m.kv_lora_rank, 1) && dim_ok(m.num_layers, 1) &&
                 dim_ok(m.q_lora_rank, 0),
             "a dimension out of range");
  FUZZ_CHECK(!m.name.empty() && m.source == path, "name '" + m.name + "', source '" + m.source + "'");

  const uint64_t rows_list[] = {0, 1, 8192, uint64_t{1} << 31, uint64_t{1} << 40, std::numeric_limits<uint64_t>::max()};
  for (uint32_t tp : {1u, 2u, 8u}) {
    for (Dtype dtype : {Dtype::bf16, Dtype::fp8}) {
      BufferMemory b;
      try {
        b = buffer_memory(m, tp, dtype);
      } catch (const InputError& e) {
        FUZZ_CHECK(m.num_heads % tp != 0, std::string("refused a TP that divides the heads: ") + e.what());
        continue;
      }
      FUZZ_UNEXPECTED("buffer_memory")
      FUZZ_CHECK(m.num_heads % tp == 0, "accepted a TP that does not divide the heads");
      const u128 heads = m.num_heads / tp, bytes = dtype == Dtype::bf16 ? 2 : 1;
      FUZZ_CHECK(b.tp == tp && b.local_heads == heads && b.dtype_bytes == bytes, "tp / heads / dtype");
      const u128 kv = heads * (u128{m.qk_nope_head_dim} + m.v_head_dim) * bytes;
      const u128 k = heads * (u128{m.qk_nope_head_dim} + m.qk_rope_head_dim) * bytes;
      const u128 latent = (u128{m.kv_lora_rank} + m.qk_rope_head_dim) * bytes;
      FUZZ_CHECK(b.kv_bytes_per_row == kv && b.k_bytes_per_row == k && b.latent_bytes_per_row == latent,
                 "per-row bytes");
      for (uint64_t rows : rows_list) {
        FUZZ_CHECK(b.kv_bytes(rows) == saturated(kv * rows), "kv_bytes(" + std::to_string(rows) + ")");
        FUZZ_CHECK(b.k_bytes(rows) == saturated(k * rows), "k_bytes(" + std::to_string(rows) + ")");
        FUZZ_CHECK(b.latent_bytes(rows) == saturated(latent * rows), "latent_bytes(" + std::to_string(rows) + ")");
        FUZZ_CHECK(b.total_bytes(rows) == saturated(u128{saturated(kv * rows)} + saturated(k * rows)),
                   "total_bytes(" + std::to_string(rows) + ")");
        FUZZ_CHECK(!io::format_bytes(b.total_bytes(rows)).empty(), "format_bytes");
      }
    }
  }
  return 0;
}
