// NCCL's protocols in the flow simulation (protocol.hpp) and NCCL's tuner (nccl_tuner.hpp).
// Setup of the closed forms: an idle star of n ranks (one scale-up domain, links of bandwidth B
// and latency L; a step crosses GPU -> switch -> GPU, 2L) or a full mesh (no domains: every step
// is a network step, route L). Protocol p on NCCL algorithm A charges NCCL 2.20.3's base latency
// o(A,p) once, its hardware latency h(hw,A,p) per step and w(p) wire bytes per payload byte.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/planned_collective.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
#include "sim/collectives/nccl/nccl_tuner.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/common/input_error.hpp"
#include "test_topologies.hpp"

namespace stepsim::collectives {
namespace {

constexpr int kN = 8;
const BytesPerSecond kB = BytesPerSecond::gigabytes(100);
const Time kL = Time::ns(100);

double us(double seconds) {
  return seconds * 1e6;
}

ProtocolChoice forced(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return ProtocolChoice::kLL;
    case Protocol::kLL128:
      return ProtocolChoice::kLL128;
    case Protocol::kSimple:
      break;
  }
  return ProtocolChoice::kSimple;
}

double run(const topology::Topology& topo, std::string_view algo, Bytes size, Protocol p) {
  CollectiveSession session(topo, line_rate_presets());
  const Placement placement = place_group(topo, testing::first_ranks(kN));
  Operation op;
  op.kind = CollectiveKind::kAllReduce;
  op.size = size;
  PlanOptions options;
  options.protocol = forced(p);
  return session.run(*builtin_algorithms().create(algo), op, placement, options).seconds();
}

TEST(Protocol, TraitsAndLatenciesAreNccls) {
  // LL: 16-byte lines of 8 data bytes; LL128: 128-byte lines of 120 (src/include/device.h).
  EXPECT_DOUBLE_EQ(protocol_traits(Protocol::kLL).wire_factor, 2.0);
  EXPECT_DOUBLE_EQ(protocol_traits(Protocol::kLL128).wire_factor, 128.0 / 120.0);
  EXPECT_DOUBLE_EQ(protocol_traits(Protocol::kSimple).wire_factor, 1.0);
  // DEFAULT_LL_BUFFSIZE 512 KiB / NCCL_STEPS 8, half of it flags; DEFAULT_LL128_BUFFSIZE
  // 4,915,200 B / 8 x 120/128.
  EXPECT_EQ(protocol_traits(Protocol::kLL).slice, Bytes(32 << 10));
  EXPECT_EQ(protocol_traits(Protocol::kLL128).slice, Bytes(576000));
  // tuning.cc (v2.20.3): baseLat Ring {6.6, 14, 8.4}; hwLat NVLink Ring {.6, 1.9, 3.4}, NET Ring
  // {2.7, 4.0, 14.0}, NVLink NVLS Simple 23.
  EXPECT_DOUBLE_EQ(nccl_base_latency(NcclAlgorithm::kRing, Protocol::kLL).microseconds(), 6.6);
  EXPECT_DOUBLE_EQ(
      nccl_hardware_latency(NcclHardware::kNvlink, NcclAlgorithm::kRing, Protocol::kLL128)
          .microseconds(),
      1.9);
  EXPECT_DOUBLE_EQ(
      nccl_hardware_latency(NcclHardware::kNet, NcclAlgorithm::kRing, Protocol::kSimple)
          .microseconds(),
      14.0);
  EXPECT_DOUBLE_EQ(
      nccl_hardware_latency(NcclHardware::kNvlink, NcclAlgorithm::kNvls, Protocol::kSimple)
          .microseconds(),
      23.0);
  EXPECT_FALSE(nccl_supports(NcclAlgorithm::kNvls, Protocol::kLL));
  EXPECT_EQ(parse_protocol("ll128"), Protocol::kLL128);
  EXPECT_EQ(parse_protocol("Simple"), Protocol::kSimple);
  EXPECT_FALSE(parse_protocol("ll64"));
  EXPECT_EQ(parse_protocol_choice("AUTO"), ProtocolChoice::kAuto);
  EXPECT_FALSE(parse_protocol_choice("fast"));
}

TEST(ProtocolClosedForm, RingAllReduceOnIdleStar) {
  // o(Ring,p) + 2(n-1)·(h(NVLink,Ring,p) + 2L) + 2(n-1)/n·S / r(p), both ring forms, where a
  // member sends payload at r(p) = B / w(p), and on LL at most NCCL's ceiling min(llMaxBw, bw/4)
  // with bw = NCCL's own figure for the NVLinks, 20/25 of their line rate (80 GB/s here): 20 GB/s.
  // S = 8 ranks x 8 x 576,000 B: every protocol's chunks divide every segment evenly (LL128: 8
  // chunks of its 576,000-byte slice; LL: 64 of 72,000 B, capped by max_chunks; Simple: 5 of
  // 921,600 B), so the step form's chunks all finish together as in the closed form.
  const auto topo = testing::star(kN, kB, kL);
  const Bytes size(8 * 8 * 576000);
  const double n = kN;
  for (Protocol p : kAllProtocols) {
    const double o = nccl_base_latency(NcclAlgorithm::kRing, p).seconds();
    const double a =
        nccl_hardware_latency(NcclHardware::kNvlink, NcclAlgorithm::kRing, p).seconds() +
        2 * kL.seconds();
    double rate = kB.value() / protocol_traits(p).wire_factor;
    if (p == Protocol::kLL) rate = std::min(rate, std::min(87.7e9, kB.value() * 20 / 25 / 4));
    const double expected = o + 2 * (n - 1) * a + 2 * (n - 1) / n * size.as_double() / rate;
    for (const char* algo : {"ring", "ring-fluid"}) {
      const double t = run(topo, algo, size, p);
      EXPECT_NEAR(t, expected, expected * 1e-6)
          << algo << "/" << to_string(p) << ": " << us(t) << " us, closed form " << us(expected);
    }
  }
}

TEST(ProtocolClosedForm, DoubleBinaryTreeOnIdleMesh) {
  // No domains: every step is a network step. NCCL's two trees of depth d = 3 over 8 ranks, C
  // chunks of the protocol's slice per tree (S/2 = 128 KiB: LL 4 chunks of 32 KiB, LL128 and
  // Simple 1), C <= 5 so the trees never share a directed link at once (closed_form_test.cpp).
  // The step latency a = h + L is paid by the first chunk only (NCCL's slots keep later chunks'
  // latency hidden): o(Tree,p) + 2d·(h + L) + (2d + C - 1)·w(p)·S/(2·C·B), h = h(NET,Tree,p),
  // for Simple the ring's (Tree/Simple's figure is a whole 256 kB chunk's time, which the flows
  // carry here). The route latency L is paid by every chunk (it is the wire's).
  const auto topo = testing::mesh(kN, kB, kL);
  const Bytes size(256 << 10);
  const double d = 3;
  for (Protocol p : kAllProtocols) {
    const double C = p == Protocol::kLL ? 4 : 1;
    const double o = nccl_base_latency(NcclAlgorithm::kTree, p).seconds();
    const NcclAlgorithm step_of =
        p == Protocol::kSimple ? NcclAlgorithm::kRing : NcclAlgorithm::kTree;
    const double h = nccl_hardware_latency(NcclHardware::kNet, step_of, p).seconds();
    const double expected =
        o + 2 * d * h +
        (2 * d + C - 1) * (kL.seconds() + protocol_traits(p).wire_factor * size.as_double() /
                                              (2 * C * kB.value()));
    const double t = run(topo, "tree", size, p);
    EXPECT_NEAR(t, expected, expected * 1e-6)
        << "tree/" << to_string(p) << ": " << us(t) << " us, closed form " << us(expected);
  }
}

GroupShape nvlink4_node(bool nvls) {
  GroupShape g = GroupShape::single_domain(kN, nvls);
  g.scale_up_bandwidth = BytesPerSecond::gigabytes(450);
  return g;
}

Operation allreduce(double bytes) {
  Operation op;
  op.kind = CollectiveKind::kAllReduce;
  op.size = Bytes(static_cast<std::int64_t>(bytes));
  return op;
}

TEST(NcclTuner, SwitchesProtocolWhereTheCurvesCross) {
  // 8 ranks of one node of 450 GB/s NVLinks without NVLS (so taken as Ampere), ring AllReduce,
  // NCCL 2.20.3's model (us, GB/s), its bandwidth bw = 450 x 20/25 = 360 (NCCL counts an Ampere
  // NVLink of 25 GB/s as 20):
  //   LL     lat 6.6 + 14 x 0.6 = 15.0,  bw min(87.7, 360/4) x 8/14 = 50.114
  //   LL128  lat 14 + 14 x 1.9 = 40.6,   bw 360 x 0.92 x 8/14 = 189.257
  //   Simple lat 8.4 + 14 x 3.4 = 56.0,  bw 360 x 8/14 = 205.714
  // t = lat + S / (1000 bw) crosses for LL/LL128 at S = 25.6 / (1/50.114 - 1/189.257) / 1e-3
  // = 1.7450 MB and for LL128/Simple at S = 15.4 / (1/189.257 - 1/205.714) / 1e-3 = 36.43 MB.
  const GroupShape group = nvlink4_node(false);
  const NcclAlgorithm ring[] = {NcclAlgorithm::kRing};
  const double bw = 450.0 * 20 / 25;
  const double ll_ll128 = 25.6e3 / (1 / (87.7 * 8 / 14) - 1 / (bw * 0.92 * 8 / 14));
  const double ll128_simple = 15.4e3 / (1 / (bw * 0.92 * 8 / 14) - 1 / (bw * 8 / 14));
  EXPECT_NEAR(ll_ll128, 1.7450e6, 1e3);
  EXPECT_NEAR(ll128_simple, 36.43e6, 0.01e6);
  auto chosen = [&](double bytes) { return nccl_choose(allreduce(bytes), group, ring)->protocol; };
  EXPECT_EQ(chosen(0.97 * ll_ll128), Protocol::kLL);
  EXPECT_EQ(chosen(1.03 * ll_ll128), Protocol::kLL128);
  EXPECT_EQ(chosen(0.97 * ll128_simple), Protocol::kLL128);
  EXPECT_EQ(chosen(1.03 * ll128_simple), Protocol::kSimple);
  // The predicted times are the model's: 1 MiB on LL = 15.0 + 1048576 / (1000 x 50.114) us.
  const auto t =
      nccl_predicted_time_us(allreduce(1 << 20), group, NcclAlgorithm::kRing, Protocol::kLL);
  ASSERT_TRUE(t);
  EXPECT_NEAR(*t, 15.0 + 1048576 / (1000 * 87.7 * 8 / 14), 1e-9);
}

// NVLS's step cost (PlanOptions::nvls_step_overhead): a transfer through a reducing NVSwitch
// carries data x (1 + o / step), step = min(NCCL's chunk, 128 KiB).
TEST(NvlsStepCost, ChargesEachStepOfAtMost128KiB) {
  PlanOptions options;
  options.nvls_step_overhead = Bytes(11000);
  const Bytes mib(1 << 20);
  EXPECT_EQ(detail::nvls_step_bytes(mib, 32 << 10, options).count(),
            std::llround((1 << 20) * (1.0 + 11000.0 / 32768.0)));
  EXPECT_EQ(detail::nvls_step_bytes(mib, 128 << 10, options).count(),
            std::llround((1 << 20) * (1.0 + 11000.0 / 131072.0)));
  // NVLS-tree's 2 MiB chunk still crosses the NVLS buffers in 128 KiB steps.
  EXPECT_EQ(detail::nvls_step_bytes(mib, 2 << 20, options),
            detail::nvls_step_bytes(mib, 128 << 10, options));
  options.nvls_step_overhead = Bytes(0);
  EXPECT_EQ(detail::nvls_step_bytes(mib, 32 << 10, options), mib);
  // NCCL's NVLS chunk for K = 16 channels x 8 heads: 16 KiB up to 8 MiB, 32 KiB below 64 MiB,
  // 64 KiB below 1 GiB, 128 KiB from there.
  EXPECT_EQ(detail::nvls_chunk_bytes(4 << 20, 128), 16 << 10);
  EXPECT_EQ(detail::nvls_chunk_bytes(16 << 20, 128), 32 << 10);
  EXPECT_EQ(detail::nvls_chunk_bytes(256 << 20, 128), 64 << 10);
  EXPECT_EQ(detail::nvls_chunk_bytes(std::int64_t{1} << 30, 128), 128 << 10);
}

TEST(NvlsStepCost, InSwitchAndNvlsTreeCarryItOnTheirSwitchPhasesOnly) {
  const auto registry = builtin_algorithms();
  PlanOptions options;
  options.protocol = ProtocolChoice::kSimple;
  const auto sent = [&](std::string_view algo, const GroupShape& group, double bytes,
                        Bytes overhead) {
    options.nvls_step_overhead = overhead;
    const Plan plan =
        plan_collective(*registry.create(algo), allreduce(bytes), group, options).plan;
    return plan.bytes_sent(group.size)[0].as_double();
  };
  // In-switch, 16 MiB on 8 members: S up and S/8 up per member, chunk 32 KiB.
  const double s = 16 << 20;
  const GroupShape node = nvlink4_node(true);
  EXPECT_NEAR(sent("in-switch", node, s, Bytes(0)), s * 9 / 8, 1.0);
  // Rounding: one byte at most per transfer (4 rounds, 2 sends per round).
  EXPECT_NEAR(sent("in-switch", node, s, Bytes(11000)), s * 9 / 8 * (1 + 11000.0 / 32768.0), 8.0);
  // NVLS-tree on 2 domains of 8, 16 GiB (chunk 2 MiB, steps of 128 KiB): only the member's
  // S + S/8 through its switch grows; its tree traffic across domains does not.
  GroupShape two = GroupShape::uniform(2, 8, true);
  two.scale_up_bandwidth = BytesPerSecond::gigabytes(450);
  const double big = 16.0 * (1 << 30);
  const double grown =
      sent("nvls-tree", two, big, Bytes(11000)) - sent("nvls-tree", two, big, Bytes(0));
  EXPECT_NEAR(grown, big * 9 / 8 * 11000.0 / 131072.0, 64 * 4.0);
}

TEST(NcclTuner, AutoLabelsWhatRan) {
  // With NVLS: NVLS's latency (23 us) loses to the ring's LL on small messages and wins from
  // where lat + S/(1000 x 450 x 5/6) drops below LL128's.
  const auto registry = builtin_algorithms();
  const auto algo = registry.create("auto");
  PlanOptions options;
  options.protocol = ProtocolChoice::kAuto;
  const GroupShape group = nvlink4_node(true);
  EXPECT_EQ(plan_collective(*algo, allreduce(64 << 10), group, options).label, "ring/LL");
  EXPECT_EQ(plan_collective(*algo, allreduce(1 << 30), group, options).label, "in-switch/Simple");
  options.protocol = ProtocolChoice::kLL128;  // forced: the best algorithm for that protocol
  EXPECT_EQ(plan_collective(*algo, allreduce(1 << 30), group, options).label, "ring-fluid/LL128");
  // A forced protocol NVLS does not run is an input error.
  options.protocol = ProtocolChoice::kLL;
  EXPECT_THROW(plan_collective(*registry.create("in-switch"), allreduce(1 << 30), group, options),
               InputError);
}

TEST(PlanCollective, RefusesASizeWhosePlanWouldOverflow) {
  // fuzz_cli: an AllReduce of 9e18 bytes made the ring's 2(n-1)/n per edge overflow 2^63 into a
  // negative transfer (an internal error). Up to 1 PiB plans; above, an input error says so.
  const auto registry = builtin_algorithms();
  const GroupShape group = nvlink4_node(true);
  PlanOptions options;
  for (const char* name : {"auto", "ring", "tree", "in-switch"}) {
    EXPECT_NO_THROW(
        plan_collective(*registry.create(name), allreduce(kMaxOperationBytes), group, options))
        << name;
    EXPECT_THROW(
        plan_collective(*registry.create(name), allreduce(kMaxOperationBytes + 1), group, options),
        InputError)
        << name;
  }
  EXPECT_THROW(
      plan_collective(*registry.create("ring"), allreduce(9000000000000000000), group, options),
      InputError);
}

TEST(NcclTuner, AppliesWhereNcclRunsOnly) {
  // CloudMatrix384's NPUs run HCCL: `auto` keeps stepsim's own rules there (a 384-member ring,
  // fluid), with no NCCL protocol, and gives the same time as --proto off. The same fabric told
  // that NCCL runs on it takes NCCL's choice; a forced protocol runs NCCL's model on HCCL too.
  const auto registry = builtin_algorithms();
  const auto algo = registry.create("auto");
  const auto topo = testing::preset("cloudmatrix384");
  ASSERT_EQ(topo.collective_library(), topology::CollectiveLibrary::kHccl);
  const GroupShape hccl = group_shape(topo, place_group(topo, testing::first_ranks(384)));
  EXPECT_FALSE(hccl.nccl);
  PlanOptions options;
  options.protocol = ProtocolChoice::kAuto;
  EXPECT_EQ(plan_collective(*algo, allreduce(1 << 30), hccl, options).label, "ring-fluid");
  EXPECT_EQ(plan_collective(*algo, allreduce(64 << 10), hccl, options).label, "halving-doubling");
  options.protocol = ProtocolChoice::kSimple;
  EXPECT_EQ(
      plan_collective(*registry.create("ring-fluid"), allreduce(1 << 30), hccl, options).label,
      "ring-fluid/Simple");
  // A DGX H100 node is NCCL's (the default library), unless its topology says otherwise.
  const auto dgx = testing::preset("dgx-h100");
  EXPECT_EQ(dgx.collective_library(), topology::CollectiveLibrary::kNccl);
  options.protocol = ProtocolChoice::kAuto;
  const auto dgx_placement = place_group(dgx, testing::first_ranks(8));
  EXPECT_EQ(
      plan_collective(*algo, allreduce(64 << 10), group_shape(dgx, dgx_placement), options).label,
      "ring/LL");
  const auto told = testing::preset_yaml("{preset: dgx-h100, collective_library: hccl}");
  EXPECT_EQ(told.collective_library(), topology::CollectiveLibrary::kHccl);
  EXPECT_EQ(plan_collective(*algo, allreduce(64 << 10),
                            group_shape(told, place_group(told, testing::first_ranks(8))), options)
                .label,
            "halving-doubling");
}

TEST(NcclTuner, CollNetDirectLosesFifteenPercentOnHopperOnly) {
  // tuning.cc: CollNet Direct's bandwidth x 0.85 when minCompCap >= 90. Two SuperPOD nodes with
  // SHARP: Hopper (their NVSwitches reduce). The same group on Ampere (no NVLink SHARP, as on a
  // DGX A100) keeps the whole bandwidth, but NCCL counts its NVLinks at 20 GB/s against Hopper's
  // 20.6 (topo.h), and here the NVLinks bound CollNet's bandwidth (8 x 400G NICs carry more): the
  // time per byte is 0.85 x 20.6/20 of Hopper's.
  const auto topo = testing::preset("dgx-h100-superpod", "{nodes: 2, sharp: true}");
  const GroupShape hopper = group_shape(topo, place_group(topo, testing::first_ranks(16)));
  ASSERT_TRUE(hopper.domain_in_switch);
  ASSERT_TRUE(nccl_enabled(allreduce(1 << 30), hopper, NcclAlgorithm::kCollNetDirect));
  GroupShape ampere = hopper;
  ampere.domain_in_switch = false;
  auto per_byte = [](const GroupShape& g) {
    const auto a = nccl_predicted_time_us(allreduce(1 << 30), g, NcclAlgorithm::kCollNetDirect,
                                          Protocol::kSimple);
    const auto b = nccl_predicted_time_us(allreduce(2 << 30), g, NcclAlgorithm::kCollNetDirect,
                                          Protocol::kSimple);
    return *b - *a;
  };
  EXPECT_NEAR(per_byte(ampere) / per_byte(hopper), 0.85 * 20.6 / 20, 1e-12);
}

TEST(NcclTree, AcrossDomainsChainsInsideAndOneEdgePerChannelBetween) {
  // 2 domains of 4 (NCCL's trees over nodes): 4 channels, each running both trees (8 trees of
  // S/8), channel c leaves each domain through local member c, so between the domains each tree
  // has one edge, leader to leader, that carries its S/8 up (reduce) and S/8 down (broadcast):
  // 2·S/4 per rail, 2·S in all. Inside a domain each tree is a chain of 3 edges with S/8 each
  // way: 2 domains x 8 trees x 3 edges x 2 directions x S/8 = 12·S.
  const GroupShape group = GroupShape::uniform(2, 4);
  Operation op = allreduce(64 << 20);
  const Plan plan = builtin_algorithms().create("tree")->plan(op, group, PlanOptions{});
  const double S = op.size.as_double();
  double across = 0, inside = 0;
  std::vector<double> rail(4, 0.0);
  for (const Transfer& t : plan.transfers()) {
    if (t.is_join()) continue;
    const std::uint32_t a = t.src.member_index(), b = t.dst.member_index();
    if (group.domain[a] != group.domain[b]) {
      across += t.bytes.as_double();
      EXPECT_EQ(a % 4, b % 4) << "a tree edge between domains stays on one rail";
      rail[a % 4] += t.bytes.as_double();
    } else {
      inside += t.bytes.as_double();
    }
  }
  EXPECT_DOUBLE_EQ(across, 2 * S);
  for (double r : rail)
    EXPECT_DOUBLE_EQ(r, 2 * S / 4);
  EXPECT_DOUBLE_EQ(inside, 12 * S);
}

TEST(NcclTuner, PointToPointTakesNcclsP2pProtocol) {
  // NCCL's p2p (enqueue.cc): LL up to NCCL_P2P_LL_THRESHOLD = 16 KiB to one peer, Simple above.
  // An AllToAll of S on 8 ranks sends S/8 to each peer: 128 KiB is 16 KiB a peer (LL), 256 KiB
  // 32 KiB (Simple). LL's plan puts 2 wire bytes on the network per payload byte.
  const auto direct = builtin_algorithms().create("direct");
  PlanOptions options;
  options.protocol = ProtocolChoice::kAuto;
  Operation op;
  op.kind = CollectiveKind::kAllToAll;
  op.size = Bytes(128 << 10);
  const GroupShape group = nvlink4_node(false);
  const PlannedCollective small = plan_collective(*direct, op, group, options);
  EXPECT_EQ(small.label, "direct/LL");
  EXPECT_DOUBLE_EQ(small.plan.wire_factor(), 2.0);
  op.size = Bytes(256 << 10);
  EXPECT_EQ(plan_collective(*direct, op, group, options).label, "direct/Simple");
  options.protocol = ProtocolChoice::kOff;
  EXPECT_EQ(plan_collective(*direct, op, group, options).label, "direct");
}

}  // namespace
}  // namespace stepsim::collectives
