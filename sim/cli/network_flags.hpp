// The flags of `stepsim collective` and `stepsim traffic` that say how collectives and flows
// become network traffic. Each is another name for a key of a scenario's `network:` section
// (`--links line-rate` is `-o network.calibration=line-rate`), read by the same reader with the
// same check and message (sim/app/network_settings.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/app/network_settings.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace stepsim::cli {

class NetworkFlags {
 public:
  // --algo: network.algorithm.
  void add_algorithm(CLI::App& app);
  // The rest of `stepsim collective`'s: --chunk-size, --channels, --step-latency, --op-latency,
  // --links, --ecmp, --pxn, --proto, --nccl.
  void add_collective(CLI::App& app);
  // `stepsim traffic`'s --links and --ecmp.
  void add_traffic(CLI::App& app);
  // --idle-tolerance: network.idle_tolerance.
  void add_idle_tolerance(CLI::App& app);

  // The settings of the flags given, in the order they were added (--pxn on/off as true/false).
  app::NetworkSettings given() const;

 private:
  struct Flag {
    CLI::Option* option = nullptr;
    std::string key;
    std::unique_ptr<std::string> value;  // where CLI11 writes the flag's text
  };
  // Adds `names` (CLI11's "--algo,-a") with `help`, showing `shown_default`, for network.`key`.
  CLI::Option* add(CLI::App& app, const std::string& names, std::string key,
                   const std::string& help, const std::string& shown_default = "");

  std::vector<Flag> flags_;
};

}  // namespace stepsim::cli
