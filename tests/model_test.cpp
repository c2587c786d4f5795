// MLA model presets, the Hugging Face config reader, the buffer memory and format_bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "mlaplan/errors.hpp"
#include "mlaplan/models/model.hpp"

namespace mlaplan::models {

namespace {

// Runs fn, which must throw an InputError whose message holds every one of `parts`.
void expect_input_error(const std::function<void()>& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    for (const std::string& part : parts)
      EXPECT_NE(msg.find(part), std::string::npos) << "missing \"" << part << "\" in: " << msg;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected an InputError, got another exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected an InputError, nothing was thrown";
}

// The error message of fn's InputError ("" when it throws none).
std::string input_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void expect_same_dims(const ModelDims& got, const ModelDims& want) {
  EXPECT_EQ(got.num_heads, want.num_heads);
  EXPECT_EQ(got.qk_nope_head_dim, want.qk_nope_head_dim);
  EXPECT_EQ(got.qk_rope_head_dim, want.qk_rope_head_dim);
  EXPECT_EQ(got.v_head_dim, want.v_head_dim);
  EXPECT_EQ(got.kv_lora_rank, want.kv_lora_rank);
  EXPECT_EQ(got.q_lora_rank, want.q_lora_rank);
  EXPECT_EQ(got.num_layers, want.num_layers);
}

// The DeepSeek-V3 config.json, trimmed, with `fields` replacing or adding lines (a value of ""
// removes the field).
std::string dsv3_json(const std::vector<std::pair<std::string, std::string>>& fields = {}) {
  std::vector<std::pair<std::string, std::string>> base = {
      {"architectures", "[\"DeepseekV3ForCausalLM\"]"},
      {"hidden_size", "7168"},
      {"kv_lora_rank", "512"},
      {"model_type", "\"deepseek_v3\""},
      {"num_attention_heads", "128"},
      {"num_hidden_layers", "61"},
      {"num_key_value_heads", "128"},
      {"q_lora_rank", "1536"},
      {"qk_nope_head_dim", "128"},
      {"qk_rope_head_dim", "64"},
      {"rope_scaling", "{\"factor\": 40, \"type\": \"yarn\"}"},
      {"v_head_dim", "128"},
      {"vocab_size", "129280"},
  };
  for (const auto& [key, value] : fields) {
    bool found = false;
    for (auto& kv : base)
      if (kv.first == key) {
        kv.second = value;
        found = true;
      }
    if (!found) base.emplace_back(key, value);
  }
  std::string out = "{\n";
  bool first = true;
  for (const auto& [key, value] : base) {
    if (value.empty()) continue;
    out += (first ? "  \"" : ",\n  \"") + key + "\": " + value;
    first = false;
  }
  return out + "\n}\n";
}

std::string data_path(const char* file) { return std::string(MLAPLAN_SOURCE_DIR) + "/tests/data/" + file; }

// ---------------------------------------------------------------- presets

struct Expected {
  const char* name;
  uint32_t heads, nope, rope, v, kv_lora, q_lora, layers;
  uint64_t kv_row, k_row, latent_row;  // TP 1, bf16
};

// As published in each model's config.json (docs/models.md says where each was read).
const Expected kExpected[] = {
    {"deepseek-v3", 128, 128, 64, 128, 512, 1536, 61, 65536, 49152, 1152},
    {"deepseek-r1", 128, 128, 64, 128, 512, 1536, 61, 65536, 49152, 1152},
    {"kimi-k2", 64, 128, 64, 128, 512, 1536, 61, 32768, 24576, 1152},
    {"glm-5", 64, 192, 64, 256, 512, 2048, 78, 57344, 32768, 1152},
    {"deepseek-v2", 128, 128, 64, 128, 512, 1536, 60, 65536, 49152, 1152},
    {"deepseek-v2-lite", 16, 128, 64, 128, 512, 0, 27, 8192, 6144, 1152},
};

TEST(ModelPresets, AreTheSixModelsInOrder) {
  const auto& presets = model_presets();
  ASSERT_EQ(presets.size(), std::size(kExpected));
  for (size_t i = 0; i < presets.size(); ++i) EXPECT_EQ(presets[i].name, kExpected[i].name);
  EXPECT_EQ(model_preset_names(), "deepseek-v3, deepseek-r1, kimi-k2, glm-5, deepseek-v2, deepseek-v2-lite");
}

TEST(ModelPresets, HaveThePublishedDimensions) {
  for (const Expected& x : kExpected) {
    SCOPED_TRACE(x.name);
    const ModelDims& m = find_model_preset(x.name);
    EXPECT_EQ(m.name, x.name);
    EXPECT_EQ(m.num_heads, x.heads);
    EXPECT_EQ(m.qk_nope_head_dim, x.nope);
    EXPECT_EQ(m.qk_rope_head_dim, x.rope);
    EXPECT_EQ(m.v_head_dim, x.v);
    EXPECT_EQ(m.kv_lora_rank, x.kv_lora);
    EXPECT_EQ(m.q_lora_rank, x.q_lora);
    EXPECT_EQ(m.num_layers, x.layers);
  }
}

TEST(ModelPresets, NameTheirConfigUrl) {
  EXPECT_EQ(find_model_preset("deepseek-v3").source,
            "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json");
  EXPECT_EQ(find_model_preset("glm-5").source, "https://huggingface.co/zai-org/GLM-5/blob/main/config.json");
  EXPECT_EQ(find_model_preset("kimi-k2").source,
            "https://huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/config.json");
  for (const ModelDims& m : model_presets()) {
    SCOPED_TRACE(m.name);
    EXPECT_EQ(m.source.rfind("https://huggingface.co/", 0), 0u);
    EXPECT_NE(m.source.find("/blob/main/config.json"), std::string::npos);
    EXPECT_FALSE(m.display_name.empty());
  }
  EXPECT_EQ(find_model_preset("deepseek-v2-lite").title(), "DeepSeek-V2-Lite");
}

TEST(ModelPresets, FindIgnoresCaseAndRejectsUnknownNames) {
  EXPECT_EQ(&find_model_preset("DeepSeek-V3"), &find_model_preset("deepseek-v3"));
  EXPECT_EQ(find_model_preset("GLM-5").num_heads, 64u);
  expect_input_error([] { find_model_preset("deepseek-v4"); },
                     {"--model deepseek-v4: unknown model; choose one of deepseek-v3, deepseek-r1, kimi-k2, glm-5, "
                      "deepseek-v2, deepseek-v2-lite or give --model-config config.json"});
  expect_input_error([] { find_model_preset(""); }, {"--model : unknown model"});
}

// ---------------------------------------------------------------- dtype

TEST(ModelDtype, ParsesBf16AndFp8) {
  EXPECT_EQ(parse_dtype("bf16"), Dtype::bf16);
  EXPECT_EQ(parse_dtype("fp8"), Dtype::fp8);
  EXPECT_EQ(parse_dtype("BF16"), Dtype::bf16);
  EXPECT_STREQ(to_string(Dtype::bf16), "bf16");
  EXPECT_STREQ(to_string(Dtype::fp8), "fp8");
  EXPECT_EQ(dtype_bytes(Dtype::bf16), 2u);
  EXPECT_EQ(dtype_bytes(Dtype::fp8), 1u);
  EXPECT_EQ(input_error([] { parse_dtype("fp16"); }), "--dtype fp16: unknown dtype; choose bf16 or fp8");
  expect_input_error([] { parse_dtype("bfloat16"); }, {"--dtype bfloat16"});
}

// ---------------------------------------------------------------- buffer memory

TEST(ModelBuffer, DeepSeekV3Bf16Tp1) {
  const BufferMemory b = buffer_memory(find_model_preset("deepseek-v3"), 1, Dtype::bf16);
  EXPECT_EQ(b.tp, 1u);
  EXPECT_EQ(b.local_heads, 128u);
  EXPECT_EQ(b.dtype_bytes, 2u);
  EXPECT_EQ(b.kv_bytes_per_row, 65536u);  // 128 * (128 + 128) * 2
  EXPECT_EQ(b.k_bytes_per_row, 49152u);   // 128 * (128 + 64) * 2
  EXPECT_EQ(b.latent_bytes_per_row, 1152u);  // (512 + 64) * 2
}

TEST(ModelBuffer, DeepSeekV3At64KRowsIs4GiBPlus3GiB) {
  const BufferMemory b = buffer_memory(find_model_preset("deepseek-v3"), 1, Dtype::bf16);
  EXPECT_EQ(b.kv_bytes(65536), uint64_t{4} << 30);
  EXPECT_EQ(b.k_bytes(65536), uint64_t{3} << 30);
  EXPECT_EQ(b.total_bytes(65536), uint64_t{7} << 30);
  EXPECT_EQ(b.latent_bytes(65536), uint64_t{72} << 20);
  EXPECT_EQ(io::format_bytes(b.kv_bytes(65536)), "4.00 GiB");
  EXPECT_EQ(io::format_bytes(b.k_bytes(65536)), "3.00 GiB");
  EXPECT_EQ(io::format_bytes(b.total_bytes(65536)), "7.00 GiB");
  EXPECT_EQ(io::format_bytes(b.latent_bytes(65536)), "72.0 MiB");
  EXPECT_EQ(b.kv_bytes(0), 0u);
}

TEST(ModelBuffer, PerRowBytesOfEveryPreset) {
  for (const Expected& x : kExpected) {
    SCOPED_TRACE(x.name);
    const BufferMemory b = buffer_memory(find_model_preset(x.name), 1, Dtype::bf16);
    EXPECT_EQ(b.kv_bytes_per_row, x.kv_row);
    EXPECT_EQ(b.k_bytes_per_row, x.k_row);
    EXPECT_EQ(b.latent_bytes_per_row, x.latent_row);
  }
}

TEST(ModelBuffer, Tp8SplitsTheHeads) {
  const BufferMemory b = buffer_memory(find_model_preset("deepseek-v3"), 8, Dtype::bf16);
  EXPECT_EQ(b.tp, 8u);
  EXPECT_EQ(b.local_heads, 16u);
  EXPECT_EQ(b.kv_bytes_per_row, 65536u / 8);
  EXPECT_EQ(b.k_bytes_per_row, 49152u / 8);
  EXPECT_EQ(b.latent_bytes_per_row, 1152u);  // the latent row is not split by heads
  EXPECT_EQ(buffer_memory(find_model_preset("kimi-k2"), 64, Dtype::bf16).local_heads, 1u);
}

TEST(ModelBuffer, Fp8HalvesEveryRow) {
  for (const ModelDims& m : model_presets()) {
    SCOPED_TRACE(m.name);
    const BufferMemory bf16 = buffer_memory(m, 1, Dtype::bf16);
    const BufferMemory fp8 = buffer_memory(m, 1, Dtype::fp8);
    EXPECT_EQ(fp8.dtype_bytes, 1u);
    EXPECT_EQ(fp8.kv_bytes_per_row * 2, bf16.kv_bytes_per_row);
    EXPECT_EQ(fp8.k_bytes_per_row * 2, bf16.k_bytes_per_row);
    EXPECT_EQ(fp8.latent_bytes_per_row * 2, bf16.latent_bytes_per_row);
    EXPECT_EQ(fp8.total_bytes(1000) * 2, bf16.total_bytes(1000));
  }
}

TEST(ModelBuffer, RefusesATpThatDoesNotDivideTheHeads) {
  const ModelDims& dsv3 = find_model_preset("deepseek-v3");
  EXPECT_EQ(input_error([&] { buffer_memory(dsv3, 3, Dtype::bf16); }),
            "--tp 3: DeepSeek-V3 has 128 attention heads; choose a TP that divides it (1, 2, 4, 8, 16, 32, 64 or 128)");
  expect_input_error([&] { buffer_memory(dsv3, 0, Dtype::bf16); }, {"--tp 0", "128 attention heads"});
  expect_input_error([&] { buffer_memory(dsv3, 256, Dtype::bf16); }, {"--tp 256"});
  expect_input_error([] { buffer_memory(find_model_preset("kimi-k2"), 128, Dtype::fp8); },
                     {"--tp 128: Kimi-K2 has 64 attention heads", "64)"});
  expect_input_error([] { buffer_memory(find_model_preset("deepseek-v2-lite"), 32, Dtype::bf16); },
                     {"--tp 32", "(1, 2, 4, 8 or 16)"});
  ModelDims odd;
  odd.name = "odd";
  odd.num_heads = 40;
  expect_input_error([&] { buffer_memory(odd, 3, Dtype::bf16); }, {"odd has 40", "(1, 2, 4, 5, 8, 10, 20 or 40)"});
}

TEST(ModelBuffer, ProductsSaturateInsteadOfWrapping) {
  ModelDims big;
  big.name = "big";
  big.num_heads = 65536;
  big.qk_nope_head_dim = big.v_head_dim = big.qk_rope_head_dim = big.kv_lora_rank = 65536;
  const BufferMemory b = buffer_memory(big, 1, Dtype::bf16);
  EXPECT_EQ(b.kv_bytes_per_row, uint64_t{1} << 34);
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(b.kv_bytes(uint64_t{1} << 31), max);
  EXPECT_EQ(b.total_bytes(uint64_t{1} << 29), max);  // each term fits, the sum does not
  EXPECT_EQ(b.kv_bytes(uint64_t{1} << 29), uint64_t{1} << 63);
}

// ---------------------------------------------------------------- config.json text

TEST(ModelConfig, ADeepSeekV3ConfigGivesThePresetsDimensions) {
  const ModelDims m = parse_model_config(dsv3_json(), "cfg.json");
  expect_same_dims(m, find_model_preset("deepseek-v3"));
  EXPECT_EQ(m.name, "deepseek_v3");
  EXPECT_EQ(m.source, "cfg.json");
  const BufferMemory b = buffer_memory(m, 1, Dtype::bf16);
  EXPECT_EQ(b.kv_bytes_per_row, 65536u);
  EXPECT_EQ(input_error([&] { buffer_memory(m, 3, Dtype::bf16); }).rfind("--tp 3: deepseek_v3 has 128", 0), 0u);
}

TEST(ModelConfig, QLoraRankMayBeNullOrAbsent) {
  EXPECT_EQ(parse_model_config(dsv3_json({{"q_lora_rank", "null"}}), "c.json").q_lora_rank, 0u);
  EXPECT_EQ(parse_model_config(dsv3_json({{"q_lora_rank", ""}}), "c.json").q_lora_rank, 0u);
  EXPECT_EQ(parse_model_config(dsv3_json({{"q_lora_rank", "0"}}), "c.json").q_lora_rank, 0u);
  // DeepSeek-V2-Lite's shape.
  const ModelDims lite = parse_model_config(
      dsv3_json({{"model_type", "\"deepseek_v2\""}, {"num_attention_heads", "16"}, {"num_hidden_layers", "27"},
                 {"q_lora_rank", "null"}}),
      "lite.json");
  expect_same_dims(lite, find_model_preset("deepseek-v2-lite"));
  EXPECT_EQ(lite.name, "deepseek_v2");
}

TEST(ModelConfig, ReadsTheTextModelUnderTextConfig) {
  // Kimi-K2.5's shape: a multimodal wrapper with the Kimi-K2 text model under text_config.
  const std::string text = R"({
  "architectures": ["KimiK25ForConditionalGeneration"],
  "model_type": "kimi_k25",
  "text_config": {
    "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 7168,
    "kv_lora_rank": 512,
    "model_type": "kimi_k2",
    "num_attention_heads": 64,
    "num_hidden_layers": 61,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128
  },
  "vision_config": {"vt_num_hidden_layers": 27}
})";
  const ModelDims m = parse_model_config(text, "k25.json");
  expect_same_dims(m, find_model_preset("kimi-k2"));
  EXPECT_EQ(m.name, "kimi_k25");

