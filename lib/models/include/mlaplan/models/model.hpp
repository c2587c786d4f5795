// MLA model dimensions (presets and Hugging Face config.json files) and the memory of the
// up-projected buffer that the chunked-context prefill loop streams through. See docs/models.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlaplan/io/byte_format.hpp"

namespace mlaplan::models {

// The attention dimensions of one MLA model, in the Hugging Face config.json vocabulary.
struct ModelDims {
  std::string name;               // preset name, or for a config file its model_type / file stem
  uint32_t num_heads = 0;         // num_attention_heads
  uint32_t qk_nope_head_dim = 0;
  uint32_t qk_rope_head_dim = 0;
  uint32_t v_head_dim = 0;
  uint32_t kv_lora_rank = 0;
  uint32_t q_lora_rank = 0;       // 0 = none (DeepSeek-V2-Lite)
  uint32_t num_layers = 0;        // num_hidden_layers
  // max_position_embeddings: the longest context the model serves (cached + new tokens), which
  // --model applies as --max-model-len unless that is given; 0: not known.
  uint64_t max_context = 0;
  std::string source;             // where the numbers come from: the config.json URL, or the file path
  std::string display_name;       // for messages and tables: "DeepSeek-V3"; empty = use `name`

  // display_name, or name when display_name is empty.
  const std::string& title() const { return display_name.empty() ? name : display_name; }
};

// The element type of the buffers: bf16 (2 bytes) or fp8 (1 byte).
enum class Dtype { bf16, fp8 };

// "bf16" or "fp8"; anything else is an InputError "--dtype X: unknown dtype; choose bf16 or fp8".
Dtype parse_dtype(const std::string& name);
const char* to_string(Dtype d);
uint32_t dtype_bytes(Dtype d);  // 2 or 1

// deepseek-v3, deepseek-r1, kimi-k2, glm-5, deepseek-v2, deepseek-v2-lite, in that order; each
// with the config.json URL its numbers were checked against in `source`.
const std::vector<ModelDims>& model_presets();

// The preset names joined with ", " (for help texts and messages).
std::string model_preset_names();

// The preset of that name (ASCII case-insensitive); otherwise an InputError "--model X: unknown
// model; choose one of deepseek-v3, ... or give --model-config config.json".
const ModelDims& find_model_preset(const std::string& name);

// Reads a Hugging Face config.json of an MLA model (DeepSeek-V2/V3 style). Accepts the text model
// nested under "text_config" (Kimi-K2.5 / VL style). q_lora_rank may be null or absent (= 0).
// Every problem is one InputError "path: field: problem; fix"; malformed JSON is "path:line:col:
// invalid JSON: ...". name = the config's model_type (the file's stem, or its directory's name
// for a file called config.json, when there is none); source = path.
ModelDims parse_model_config(const std::string& json_text, const std::string& path);

// Reads the file (a directory means its config.json), then parse_model_config. An unreadable file
// is an InputError naming the path.
ModelDims read_model_config(const std::string& path);

// The up-projected buffer the chunked-context loop streams through, per row (token) of the buffer.
struct BufferMemory {
  uint32_t tp = 1;
  uint32_t local_heads = 0;          // num_heads / tp
  uint32_t dtype_bytes = 2;
  // local_heads * (qk_nope + v_head) * dtype: the up-projected K_nope|V (64 KiB for DeepSeek-V3 bf16 TP1).
  uint64_t kv_bytes_per_row = 0;
  // local_heads * (qk_nope + qk_rope) * dtype: the K concat buffer vLLM-style paths allocate beside it
  // (48 KiB for DeepSeek-V3 bf16 TP1).
  uint64_t k_bytes_per_row = 0;
  // (kv_lora + qk_rope) * dtype: the latent workspace row, not split by TP (1,152 B for DeepSeek-V3 bf16).
  uint64_t latent_bytes_per_row = 0;
  // local_heads * v_head * dtype: V alone (32 KiB for DeepSeek-V3 bf16 TP1).
  uint64_t v_bytes_per_row = 0;
  uint64_t kv_bytes(uint64_t rows) const;     // rows * kv_bytes_per_row
  uint64_t k_bytes(uint64_t rows) const;      // rows * k_bytes_per_row
  uint64_t latent_bytes(uint64_t rows) const; // rows * latent_bytes_per_row
  uint64_t total_bytes(uint64_t rows) const;  // kv + k (the transient up-projection footprint)
  // latent + kv + k: what a buffer of `rows` reserves on each GPU (the latent gather, the up-projected
  // K_nope|V and the K concat, all live in one chunk's step).
  uint64_t reserved_bytes(uint64_t rows) const;
  uint64_t v_bytes(uint64_t rows) const;      // rows * v_bytes_per_row
  // k + v: what mlaplan's fused loop (prefill --policy NAME+fused) reserves for a buffer of `rows`. Its
  // kernel reads the latent through the page table (no gathered rows) and writes K [rows, heads,
  // qk_nope + qk_rope] and V [rows, heads, v_head] in place (no K_nope|V beside a K concat): 10,240 B
  // a row for DeepSeek-V3 bf16 TP 8, against reserved_bytes' 15,488.
  uint64_t fused_loop_bytes(uint64_t rows) const;
  // The MLA KV cache of one token on one GPU: (kv_lora + qk_rope) * dtype per layer, times the
  // layers. The latent is not split by TP: every rank caches whole rows for all its layers.
  uint64_t kv_cache_bytes_per_token = 0;
  // The KV-cache tokens `bytes` would otherwise hold on that GPU: bytes / kv_cache_bytes_per_token
  // (rounded down; 0 without a per-token size).
  uint64_t kv_cache_tokens(uint64_t bytes) const;
  // The products saturate at UINT64_MAX instead of wrapping.
};

// InputError when tp is 0 or does not divide num_heads: "--tp 3: DeepSeek-V3 has 128 attention
// heads; choose a TP that divides it (1, 2, 4, 8, 16, 32, 64 or 128)".
BufferMemory buffer_memory(const ModelDims& model, uint32_t tp, Dtype dtype);

// Byte counts for people, from the core library.
using mlaplan::io::format_bytes;

}  // namespace mlaplan::models
