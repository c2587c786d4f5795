// Reads the attention dimensions of an MLA model from its Hugging Face config.json.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "mlaplan/errors.hpp"
#include "mlaplan/io/input_file.hpp"
#include "mlaplan/io/json_error.hpp"
#include "mlaplan/models/model.hpp"

namespace mlaplan::models {

using json = nlohmann::json;

namespace {

// No MLA model comes near this; a larger value means a corrupt file or the wrong file.
constexpr uint64_t kMaxDim = 65536;

constexpr const char* kNeedMla =
    "this reader needs an MLA model's config (DeepSeek-V2/V3 style: kv_lora_rank, qk_nope_head_dim, "
    "qk_rope_head_dim, v_head_dim)";

// Parses the text as a scenario is parsed: malformed JSON is "path:line:col: invalid JSON: ...", and a
// key given twice ("num_attention_heads": 3, then 128) is refused rather than read as the last.
json parse_json(const std::string& text, const std::string& path) { return io::parse_json_strict(text, path); }

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_float: return "a fraction";
    default: return "a number";
  }
}

std::string shown(const json& v) { return io::json_preview(v, 40); }

// Reads the fields of one config object; every error names the file and the field.
class ConfigReader {
 public:
  ConfigReader(const std::string& path, const json& cfg, std::string prefix, std::string model_type)
      : path_(path), cfg_(cfg), prefix_(std::move(prefix)), model_type_(std::move(model_type)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(fmt::format("{}: {}{}: {}", path_, prefix_, field, what));
  }

  bool has(const char* field) const { return cfg_.contains(field) && !cfg_[field].is_null(); }

  // An MLA field: its absence means the config is not an MLA model's.
  uint32_t mla_dim(const char* field) const {
    if (!has(field)) {
      // Another MLA field present: an MLA config with this key missing, not another kind of model.
      std::string present;
      for (const char* other : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"})
        if (has(other)) present += (present.empty() ? "" : ", ") + std::string(other);
      if (!present.empty())
        fail(field, fmt::format("missing, though the config has the other MLA fields ({}); add {} from the model's "
                                "published config.json",
                                present, field));
      std::string what = fmt::format("missing; {}", kNeedMla);
      if (!model_type_.empty())
        what += fmt::format("; this config's model_type is \"{}\", which is not an MLA model", model_type_);
      fail(field, what);
    }
    return positive(field);
  }

  // A field every config has (num_attention_heads, num_hidden_layers).
  uint32_t required_dim(const char* field) const {
    if (!has(field)) fail(field, "missing; copy it from the model's published config.json");
    return positive(field);
  }

  // An integer in 1 .. kMaxDim.
  uint32_t positive(const char* field) const { return integer(field, 1); }

  // max_position_embeddings: the context the model serves; absent or null is 0 (not known). From 1 to
  // 2^32, --max-model-len's range (a context, not an attention dimension).
  uint64_t optional_context(const char* field) const {
    if (!has(field)) return 0;
    const json& v = cfg_[field];
    const uint64_t most = uint64_t{1} << 32;
    if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 1) ||
        (v.is_number_unsigned() && (v.get<uint64_t>() < 1 || v.get<uint64_t>() > most)))
      fail(field, fmt::format("expected null or a whole number of tokens from 1 to {}, got {}; copy the value from the "
                              "model's published config.json",
                              most, shown(v)));
    return v.get<uint64_t>();
  }

  // q_lora_rank: absent or null is 0 (no query compression, as in DeepSeek-V2-Lite).
  uint32_t optional_rank(const char* field) const {
    if (!has(field)) return 0;
    return integer(field, 0);
  }

 private:
  uint32_t integer(const char* field, uint64_t lo) const {
    const json& v = cfg_[field];
    const std::string range = lo == 0 ? fmt::format("null or an integer from 0 to {}", kMaxDim)
                                      : fmt::format("an integer from 1 to {}", kMaxDim);
    if (v.is_string())
      fail(field, fmt::format("expected {}, got {} (a string); write the number without quotes", range, shown(v)));
    if (v.is_number_float())
      fail(field, fmt::format("expected {}, got {} (a fraction); write a whole number without a decimal point", range,
                              shown(v)));
    if (!v.is_number_integer())
      fail(field, fmt::format("expected {}, got {} ({}); copy the value from the model's published config.json",
                              range, shown(v), type_name(v)));
    if (v.is_number_unsigned()) {
      const uint64_t x = v.get<uint64_t>();
      if (x > kMaxDim)
        fail(field, fmt::format("expected {}, got {}, which no MLA model has; check that this is the right file and "
                                "that the value is not corrupt",
                                range, x));
      if (x < lo) fail(field, fmt::format("expected {}, got {}; an attention dimension must be at least 1", range, x));
      return static_cast<uint32_t>(x);
    }
    const int64_t x = v.get<int64_t>();
    if (x < 0) fail(field, fmt::format("expected {}, got {}; a dimension cannot be negative", range, x));
    if (static_cast<uint64_t>(x) < lo)
      fail(field, fmt::format("expected {}, got {}; an attention dimension must be at least 1", range, x));
    if (static_cast<uint64_t>(x) > kMaxDim)
      fail(field, fmt::format("expected {}, got {}, which no MLA model has; check the file", range, x));
    return static_cast<uint32_t>(x);
  }

  const std::string& path_;
  const json& cfg_;
  std::string prefix_;
  std::string model_type_;
};