  std::string bad = text;
  bad.replace(bad.find("\"v_head_dim\": 128"), 17, "\"v_head_dim\": \"x\"");
  expect_input_error([&] { parse_model_config(bad, "k25.json"); }, {"k25.json: text_config.v_head_dim: expected"});
  expect_input_error([] { parse_model_config(R"({"model_type": "x", "text_config": [1]})", "t.json"); },
                     {"t.json: text_config: expected an object"});
}

TEST(ModelConfig, AMissingFieldIsNamed) {
  // The other MLA fields are there: the key is what is missing (it used to say the reader needs an
  // MLA model's config, as for a Llama one).
  EXPECT_EQ(input_error([] { parse_model_config(dsv3_json({{"kv_lora_rank", ""}, {"model_type", ""}}), "cfg.json"); }),
            "cfg.json: kv_lora_rank: missing, though the config has the other MLA fields (qk_nope_head_dim, "
            "qk_rope_head_dim, v_head_dim); add kv_lora_rank from the model's published config.json");
  expect_input_error([] { parse_model_config(dsv3_json({{"v_head_dim", ""}}), "cfg.json"); },
                     {"cfg.json: v_head_dim: missing, though the config has the other MLA fields"});
  expect_input_error([] { parse_model_config(dsv3_json({{"qk_rope_head_dim", "null"}}), "cfg.json"); },
                     {"cfg.json: qk_rope_head_dim: missing"});
  expect_input_error([] { parse_model_config(dsv3_json({{"num_attention_heads", ""}}), "cfg.json"); },
                     {"cfg.json: num_attention_heads: missing"});
  expect_input_error([] { parse_model_config(dsv3_json({{"num_hidden_layers", ""}}), "cfg.json"); },
                     {"cfg.json: num_hidden_layers: missing"});
}

