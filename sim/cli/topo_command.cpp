// `stepsim topo PRESET|FILE`: app::describe_topology as text or `--json` (keys in
// docs/topology.md); `--dot`/`--graphml` export the graph; `--list` lists presets.

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "sim/app/topology_description.hpp"
#include "sim/app/topology_writer.hpp"
#include "sim/cli/command.hpp"
#include "topology/graph_export.hpp"

namespace stepsim::cli {

Command add_topo_command(CLI::App& app) {
  struct Options {
    std::string spec;
    bool json = false;
    bool list = false;
    std::string dot;
    std::string graphml;
    bool no_reach = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "topo",
      "Describe a topology: counts, bandwidth per accelerator and tier, bisection, diameter");
  sub->add_option("topology", options->spec,
                  "Preset with parameters (dgx-h100-superpod:nodes=4) or topology YAML file");
  sub->add_flag("--list", options->list, "List the presets and builders");
  sub->add_flag("--json", options->json, "Print JSON instead of text");
  sub->add_option("--dot", options->dot, "Write the graph as Graphviz DOT to FILE")
      ->type_name("FILE");
  sub->add_option("--graphml", options->graphml, "Write the graph as GraphML to FILE")
      ->type_name("FILE");
  sub->add_flag("--no-reach", options->no_reach,
                "Skip the check that a large AllReduce and AllToAll reach the fabric's bandwidth");
  return {sub, [options](Context& ctx) {
            if (options->list) {
              for (const std::string& line : app::topology_builders())
                ctx.out << line << '\n';
              return 0;
            }
            const app::TopologyDescription d =
                app::describe_topology(options->spec, !options->no_reach);
            if (options->json)
              ctx.out << app::topology_json(d).dump(2) << "\n";
            else
              app::write_topology_text(ctx.out, d);
            const topology::Topology& t = d.topology;
            if (!options->dot.empty()) {
              output::write_file_atomically(
                  options->dot, [&t](std::ostream& os) { topology::write_dot(os, t); },
                  ctx.output_guard);
            }
            if (!options->graphml.empty()) {
              output::write_file_atomically(
                  options->graphml, [&t](std::ostream& os) { topology::write_graphml(os, t); },
                  ctx.output_guard);
            }
            return 0;
          }};
}

}  // namespace stepsim::cli
