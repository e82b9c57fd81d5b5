#include "sim/app/model_writer.hpp"

#include <fmt/format.h>
#include <ostream>

namespace stepsim::app {

void write_model_text(std::ostream& out, const ModelDescription& d) {
  const workloads::ModelSpec& m = d.model;
  const auto& p = d.parameters;
  const auto& f = d.forward;
  out << fmt::format("{}  ({})\n", m.name, m.source);
  out << fmt::format("  layers {}, hidden {}, heads {} (kv {}), head dim {}, ffn {}{}, vocab {}\n",
                     m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn,
                     m.gated_mlp ? " gated" : "", m.vocab);
  if (m.moe_enabled) {
    out << fmt::format(
        "  MoE: {} experts, top-{}, {} shared, expert ffn {}, {} dense "
        "first layers\n",
        m.moe.experts, m.moe.top_k, m.moe.shared_experts, m.moe.expert_ffn, m.moe.dense_layers);
  }
  out << fmt::format("  parameters         {:.3f} B", p.total * 1e-9);
  if (m.moe_enabled) out << fmt::format(" ({:.3f} B active per token)", p.active * 1e-9);
  out << '\n';
  out << fmt::format(
      "  forward FLOPs/token {:.4g} at seq {} ({:.4g} matmul + {:.4g} "
      "attention)\n",
      f.total(), d.seq_len, f.matmul, f.attention);
  out << fmt::format("  training FLOPs/token {:.4g} (3 x forward; 6 x parameters = {:.4g})\n",
                     3 * f.total(), 6 * p.active);
}

nlohmann::ordered_json model_json(const ModelDescription& d) {
  const workloads::ModelSpec& m = d.model;
  nlohmann::ordered_json j;
  j["name"] = m.name;
  j["source"] = m.source;
  j["layers"] = m.layers;
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["vocab"] = m.vocab;
  j["parameters"] = d.parameters.total;
  j["active_parameters"] = d.parameters.active;
  j["seq_len"] = d.seq_len;
  j["forward_flops_per_token"] = d.forward.total();
  j["forward_matmul_flops_per_token"] = d.forward.matmul;
  j["forward_attention_flops_per_token"] = d.forward.attention;
  j["training_flops_per_token"] = 3 * d.forward.total();
  return j;
}

}  // namespace stepsim::app