std::string string_field(const json& obj, const char* key) {
  if (obj.is_object() && obj.contains(key) && obj[key].is_string()) return obj[key].get<std::string>();
  return "";
}

// The file's stem, or the directory's name for ".../DeepSeek-V3/config.json".
std::string name_from_path(const std::string& path) {
  const std::filesystem::path p(path);
  std::string stem = p.stem().string();
  if (stem == "config") {
    const std::string dir = p.parent_path().filename().string();
    if (!dir.empty() && dir != "." && dir != "..") return dir;
  }
  return stem.empty() ? path : stem;
}

}  // namespace

ModelDims parse_model_config(const std::string& json_text, const std::string& path) {
  const json top = parse_json(json_text, path);
  if (!top.is_object())
    throw InputError(fmt::format("{}: expected a JSON object (a Hugging Face config.json), got {}; give the model's "
                                 "config.json",
                                 path, type_name(top)));

  // Multimodal wrappers (Kimi-K2.5, Kimi-VL) nest the language model under text_config.
  const json* cfg = &top;
  std::string prefix;
  if (!top.contains("kv_lora_rank") && top.contains("text_config")) {
    const json& text = top["text_config"];
    if (!text.is_object())
      throw InputError(fmt::format("{}: text_config: expected an object holding the text model's config, got {} ({}); "
                                   "give the model's published config.json",
                                   path, shown(text), type_name(text)));
    cfg = &text;
    prefix = "text_config.";
  }

  std::string model_type = string_field(top, "model_type");
  if (model_type.empty()) model_type = string_field(*cfg, "model_type");

  const ConfigReader r(path, *cfg, prefix, model_type);
  ModelDims m;
  // kv_lora_rank first: its absence is what tells a non-MLA config (Llama, Qwen, ...) apart.
  m.kv_lora_rank = r.mla_dim("kv_lora_rank");
  if (cfg->contains("use_mla") && (*cfg)["use_mla"].is_boolean() && !(*cfg)["use_mla"].get<bool>())
    r.fail("use_mla", fmt::format("false: this model does not use MLA attention; {}", kNeedMla));
  m.qk_nope_head_dim = r.mla_dim("qk_nope_head_dim");
  m.qk_rope_head_dim = r.mla_dim("qk_rope_head_dim");
  m.v_head_dim = r.mla_dim("v_head_dim");
  m.num_heads = r.required_dim("num_attention_heads");
  m.num_layers = r.required_dim("num_hidden_layers");
  m.q_lora_rank = r.optional_rank("q_lora_rank");
  m.max_context = r.optional_context("max_position_embeddings");
  m.name = model_type.empty() ? name_from_path(path) : model_type;
  m.source = path;
  return m;
}

ModelDims read_model_config(const std::string& path) {
  std::filesystem::path p(path);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) p /= "config.json";
  const std::string file = p.string();
  // Only a plain ENOENT is "no such file": a loop, a permission or a name too long is left to
  // read_input_file, which names the cause.
  if (std::filesystem::status(p, ec).type() == std::filesystem::file_type::not_found && (!ec || ec.value() == ENOENT))
    throw InputError(fmt::format("{}: no such file; give the path of the model's Hugging Face config.json (or of the "
                                 "directory holding it)",
                                 file));
  return parse_model_config(io::read_input_file(file, "a model's Hugging Face config.json"), file);
}

}  // namespace mlaplan::models
