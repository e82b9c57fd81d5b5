// A topology: the first byte chooses a spec string ("fat-tree:hosts=4,nic_speed=100Gbps") or a
// topology YAML file (graph, builders, link classes, multipath) for the rest. A topology that
// loads is analysed (bandwidths, bisection, diameter) when it has at most 256 nodes.
#include "tests/fuzz/fuzz_support.hpp"
#include "topology/analysis.hpp"
#include "topology/load_topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  if (size == 0) return 0;
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  fuzz::expect_handled([&] {
    const topology::Topology t =
        (data[0] & 1) == 0
            ? topology::load_topology_spec(text, fuzz::work_dir())
            : topology::load_topology_spec(fuzz::write_input("topology.yaml", text).string(),
                                           fuzz::work_dir());
    if (t.num_nodes() <= 256) (void)topology::analyze(t);
  });
  return 0;
}
