// The CSV inputs: `stepsim traffic --flows` (src,dst,bytes,start rows on a topology's node names)
// and `stepsim collective --op alltoallv --matrix` (n x n sizes). The first byte chooses the
// format and, for the matrix, n (2-9); the rest is the file.
#include "sim/collectives/plan/alltoallv_matrix.hpp"
#include "sim/collectives/runner/traffic.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "topology/load_topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  if (size == 0) return 0;
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  if ((data[0] & 1) == 0) {
    static const topology::Topology topology =
        topology::load_topology_spec("dgx-h100-superpod:nodes=2", ".");
    fuzz::expect_handled([&] { (void)collectives::parse_flows_csv(text, "flows.csv", topology); });
  } else {
    const std::uint32_t ranks = 2 + (data[0] >> 1) % 8;
    fuzz::expect_handled([&] {
      const auto m = collectives::parse_alltoallv_matrix_csv(text, "matrix.csv", ranks);
      (void)collectives::scale_alltoallv_matrix(m, Bytes(1 << 20));
    });
  }
  return 0;
}
