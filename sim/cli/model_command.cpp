// `stepsim model NAME|FILE`: a model's shape, parameter count and FLOPs per token, as the workload
// generator sees them (docs/workloads.md). `--list` lists the presets.

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "sim/cli/command.hpp"
#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"
#include "workloads/model.hpp"
#include "workloads/model_presets.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::cli {

Command add_model_command(CLI::App& app) {
  struct Options {
    std::string model;
    std::int64_t seq_len = 4096;
    bool list = false;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "model",
      "Print a model's shape, parameter count and FLOPs per token (a preset or a YAML file)");
  sub->add_option("model", options->model, "Model preset name or model YAML file");
  sub->add_option("--seq-len", options->seq_len, "Sequence length for the attention FLOPs")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  sub->add_flag("--list", options->list, "List the model presets");
  sub->add_flag("--json", options->json, "Print JSON");
  return {
      sub, [options](Context& ctx) {
        if (options->list) {
          for (const auto& name : workloads::model_preset_names()) {
            const auto m = *workloads::find_model_preset(name);
            const auto p = workloads::count_parameters(m);
            std::string source = m.source.substr(0, m.source.find_first_of("(;"));
            while (!source.empty() && source.back() == ' ')
              source.pop_back();
            ctx.out << fmt::format("{:<20} {:>8.2f}B parameters  {}\n", name, p.total * 1e-9,
                                   source);
          }
          return 0;
        }
        if (options->model.empty()) {
          throw InputError("stepsim model: give a model preset name or file (or --list)");
        }
        const bool is_file = options->model.ends_with(".yaml") || options->model.ends_with(".yml");
        const config::Document doc =
            is_file ? config::Document::load_file(options->model)
                    : config::Document::parse(options->model, "command line (model)");
        const workloads::ModelSpec m = workloads::parse_model(doc.root());
        const auto p = workloads::count_parameters(m);
        const auto f = workloads::forward_flops_per_token(m, options->seq_len);
        if (options->json) {
          nlohmann::ordered_json j;
          j["name"] = m.name;
          j["source"] = m.source;
          j["layers"] = m.layers;
          j["hidden"] = m.hidden;
          j["heads"] = m.heads;
          j["kv_heads"] = m.kv_heads;
          j["vocab"] = m.vocab;
          j["parameters"] = p.total;
          j["active_parameters"] = p.active;
          j["seq_len"] = options->seq_len;
          j["forward_flops_per_token"] = f.total();
          j["forward_matmul_flops_per_token"] = f.matmul;
          j["forward_attention_flops_per_token"] = f.attention;
          j["training_flops_per_token"] = 3 * f.total();
          ctx.out << j.dump(2) << '\n';
          return 0;
        }
        ctx.out << fmt::format("{}  ({})\n", m.name, m.source);
        ctx.out << fmt::format(
            "  layers {}, hidden {}, heads {} (kv {}), head dim {}, ffn {}{}, vocab {}\n", m.layers,
            m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn, m.gated_mlp ? " gated" : "", m.vocab);
        if (m.moe_enabled) {
          ctx.out << fmt::format(
              "  MoE: {} experts, top-{}, {} shared, expert ffn {}, {} dense "
              "first layers\n",
              m.moe.experts, m.moe.top_k, m.moe.shared_experts, m.moe.expert_ffn,
              m.moe.dense_layers);
        }
        ctx.out << fmt::format("  parameters         {:.3f} B", p.total * 1e-9);
        if (m.moe_enabled) ctx.out << fmt::format(" ({:.3f} B active per token)", p.active * 1e-9);
        ctx.out << '\n';
        ctx.out << fmt::format(
            "  forward FLOPs/token {:.4g} at seq {} ({:.4g} matmul + {:.4g} "
            "attention)\n",
            f.total(), options->seq_len, f.matmul, f.attention);
        ctx.out << fmt::format(
            "  training FLOPs/token {:.4g} (3 x forward; 6 x parameters = {:.4g})\n", 3 * f.total(),
            6 * p.active);
        return 0;
      }};
}

}  // namespace stepsim::cli
