// Where topologies come from: preset specs, files, inline maps; and the registry's errors.
#include <gtest/gtest.h>

#include <fstream>

#include "sim/common/input_error.hpp"
#include "test_util.hpp"

namespace stepsim::topology {
namespace {

using testing::from_yaml;
using testing::preset;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(LoadTopology, PresetSpecWithParameters) {
  EXPECT_EQ(preset("dgx-h100-superpod:nodes=4").accelerators().size(), 32u);
  EXPECT_EQ(preset("dgx-h100-superpod:nodes=4,rail_optimized=false").accelerators().size(), 32u);
}

TEST(LoadTopology, UnknownPresetSuggestsTheClosestName) {
  const std::string e = error_of([] { preset("dgx-h10:nodes=2"); });
  EXPECT_NE(e.find("unknown topology preset or builder 'dgx-h10' (did you mean 'dgx-h100'?)"),
            std::string::npos)
      << e;
}

TEST(LoadTopology, BadParameterValuesAndNamesAreLocated) {
  EXPECT_NE(error_of([] {
              preset("dgx-h100-superpod:nodes=-3");
            }).find("nodes: expected an integer from 1 to 100000, got '-3'"),
            std::string::npos)
      << error_of([] { preset("dgx-h100-superpod:nodes=-3"); });
  EXPECT_NE(error_of([] { preset("dgx-h100-superpod:node=3"); }).find("did you mean 'nodes'"),
            std::string::npos);
  EXPECT_NE(error_of([] { preset("fat-tree:nic_speed=0Gbps"); }).find("positive bandwidth"),
            std::string::npos);
}

TEST(LoadTopology, InlineMapsAndEfficiency) {
  const Topology t = from_yaml(
      "preset: dgx-h100\nparams: {nvlink_bandwidth: 400GB/s}\nefficiency: {nvlink: 0.5}\n");
  const NodeId g = t.accelerators()[0];
  const auto range = t.out_links(g);
  bool seen = false;
  for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
    if (t.link_class(LinkIndex(i)).name != "nvlink") continue;
    seen = true;
    EXPECT_DOUBLE_EQ(t.bandwidth(LinkIndex(i)).value(), 400e9);
    EXPECT_DOUBLE_EQ(t.effective_bandwidth(LinkIndex(i)).value(), 200e9);
  }
  EXPECT_TRUE(seen);
  EXPECT_NE(error_of([] {
              from_yaml("preset: dgx-h100\nefficiency: {nvlnk: 0.5}\n");
            }).find("did you mean 'nvlink'"),
            std::string::npos);
  EXPECT_EQ(from_yaml("builder: fat-tree\nparams: {hosts: 4}\n").accelerators().size(), 4u);
}

TEST(LoadTopology, ANameBesideAPresetRenamesIt) {
  EXPECT_EQ(from_yaml("preset: dgx-h100\n").name(), "dgx-h100");
  const Topology t = from_yaml("preset: dgx-h100-superpod\nparams: {nodes: 2}\nname: lab-a\n");
  EXPECT_EQ(t.name(), "lab-a");
  EXPECT_EQ(t.accelerators().size(), 16u);  // only the name changes
  EXPECT_EQ(from_yaml("builder: fat-tree\nname: my-tree\n").name(), "my-tree");
}

TEST(LoadTopology, FilesAreRelativeToTheFileThatNamesThem) {
  const auto dir = std::filesystem::temp_directory_path() / "stepsim_topology_load_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "fabric.yaml") << "preset: dgx-a100\n";
  std::ofstream(dir / "scenario.yaml") << "topology: fabric.yaml\n";
  const config::Document doc = config::Document::load_file(dir / "scenario.yaml");
  EXPECT_EQ(load_topology(doc.root().at("topology")).name(), "dgx-a100");
  EXPECT_EQ(load_topology_spec("fabric.yaml", dir).name(), "dgx-a100");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stepsim::topology
