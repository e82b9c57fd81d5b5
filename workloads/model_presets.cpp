#include "workloads/model_presets.hpp"

#include <fmt/format.h>

namespace stepsim::workloads {

namespace {

ModelSpec llama3(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                 std::int64_t ffn, std::string source) {
  ModelSpec m;
  m.name = std::move(name);
  m.source = std::move(source);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = 8;
  m.head_dim = hidden / heads;
  m.ffn = ffn;
  m.gated_mlp = true;
  m.vocab = 128256;
  m.tied_embeddings = false;
  m.norm = NormKind::kRmsNorm;
  m.position = PositionKind::kRotary;
  return m;
}

ModelSpec gpt3_175b() {
  ModelSpec m;
  m.name = "gpt3-175b";
  m.source =
      "Brown et al. 2020, 'Language Models are Few-Shot Learners', Table 2.1 (96 layers, d_model "
      "12288, 96 heads of 128, context 2048); GPT-2 BPE vocabulary of 50257; FFN 4 x d_model; "
      "learned positions, LayerNorm, biases, tied embeddings";
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 96;
  m.kv_heads = 96;
  m.head_dim = 128;
  m.ffn = 4 * 12288;
  m.vocab = 50257;
  m.tied_embeddings = true;
  m.bias = true;
  m.dropout = 0.1;  // Megatron-LM's default --hidden-dropout (megatron/training/arguments.py)
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kLearned;
  m.max_positions = 2048;
  return m;
}

ModelSpec mixtral_8x7b() {
  ModelSpec m;
  m.name = "mixtral-8x7b";
  m.source =
      "mistralai/Mixtral-8x7B-v0.1 config.json (hidden 4096, 32 layers, 32 heads, 8 KV heads, "
      "intermediate 14336, 8 local experts, 2 per token, vocabulary 32000); Jiang et al. 2024: "
      "46.7B total, 12.9B active";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 14336;
  m.gated_mlp = true;
  m.vocab = 32000;
  m.moe_enabled = true;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn = 14336;
  return m;
}

ModelSpec deepseek_v3() {
  ModelSpec m;
  m.name = "deepseek-v3";
  m.source =
      "deepseek-ai/DeepSeek-V3 config.json (hidden 7168, 61 layers, 128 heads, MLA q_lora 1536, "
      "kv_lora 512, qk_nope 128, qk_rope 64, v 128; 256 routed + 1 shared experts of 2048, top-8, "
      "first 3 layers dense with 18432; vocabulary 129280); DeepSeek-V3 report (arXiv 2412.19437): "
      "671B total, 37B activated (the multi-token-prediction module is not counted)";
  m.layers = 61;
  m.hidden = 7168;
  m.heads = 128;
  m.kv_heads = 128;
  m.head_dim = 128;
  m.ffn = 18432;
  m.gated_mlp = true;
  m.vocab = 129280;
  m.mla_enabled = true;
  m.mla = MlaShape{1536, 512, 128, 64, 128};
  m.moe_enabled = true;
  m.moe.experts = 256;
  m.moe.top_k = 8;
  m.moe.shared_experts = 1;
  m.moe.expert_ffn = 2048;
  m.moe.dense_layers = 3;
  return m;
}

// GPT configurations of Megatron-LM's weak-scaling table
// (validation/data/megatron_h100_weak_scaling.yaml): FFN 4h, vocabulary 131072, sequence 4096.
// Megatron's GPT defaults: LayerNorm, biases, learned absolute positions. The table's parameter
// totals match untied input and output embeddings.
ModelSpec megatron_gpt(const char* size, std::int64_t heads, std::int64_t hidden,
                       std::int64_t layers) {
  ModelSpec m;
  m.name = fmt::format("megatron-gpt-{}", size);
  m.source = fmt::format(
      "validation/data/megatron_h100_weak_scaling.yaml, row params {} (NVIDIA/Megatron-LM README "
      "weak-scaling table): {} heads, hidden {}, {} layers, vocabulary 131072, sequence 4096",
      size, heads, hidden, layers);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = hidden / heads;
  m.ffn = 4 * hidden;
  m.vocab = 131072;
  m.bias = true;
  m.dropout = 0.1;  // Megatron-LM's default --hidden-dropout and --attention-dropout
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kLearned;
  m.max_positions = 4096;
  return m;
}

std::vector<ModelSpec> all_presets() {
  std::vector<ModelSpec> v;
  v.push_back(gpt3_175b());
  v.push_back(llama3("llama3-8b", 32, 4096, 32, 14336,
                     "meta-llama/Meta-Llama-3-8B config.json (hidden 4096, 32 layers, 32 heads, 8 "
                     "KV heads, intermediate 14336, vocabulary 128256, untied); 8.03B parameters"));
  v.push_back(llama3("llama3-70b", 80, 8192, 64, 28672,
                     "meta-llama/Meta-Llama-3-70B config.json (hidden 8192, 80 layers, 64 heads, 8 "
                     "KV heads, intermediate 28672, vocabulary 128256); 70.6B parameters"));
  v.push_back(llama3("llama3-405b", 126, 16384, 128, 53248,
                     "meta-llama/Llama-3.1-405B config.json (hidden 16384, 126 layers, 128 heads, "
                     "8 KV heads, intermediate 53248, vocabulary 128256); 405.9B parameters"));
  v.push_back(mixtral_8x7b());
  v.push_back(deepseek_v3());
  v.push_back(megatron_gpt("1.7b", 16, 2048, 24));
  v.push_back(megatron_gpt("7.1b", 32, 4096, 30));
  v.push_back(megatron_gpt("16b", 48, 6144, 32));
  v.push_back(megatron_gpt("32b", 56, 7168, 48));
  v.push_back(megatron_gpt("70b", 64, 8192, 84));
  v.push_back(megatron_gpt("119b", 80, 10240, 92));
  v.push_back(megatron_gpt("177b", 96, 12288, 96));
  v.push_back(megatron_gpt("314b", 128, 16384, 96));
  v.push_back(megatron_gpt("462b", 144, 18432, 112));
  return v;
}

}  // namespace

std::optional<ModelSpec> find_model_preset(std::string_view name) {
  for (auto& m : all_presets()) {
    if (m.name == name) return m;
  }
  return std::nullopt;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& m : all_presets())
    names.push_back(m.name);
  return names;
}

}  // namespace stepsim::workloads
