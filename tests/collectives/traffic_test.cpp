// Traffic patterns and the flows file reader.
#include <gtest/gtest.h>

#include "sim/collectives/runner/traffic.hpp"
#include "sim/common/input_error.hpp"
#include "test_topologies.hpp"

namespace stepsim::collectives {
namespace {

TEST(Traffic, PermutationIsADerangementAndReproducible) {
  const auto topo = testing::star(16, BytesPerSecond::gigabytes(100), Time::ns(100));
  std::vector<std::uint32_t> ranks(16);
  for (std::uint32_t i = 0; i < 16; ++i)
    ranks[i] = i;
  const auto a = traffic_pattern("permutation", topo, ranks, Bytes(1), 7);
  const auto b = traffic_pattern("permutation", topo, ranks, Bytes(1), 7);
  ASSERT_EQ(a.size(), 16u);
  std::vector<int> received(topo.num_nodes());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_NE(a[i].src, a[i].dst);
    EXPECT_EQ(a[i].dst, b[i].dst);
    ++received[a[i].dst.value()];
  }
  for (auto acc : topo.accelerators())
    EXPECT_EQ(received[acc.value()], 1);
  EXPECT_EQ(traffic_pattern("alltoall", topo, ranks, Bytes(1), 0).size(), 16u * 15);
}

TEST(Traffic, IncastSharesTheReceiversLink) {
  // 4 senders into one receiver over a star at B = 100 GB/s: the receiver's downlink is shared
  // four ways, all finish at 4·S/B + 2L.
  const auto topo = testing::star(5, BytesPerSecond::gigabytes(100), Time::ns(100));
  std::vector<std::uint32_t> ranks{0, 1, 2, 3, 4};
  const auto flows = traffic_pattern("incast", topo, ranks, Bytes(1'000'000'000), 0);
  const auto result = run_traffic(topo, line_rate_presets(), flows, topology::EcmpMode::kHash);
  for (const auto& f : result.flows)
    EXPECT_NEAR(f.finish.seconds(), 0.04 + 200e-9, 1e-9);
}

TEST(Traffic, IdleToleranceDefersTheResolveAfterADeparture) {
  // 1, 2, 3 and 4 GB into one receiver at B = 100 GB/s (S = 10 ms per GB at the full rate).
  // Exact max-min: 40, 70, 90, 100 ms. With a 30% idle tolerance the first departure leaves the
  // receiver's link 25% idle and the others keep B/4: 40, 80, 100, 110 ms (as worked in
  // tests/engine/flow_network_tolerance_test.cpp). Plus two hops of 100 ns.
  const auto topo = testing::star(5, BytesPerSecond::gigabytes(100), Time::ns(100));
  const auto flows = parse_flows_csv(
      "src,dst,bytes,start\ngpu1,gpu0,1GB,0\ngpu2,gpu0,2GB,0\ngpu3,gpu0,3GB,0\ngpu4,gpu0,4GB,0\n",
      "f.csv", topo);
  for (const double tolerance : {0.0, 0.3}) {
    const auto result =
        run_traffic(topo, line_rate_presets(), flows, topology::EcmpMode::kHash, tolerance);
    const std::vector<double> ms = tolerance > 0 ? std::vector<double>{40, 80, 100, 110}
                                                 : std::vector<double>{40, 70, 90, 100};
    for (std::size_t i = 0; i < 4; ++i)
      EXPECT_NEAR(result.flows[i].finish.seconds(), ms[i] * 1e-3 + 200e-9, 1e-9) << tolerance;
  }
}

TEST(Traffic, CsvRowsAndErrors) {
  const auto topo = testing::star(2, BytesPerSecond::gigabytes(100), Time::ns(100));
  const auto flows = parse_flows_csv(
      "src,dst,bytes,start\n# comment\ngpu0,gpu1,1000,0\ngpu1,gpu0,1KiB,1.5us\n", "f.csv", topo);
  ASSERT_EQ(flows.size(), 2u);
  EXPECT_EQ(flows[1].bytes, Bytes(1024));
  EXPECT_EQ(flows[1].start, Time::ps(1'500'000));
  EXPECT_THROW(parse_flows_csv("a,b,c,d\n", "f.csv", topo), InputError);
  EXPECT_THROW(parse_flows_csv("src,dst,bytes,start\ngpu0,gpu1,10\n", "f.csv", topo), InputError);
  EXPECT_THROW(parse_flows_csv("", "f.csv", topo), InputError);
}

}  // namespace
}  // namespace stepsim::collectives