TEST(ModelConfig, AStringInsteadOfANumberIsNamed) {
  expect_input_error([] { parse_model_config(dsv3_json({{"kv_lora_rank", "\"512\""}}), "cfg.json"); },
                     {"cfg.json: kv_lora_rank: expected an integer from 1 to 65536, got \"512\" (a string)", "quotes"});
  expect_input_error([] { parse_model_config(dsv3_json({{"q_lora_rank", "\"1536\""}}), "cfg.json"); },
                     {"cfg.json: q_lora_rank: expected null or an integer from 0 to 65536"});
  expect_input_error([] { parse_model_config(dsv3_json({{"num_hidden_layers", "[61]"}}), "cfg.json"); },
                     {"cfg.json: num_hidden_layers: expected", "an array"});
  expect_input_error([] { parse_model_config(dsv3_json({{"v_head_dim", "true"}}), "cfg.json"); },
                     {"cfg.json: v_head_dim:", "a boolean"});
  expect_input_error([] { parse_model_config(dsv3_json({{"qk_nope_head_dim", "128.5"}}), "cfg.json"); },
                     {"cfg.json: qk_nope_head_dim:", "128.5 (a fraction)"});
}

TEST(ModelConfig, MalformedJsonNamesLineAndColumn) {
  // A comma is missing at the end of line 2.
  const std::string text = "{\n  \"kv_lora_rank\": 512\n  \"v_head_dim\": 128\n}\n";
  const std::string msg = input_error([&] { parse_model_config(text, "cfg.json"); });
  EXPECT_EQ(msg.rfind("cfg.json:3:", 0), 0u) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("[json.exception"), std::string::npos) << msg;
  expect_input_error([] { parse_model_config("", "empty.json"); }, {"empty.json:1:1: invalid JSON"});
  expect_input_error([] { parse_model_config("[1, 2]", "arr.json"); },
                     {"arr.json: expected a JSON object", "an array"});
}

