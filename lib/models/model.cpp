// MLA model presets, dtypes, the up-projected buffer's memory and byte formatting.
// Where each preset's numbers come from, and how they were checked: docs/models.md.
#include "mlaplan/models/model.hpp"

#include <fmt/format.h>

#include <cctype>
#include <limits>
#include <string>
#include <vector>

#include "mlaplan/errors.hpp"
#include "mlaplan/models/ascii_lower.hpp"
#include "mlaplan/models/preset_lookup.hpp"

namespace mlaplan::models {

namespace {

ModelDims preset(const char* name, const char* display_name, uint32_t heads, uint32_t nope, uint32_t rope, uint32_t v,
                 uint32_t kv_lora, uint32_t q_lora, uint32_t layers, uint64_t context, const char* hf_repo) {
  ModelDims m;
  m.name = name;
  m.display_name = display_name;
  m.num_heads = heads;
  m.qk_nope_head_dim = nope;
  m.qk_rope_head_dim = rope;
  m.v_head_dim = v;
  m.kv_lora_rank = kv_lora;
  m.q_lora_rank = q_lora;
  m.num_layers = layers;
  m.max_context = context;
  m.source = fmt::format("https://huggingface.co/{}/blob/main/config.json", hf_repo);
  return m;
}


uint64_t saturating_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::numeric_limits<uint64_t>::max();
  return r;
}

uint64_t saturating_add(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::numeric_limits<uint64_t>::max();
  return r;
}

// "1, 2, 4, 8, 16, 32, 64 or 128": the TPs that divide `heads` (the first 12, then "...").
std::string divisors_text(uint32_t heads) {
  std::vector<uint32_t> d, high;
  for (uint64_t i = 1; i * i <= heads; ++i) {
    if (heads % i != 0) continue;
    d.push_back(static_cast<uint32_t>(i));
    if (i * i != heads) high.push_back(static_cast<uint32_t>(heads / i));
  }
  d.insert(d.end(), high.rbegin(), high.rend());
  std::string out;
  const size_t shown = d.size() > 12 ? 12 : d.size();
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out += (i + 1 == d.size()) ? " or " : ", ";
    out += std::to_string(d[i]);
  }
  if (shown < d.size()) out += fmt::format(", ... or {}", d.back());
  return out;
}

}  // namespace

Dtype parse_dtype(const std::string& name) {
  const std::string n = ascii_lower(name);
  if (n == "bf16") return Dtype::bf16;
  if (n == "fp8") return Dtype::fp8;
  throw InputError(fmt::format("--dtype {}: unknown dtype; choose bf16 or fp8", name));
}

const char* to_string(Dtype d) { return d == Dtype::fp8 ? "fp8" : "bf16"; }

uint32_t dtype_bytes(Dtype d) { return d == Dtype::fp8 ? 1 : 2; }

const std::vector<ModelDims>& model_presets() {
  // name, display name, heads, qk_nope, qk_rope, v, kv_lora, q_lora, layers, max_position_embeddings,
  // Hugging Face repository:
  // each row as published in the repository's config.json (docs/models.md lists where each was read
  // and what it was cross-checked against).
  static const std::vector<ModelDims> presets = {
      preset("deepseek-v3",      "DeepSeek-V3",      128, 128, 64, 128, 512, 1536, 61, 163840, "deepseek-ai/DeepSeek-V3"),
      preset("deepseek-r1",      "DeepSeek-R1",      128, 128, 64, 128, 512, 1536, 61, 163840, "deepseek-ai/DeepSeek-R1"),
      preset("kimi-k2",          "Kimi-K2",           64, 128, 64, 128, 512, 1536, 61, 131072, "moonshotai/Kimi-K2-Instruct"),
      preset("glm-5",            "GLM-5",             64, 192, 64, 256, 512, 2048, 78, 202752, "zai-org/GLM-5"),
      preset("deepseek-v2",      "DeepSeek-V2",      128, 128, 64, 128, 512, 1536, 60, 163840, "deepseek-ai/DeepSeek-V2"),
      preset("deepseek-v2-lite", "DeepSeek-V2-Lite",  16, 128, 64, 128, 512,    0, 27, 163840, "deepseek-ai/DeepSeek-V2-Lite"),
  };
  return presets;
}

std::string model_preset_names() { return preset_names(model_presets()); }

const ModelDims& find_model_preset(const std::string& name) {
  return find_preset(model_presets(), name, "--model", "model", "--model-config config.json");
}

uint64_t BufferMemory::kv_bytes(uint64_t rows) const { return saturating_mul(rows, kv_bytes_per_row); }
uint64_t BufferMemory::k_bytes(uint64_t rows) const { return saturating_mul(rows, k_bytes_per_row); }
uint64_t BufferMemory::latent_bytes(uint64_t rows) const { return saturating_mul(rows, latent_bytes_per_row); }
uint64_t BufferMemory::total_bytes(uint64_t rows) const { return saturating_add(kv_bytes(rows), k_bytes(rows)); }
uint64_t BufferMemory::reserved_bytes(uint64_t rows) const { return saturating_add(latent_bytes(rows), total_bytes(rows)); }
uint64_t BufferMemory::v_bytes(uint64_t rows) const { return saturating_mul(rows, v_bytes_per_row); }
uint64_t BufferMemory::fused_loop_bytes(uint64_t rows) const { return saturating_add(k_bytes(rows), v_bytes(rows)); }
uint64_t BufferMemory::kv_cache_tokens(uint64_t bytes) const {
  return kv_cache_bytes_per_token ? bytes / kv_cache_bytes_per_token : 0;
}

BufferMemory buffer_memory(const ModelDims& model, uint32_t tp, Dtype dtype) {
  if (model.num_heads == 0)
    throw InputError(fmt::format("{}: num_attention_heads is 0; give a model with at least one attention head",
                                 model.title()));
  if (tp == 0 || model.num_heads % tp != 0)
    throw InputError(fmt::format("--tp {}: {} has {} attention heads; choose a TP that divides it ({})", tp,
                                 model.title(), model.num_heads, divisors_text(model.num_heads)));
  BufferMemory b;
  b.tp = tp;
  b.local_heads = model.num_heads / tp;
  b.dtype_bytes = dtype_bytes(dtype);
  const uint64_t heads = b.local_heads, bytes = b.dtype_bytes;
  b.kv_bytes_per_row = heads * (uint64_t{model.qk_nope_head_dim} + model.v_head_dim) * bytes;
  b.k_bytes_per_row = heads * (uint64_t{model.qk_nope_head_dim} + model.qk_rope_head_dim) * bytes;
  b.latent_bytes_per_row = (uint64_t{model.kv_lora_rank} + model.qk_rope_head_dim) * bytes;
  b.v_bytes_per_row = heads * uint64_t{model.v_head_dim} * bytes;
  b.kv_cache_bytes_per_token = b.latent_bytes_per_row * model.num_layers;
  return b;
}


}  // namespace mlaplan::models
