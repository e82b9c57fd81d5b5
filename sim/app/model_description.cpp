#include "sim/app/model_description.hpp"

#include <fmt/format.h>

#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"
#include "workloads/model_presets.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::app {

ModelDescription describe_model(const std::string& model, std::int64_t seq_len) {
  if (model.empty())
    throw InputError("stepsim model: give a model preset name or file (or --list)");
  const bool is_file = model.ends_with(".yaml") || model.ends_with(".yml");
  const config::Document doc = is_file ? config::Document::load_file(model)
                                       : config::Document::parse(model, "command line (model)");
  ModelDescription d;
  d.model = workloads::parse_model(doc.root());
  d.parameters = workloads::count_parameters(d.model);
  d.forward = workloads::forward_flops_per_token(d.model, seq_len);
  d.seq_len = seq_len;
  return d;
}

std::vector<std::string> model_presets() {
  std::vector<std::string> lines;
  for (const auto& name : workloads::model_preset_names()) {
    const auto m = *workloads::find_model_preset(name);
    const auto p = workloads::count_parameters(m);
    // The source up to its first parenthesis or semicolon: the paper or model card.
    std::string source = m.source.substr(0, m.source.find_first_of("(;"));
    while (!source.empty() && source.back() == ' ')
      source.pop_back();
    lines.push_back(fmt::format("{:<20} {:>8.2f}B parameters  {}", name, p.total * 1e-9, source));
  }
  return lines;
}

}  // namespace stepsim::app