TEST(ModelConfig, RefusesANonMlaConfig) {
  const std::string llama = R"({
  "architectures": ["LlamaForCausalLM"],
  "hidden_size": 4096,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8
})";
  expect_input_error([&] { parse_model_config(llama, "llama.json"); },
                     {"llama.json: kv_lora_rank: missing; this reader needs an MLA model's config (DeepSeek-V2/V3 "
                      "style: kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim)",
                      "model_type is \"llama\", which is not an MLA model"});
  expect_input_error([] { parse_model_config(dsv3_json({{"use_mla", "false"}}), "vl2.json"); },
                     {"vl2.json: use_mla: false", "MLA"});
}

TEST(ModelConfig, AnMlaConfigMissingOneKeyIsToldSo) {
  // Not "not an MLA model": the other MLA fields are there, so the key is what is missing.
  try {
    parse_model_config(dsv3_json({{"kv_lora_rank", "null"}}), "cut.json");
    FAIL() << "accepted a config without kv_lora_rank";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cut.json: kv_lora_rank: missing, though the config has the other MLA fields (qk_nope_head_dim, "
                        "qk_rope_head_dim, v_head_dim); add kv_lora_rank"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("not an MLA model"), std::string::npos) << what;
  }
}

TEST(ModelConfig, RefusesNegativeZeroAndAbsurdValues) {
  expect_input_error([] { parse_model_config(dsv3_json({{"qk_rope_head_dim", "-64"}}), "cfg.json"); },
                     {"cfg.json: qk_rope_head_dim: expected an integer from 1 to 65536, got -64", "negative"});
  expect_input_error([] { parse_model_config(dsv3_json({{"q_lora_rank", "-1"}}), "cfg.json"); },
                     {"cfg.json: q_lora_rank:", "got -1"});
  expect_input_error([] { parse_model_config(dsv3_json({{"v_head_dim", "0"}}), "cfg.json"); },
                     {"cfg.json: v_head_dim: expected an integer from 1 to 65536, got 0"});
  expect_input_error([] { parse_model_config(dsv3_json({{"num_attention_heads", "1000000"}}), "cfg.json"); },
                     {"cfg.json: num_attention_heads:", "got 1000000"});
  expect_input_error([] { parse_model_config(dsv3_json({{"num_hidden_layers", "18446744073709551615"}}), "cfg.json"); },
                     {"cfg.json: num_hidden_layers:"});
  EXPECT_EQ(parse_model_config(dsv3_json({{"kv_lora_rank", "65536"}}), "cfg.json").kv_lora_rank, 65536u);
}

