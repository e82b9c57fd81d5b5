#include "sim/app/network_settings.hpp"

#include "sim/common/config.hpp"
#include "sim/scenario/scenario.hpp"

namespace stepsim::app {

void NetworkSettings::set(std::string key, std::string value) {
  assignments_.push_back(key + "=" + value);
  keys_.push_back(std::move(key));
  values_.push_back(std::move(value));
}

std::optional<std::string> NetworkSettings::find(std::string_view key) const {
  for (std::size_t i = keys_.size(); i-- > 0;) {
    if (keys_[i] == key) return values_[i];
  }
  return std::nullopt;
}

collectives::NetworkOptions NetworkSettings::read() const {
  // The settings as overrides of an empty scenario, so that each is checked and named exactly as
  // `-o network.KEY=VALUE` on a scenario is.
  config::Document document = config::Document::parse("{}", "command line");
  for (const std::string& a : assignments_)
    document.apply_override("network." + a);
  const config::Node root = document.root();
  const std::optional<config::Node> network = root.find("network");
  return parse_network_options(network ? &*network : nullptr);
}

}  // namespace stepsim::app
