// The "mesh" algorithm on full meshes of direct links, and the detection of such meshes
// (mesh_detection.hpp, GroupShape::mesh).
//
// Closed forms (mesh_algorithm.cpp): every dimension of size m, link bandwidth B per direction and
// latency L, n = m^d members, L_m = d(m-1) links per member, per-step latency a = step latency +
// L, operation latency o once:
//   AllReduce  o + 2d·a + 2(n-1)/n·S/(L_m·B);  AllGather, ReduceScatter  o + d·a +
//   (n-1)/n·S/(L_m·B).
// The flow network rounds each drain up to a picosecond, hence the 1e-6 tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/collectives/runner/placement.hpp"
#include "test_topologies.hpp"

namespace stepsim::collectives {
namespace {

using testing::first_ranks;

const BytesPerSecond kB = BytesPerSecond::gigabytes(100);
const Time kL = Time::ns(100);
const Time kStep = Time::ns(400);
const Time kOp = Time::us(3);
constexpr std::int64_t kMiB = std::int64_t{1} << 20;

PlanOptions options() {
  PlanOptions o;
  o.step_latency = kStep;
  o.op_latency = kOp;
  return o;
}

std::vector<std::uint32_t> ranks(std::initializer_list<std::uint32_t> list) {
  return list;
}

GroupShape shape_of(const topology::Topology& topo, const std::vector<std::uint32_t>& r) {
  return group_shape(topo, place_group(topo, r));
}

Operation op_of(CollectiveKind kind, std::int64_t bytes) {
  Operation op;
  op.kind = kind;
  op.size = Bytes(bytes);
  return op;
}

// Runs `algo` on all accelerators of `topo`; returns the time in seconds.
double simulate(CollectiveSession& session, std::string_view algo, CollectiveKind kind,
                std::int64_t bytes, const PlanOptions& plan_options = options()) {
  const auto& topo = session.topology();
  const Placement placement =
      place_group(topo, first_ranks(static_cast<std::uint32_t>(topo.accelerators().size())));
  return session
      .run(*builtin_algorithms().create(algo), op_of(kind, bytes), placement, plan_options)
      .seconds();
}

void expect_close(double simulated, double expected) {
  EXPECT_NEAR(simulated, expected, expected * 1e-6)
      << "simulated " << simulated * 1e6 << " us, closed form " << expected * 1e6 << " us";
}

const double o = kOp.seconds(), B = kB.value();
const double a = kStep.seconds() + kL.seconds();  // every transfer crosses one direct link

TEST(MeshAlgorithm, AllReduceClosedFormOnThreeByThree) {
  // m = 3, d = 2, n = 9, L_m = 4; S = 72 MiB divides into 2 parts and 9 pieces:
  // o + 4a + 2·(8/9)·S/(4B).
  const double n = 9, links = 4, S = 72.0 * kMiB;
  const double expected = o + 2 * 2 * a + 2 * (n - 1) / n * S / (links * B);
  const auto topo = testing::mesh_grid({3, 3}, kB, kL);
  CollectiveSession session(topo, line_rate_presets());
  expect_close(simulate(session, "mesh", CollectiveKind::kAllReduce, 72 * kMiB), expected);
}

TEST(MeshAlgorithm, AllGatherAndReduceScatterClosedFormOnThreeDimensions) {
  // m = 2, d = 3, n = 8, L_m = 3 (a cube); S = 24 MiB divides into 3 parts and 8 pieces:
  // o + 3a + (7/8)·S/(3B).
  const double n = 8, links = 3, S = 24.0 * kMiB;
  const double expected = o + 3 * a + (n - 1) / n * S / (links * B);
  const auto topo = testing::mesh_grid({2, 2, 2}, kB, kL);
  CollectiveSession session(topo, line_rate_presets());
  expect_close(simulate(session, "mesh", CollectiveKind::kAllGather, 24 * kMiB), expected);
  CollectiveSession again(topo, line_rate_presets());
  expect_close(simulate(again, "mesh", CollectiveKind::kReduceScatter, 24 * kMiB), expected);
}

TEST(MeshAlgorithm, OneLineIsADirectReduceScatterAndAllGather) {
  // d = 1, n = m = 6, L_m = 5: o + 2a + 2S/(nB), the direct algorithm's figure on a full mesh.
  const double n = 6, S = 6.0 * kMiB;
  const double expected = o + 2 * a + 2 * S / (n * B);
  const auto topo = testing::mesh(6, kB, kL);
  CollectiveSession session(topo, line_rate_presets());
  expect_close(simulate(session, "mesh", CollectiveKind::kAllReduce, 6 * kMiB), expected);
}

TEST(MeshAlgorithm, EveryMeshLinkCarriesItsShare) {
  // 3 x 3, AllReduce of S: at reduce-scatter step s the part on a dimension sends S/(d·m^(s+1))
  // over each of its links; at every step each dimension carries one part, so every directed
  // link carries 2·(S/6 + S/18) = 4S/9, and no link carries more (the load is even).
  const auto topo = testing::mesh_grid({3, 3}, kB, kL);
  CollectiveSession session(topo, line_rate_presets());
  const double S = 72.0 * kMiB;
  simulate(session, "mesh", CollectiveKind::kAllReduce, 72 * kMiB);
  ASSERT_EQ(topo.num_links(), 9u * 4);
  for (std::uint32_t l = 0; l < topo.num_links(); ++l) {
    const double carried = session.network().link_statistics(engine::LinkId{l}).bytes_carried;
    EXPECT_NEAR(carried, 4 * S / 9, 1.0) << topo.describe(topology::LinkIndex(l));
  }
}

TEST(MeshAlgorithm, UnequalDimensionsShareTheLoadEvenly) {
  // 2 x 4 (one X link and three Y links per member). Equal parts would put S/4 + S/16 on an X
  // link and S/8 + S/16 on a Y link per reduce-scatter; the parts are weighed instead (1 : 3 for
  // the part that starts on X and the one that starts on Y) so that every link carries the same
  // bytes: each member's (n-1)/n·S over its 4 links, 7S/32 per link and phase, 7S/16 for an
  // AllReduce.
  const auto topo = testing::mesh_grid({2, 4}, kB, kL);
  CollectiveSession session(topo, line_rate_presets());
  const double S = 64.0 * kMiB;
  simulate(session, "mesh", CollectiveKind::kAllReduce, 64 * kMiB);
  for (std::uint32_t l = 0; l < topo.num_links(); ++l) {
    const double carried = session.network().link_statistics(engine::LinkId{l}).bytes_carried;
    EXPECT_NEAR(carried, 7 * S / 16, 64.0) << topo.describe(topology::LinkIndex(l));
  }
}

TEST(MeshAlgorithm, UbMeshRackUsesAllItsLinksNearTheirRate) {
  // 64 NPUs, 8 x 8, 14 links of 28 GB/s each (392 GB/s per NPU); the CLI's calibrated presets
  // leave UB links at line rate. Closed form: 2(n-1)/n·S/(14·28 GB/s) plus 4 steps of latency,
  // so the bus bandwidth is close to 392 GB/s; the issue asks for at least 70% (275 GB/s).
  const auto topo = testing::preset("ub-mesh-rack");
  CollectiveSession session(topo, calibrated_presets());
  const PlanOptions plan_options = calibrated_presets().plan_options();
  const std::int64_t S = 1024 * kMiB;
  const double t = simulate(session, "auto", CollectiveKind::kAllReduce, S, plan_options);
  const double busbw = static_cast<double>(S) / t * 2 * 63 / 64;
  EXPECT_GT(busbw, 0.98 * 392e9) << "busbw " << busbw * 1e-9 << " GB/s";
  for (std::uint32_t l = 0; l < topo.num_links(); ++l)
    EXPECT_GT(session.network().link_statistics(engine::LinkId{l}).bytes_carried, 0.0)
        << topo.describe(topology::LinkIndex(l));
}

TEST(MeshDetection, FindsTheRackAndItsSubGrids) {
  const auto topo = testing::preset("ub-mesh-rack");  // npu x.y is rank 8x + y
  const GroupShape whole = shape_of(topo, first_ranks(64));
  ASSERT_TRUE(whole.mesh);
  EXPECT_EQ(whole.mesh->sizes, (std::vector<std::uint32_t>{8, 8}));
  // Dimensions in link class order: ub-x (coordinate x), then ub-y.
  EXPECT_EQ(whole.mesh->coordinate(8 * 5 + 3, 0), 5u);
  EXPECT_EQ(whole.mesh->coordinate(8 * 5 + 3, 1), 3u);

  // A 2 x 4 block: x in {0, 1}, y in {0..3}.
  const GroupShape block = shape_of(topo, ranks({0, 1, 2, 3, 8, 9, 10, 11}));
  ASSERT_TRUE(block.mesh);
  EXPECT_EQ(block.mesh->sizes, (std::vector<std::uint32_t>{2, 4}));
  EXPECT_EQ(block.mesh->coordinate(6, 0), 1u);  // member 6 is rank 10 = npu1.2
  EXPECT_EQ(block.mesh->coordinate(6, 1), 2u);
  const auto lines = block.mesh->lines(1);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], (std::vector<std::uint32_t>{4, 5, 6, 7}));