TEST(ModelConfig, NameFallsBackToTheFileOrDirectory) {
  EXPECT_EQ(parse_model_config(dsv3_json({{"model_type", ""}}), "/models/My-MLA/config.json").name, "My-MLA");
  EXPECT_EQ(parse_model_config(dsv3_json({{"model_type", ""}}), "dir/tiny_mla.json").name, "tiny_mla");
  EXPECT_EQ(parse_model_config(dsv3_json({{"model_type", "3"}}), "dir/x.json").name, "x");
}

// ---------------------------------------------------------------- config.json files

TEST(ModelConfigFile, ReadsTheDeepSeekV3Sample) {
  const std::string path = data_path("deepseek_v3_config.json");
  const ModelDims m = read_model_config(path);
  expect_same_dims(m, find_model_preset("deepseek-v3"));
  EXPECT_EQ(m.name, "deepseek_v3");
  EXPECT_EQ(m.source, path);
}

TEST(ModelConfigFile, RefusesTheLlamaSample) {
  expect_input_error([] { read_model_config(data_path("llama_config.json")); },
                     {"llama_config.json: kv_lora_rank: missing; this reader needs an MLA model's config",
                      "model_type is \"llama\", which is not an MLA model"});
}

TEST(ModelConfigFile, ADirectoryMeansItsConfigJson) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("mlaplan_model_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "config.json");
    out << dsv3_json({{"model_type", ""}, {"num_attention_heads", "64"}});
  }
  const ModelDims m = read_model_config(dir.string());
  EXPECT_EQ(m.num_heads, 64u);
  EXPECT_EQ(m.source, (dir / "config.json").string());
  EXPECT_EQ(m.name, dir.filename().string());
  std::filesystem::remove_all(dir);
}

