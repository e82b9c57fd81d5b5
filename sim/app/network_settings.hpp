// A scenario's `network:` section given key by key (docs/collectives.md, "The scenario's network:
// section"): how `stepsim collective` and `stepsim traffic` (and Python) say how collectives and
// flows become network traffic. Each setting is `-o network.KEY=VALUE`: read by the scenario's
// own reader (parse_network_options), with its checks and its messages, so a flag such as
// `--links line-rate` is another name for `network.calibration=line-rate`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/collectives/runner/network_options.hpp"

namespace stepsim::app {

class NetworkSettings {
 public:
  // Sets network.KEY to VALUE (read as YAML, as -o reads it); a later setting of a key wins.
  void set(std::string key, std::string value);
  // The last value set for `key`, if any.
  std::optional<std::string> find(std::string_view key) const;
  // Every setting, "KEY=VALUE", in order.
  const std::vector<std::string>& assignments() const { return assignments_; }

  // The network options these settings give over the defaults.
  //   THROWS: InputError naming the key and the value ("command line (-o network.calibration=x)
  //           :1:1: network.calibration: expected one of ..."), as a scenario's -o does.
  collectives::NetworkOptions read() const;

 private:
  std::vector<std::string> keys_;
  std::vector<std::string> values_;
  std::vector<std::string> assignments_;
};

}  // namespace stepsim::app