  // One row, one dimension; a column given in a shuffled order.
  const GroupShape row = shape_of(topo, first_ranks(8));
  ASSERT_TRUE(row.mesh);
  EXPECT_EQ(row.mesh->sizes, (std::vector<std::uint32_t>{8}));
  const GroupShape column = shape_of(topo, ranks({56, 8, 0, 24, 16, 48, 32, 40}));
  ASSERT_TRUE(column.mesh);
  EXPECT_EQ(column.mesh->sizes, (std::vector<std::uint32_t>{8}));
  EXPECT_EQ(column.mesh->lines(0).front(), (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(MeshDetection, FindsThePodsFourDimensions) {
  const auto topo = testing::preset("ub-mesh-pod");
  const GroupShape pod = shape_of(topo, first_ranks(1024));
  ASSERT_TRUE(pod.mesh);
  EXPECT_EQ(pod.mesh->sizes, (std::vector<std::uint32_t>{8, 8, 4, 4}));
}

TEST(MeshDetection, RejectsGroupsThatAreNoMesh) {
  const auto rack = testing::preset("ub-mesh-rack");
  // 0-1 share a row, 1-9 a column, but 0 and 9 have no direct link.
  EXPECT_FALSE(shape_of(rack, ranks({0, 1, 9})).mesh);
  // A row and a half: 8 + 4 members is no grid.
  EXPECT_FALSE(shape_of(rack, first_ranks(12)).mesh);
  // An L shape of 3 x 3 minus a corner... (8 members of a 3 x 3 block).
  EXPECT_FALSE(shape_of(rack, ranks({0, 1, 2, 8, 9, 10, 16, 17})).mesh);
  // No direct links at all (a switch), and rings longer than 3 (a torus).
  const auto star = testing::star(8, kB, kL);
  EXPECT_FALSE(shape_of(star, first_ranks(8)).mesh);
  const auto torus = testing::preset("torus", "{dims: [4, 4]}");
  EXPECT_FALSE(shape_of(torus, first_ranks(16)).mesh);

  // Not a mesh: the algorithm says why, and auto falls back to the other rules.
  const auto registry = builtin_algorithms();
  const GroupShape g = shape_of(rack, ranks({0, 1, 9}));
  const auto why = registry.create("mesh")->unsupported(op_of(CollectiveKind::kAllReduce, kMiB), g);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("not a full mesh"), std::string::npos) << *why;
  EXPECT_EQ(registry.create("auto")->resolve(op_of(CollectiveKind::kAllReduce, 64 * kMiB), g),
            "ring-fluid");
  // On a mesh, operations other than AllReduce, AllGather and ReduceScatter are not the mesh's.
  EXPECT_TRUE(registry.create("mesh")->unsupported(op_of(CollectiveKind::kAllToAll, kMiB),
                                                   shape_of(rack, first_ranks(64))));
}

TEST(MeshDetection, FindsTheDimensionsBuildersFullMeshes) {
  // 4 (full mesh) x 3 (full mesh) x 2 (switch): rank r at (r mod 4, (r / 4) mod 3, r / 12).
  const auto topo =
      testing::preset("dimensions",
                      "{dims: [{size: 4, topology: full-mesh}, {size: 3, topology: full-mesh},"
                      " {size: 2, topology: switch}]}");
  // The first 12 ranks (switch coordinate 0) are a 4 x 3 full mesh.
  const GroupShape grid = shape_of(topo, first_ranks(12));
  ASSERT_TRUE(grid.mesh);
  EXPECT_EQ(grid.mesh->sizes, (std::vector<std::uint32_t>{4, 3}));
  for (std::uint32_t r = 0; r < 12; ++r) {
    EXPECT_EQ(grid.mesh->coordinate(r, 0), r % 4) << r;
    EXPECT_EQ(grid.mesh->coordinate(r, 1), r / 4) << r;
  }
  // All 24: the switch dimension has no direct links, so no mesh.
  EXPECT_FALSE(shape_of(topo, first_ranks(24)).mesh);
}

TEST(MeshAuto, ChoosesTheMeshOnFullMeshes) {
  const auto registry = builtin_algorithms();
  const auto algo = registry.create("auto");
  const auto rack = testing::preset("ub-mesh-rack");
  const GroupShape all = shape_of(rack, first_ranks(64));
  // At every size: 2d steps and every link beat halving-doubling's 2·log2(n) steps on one link.
  for (CollectiveKind kind :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter})
    for (std::int64_t bytes : {std::int64_t{1024}, kMiB, 1024 * kMiB})
      EXPECT_EQ(algo->resolve(op_of(kind, bytes), all), "mesh") << to_string(kind) << bytes;
  // Other operations keep their rules.
  EXPECT_EQ(algo->resolve(op_of(CollectiveKind::kAllToAll, kMiB), all), "direct");
  // A single line of more than 2 members is a mesh; of 2 it is one link, left to the ring.
  EXPECT_EQ(
      algo->resolve(op_of(CollectiveKind::kAllReduce, 64 * kMiB), shape_of(rack, first_ranks(3))),
      "mesh");
  EXPECT_EQ(
      algo->resolve(op_of(CollectiveKind::kAllReduce, 64 * kMiB), shape_of(rack, first_ranks(2))),
      "ring-fluid");
  // A 2 x 2 block: two dimensions of 2.
  EXPECT_EQ(algo->resolve(op_of(CollectiveKind::kAllReduce, 64 * kMiB),
                          shape_of(rack, ranks({0, 1, 8, 9}))),
            "mesh");
}

}  // namespace
}  // namespace stepsim::collectives