TEST(ModelConfigFile, AMissingFileIsNamed) {
  expect_input_error([] { read_model_config("/nonexistent/dir/cfg.json"); },
                     {"/nonexistent/dir/cfg.json: no such file"});
}

// ---------------------------------------------------------------- format_bytes

TEST(ModelFormatBytes, ThreeSignificantDigitsInBinaryUnits) {
  EXPECT_EQ(io::format_bytes(0), "0 B");
  EXPECT_EQ(io::format_bytes(512), "512 B");
  EXPECT_EQ(io::format_bytes(1023), "1023 B");
  EXPECT_EQ(io::format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(io::format_bytes(1152), "1.12 KiB");  // 1.125: ties go to even, as printf and torch print them
  EXPECT_EQ(io::format_bytes(1160), "1.13 KiB");
  EXPECT_EQ(io::format_bytes(49152), "48.0 KiB");
  EXPECT_EQ(io::format_bytes(65536), "64.0 KiB");
  EXPECT_EQ(io::format_bytes(10239), "10.0 KiB");  // 9.999 KiB rounds up to the next decade
  EXPECT_EQ(io::format_bytes(102400), "100 KiB");
  EXPECT_EQ(io::format_bytes(1023488), "0.98 MiB");  // 999.5 KiB would round to 1000
  EXPECT_EQ(io::format_bytes(1048552), "1.00 MiB");  // 1023.98 KiB
  EXPECT_EQ(io::format_bytes(1572864), "1.50 MiB");
  EXPECT_EQ(io::format_bytes(uint64_t{72} << 20), "72.0 MiB");
  EXPECT_EQ(io::format_bytes(uint64_t{4} << 30), "4.00 GiB");
  EXPECT_EQ(io::format_bytes(uint64_t{4429185024}), "4.12 GiB");  // 4.125 GiB
  EXPECT_EQ(io::format_bytes(uint64_t{3584} << 20), "3.50 GiB");
  EXPECT_EQ(io::format_bytes(uint64_t{1} << 40), "1.00 TiB");
  EXPECT_EQ(io::format_bytes(std::numeric_limits<uint64_t>::max()), "16.0 EiB");
}

// A key given twice would be read as the last one, so the dimensions could differ from the ones a
// reader of the file sees first: refused like a scenario's, naming the file and the key.
TEST(ModelConfig, AKeyGivenTwiceIsRefused) {
  std::string text = dsv3_json();
  text.insert(text.find('{') + 1, "\"num_attention_heads\": 3, ");
  EXPECT_EQ(input_error([&] { parse_model_config(text, "c.json"); }),
            "c.json: num_attention_heads: key given twice in one object; keep one");
  // The same key in two different objects is fine.
  EXPECT_EQ(input_error([] { parse_model_config(R"({"model_type": "x", "text_config": {"model_type": "y"}})", "t.json"); })
                .find("given twice"),
            std::string::npos);
}

}  // namespace
}  // namespace mlaplan::models
