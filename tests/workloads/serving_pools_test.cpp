// Placement of the serving pools on a topology's accelerators (resolve_serving_pools): explicit
// placements and nodes first, then the lowest free accelerators; every bad placement throws an
// InputError naming the pool's key and the value.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/common/input_error.hpp"
#include "workloads/serving_spec.hpp"

namespace stepsim::workloads {
namespace {

// Two nodes of four accelerators.
const std::vector<std::vector<std::uint32_t>> kNodes = {{0, 1, 2, 3}, {4, 5, 6, 7}};

ServingPool pool(const std::string& phase, int tp = 1) {
  ServingPool p;
  p.name = "serving." + phase;
  p.location = "s.yaml:3:3";
  p.tp = tp;
  return p;
}

// The message of the InputError that resolving `spec` throws ("" when it does not).
std::string error_of(ServingSpec spec) {
  try {
    resolve_serving_pools(spec, 8, kNodes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ServingPools, ExplicitPoolsFirstThenTheLowestFreeAccelerators) {
  ServingSpec spec;
  spec.prefill = pool("prefill");
  spec.prefill->accelerators = 2;
  spec.decode = pool("decode", 2);
  spec.decode->nodes = {0};
  resolve_serving_pools(spec, 8, kNodes);
  EXPECT_FALSE(spec.colocated);
  EXPECT_EQ(spec.decode->placement, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(spec.decode->accelerators, 4);
  EXPECT_EQ(spec.prefill->placement, (std::vector<std::uint32_t>{4, 5}));
}

TEST(ServingPools, UnplacedPoolsShareEveryAccelerator) {
  ServingSpec spec;
  spec.prefill = pool("prefill");
  spec.decode = pool("decode", 4);
  resolve_serving_pools(spec, 8, kNodes);
  EXPECT_TRUE(spec.colocated);
  EXPECT_EQ(spec.prefill->accelerators, 8);
  EXPECT_EQ(spec.decode->placement.size(), 8u);
}

TEST(ServingPools, BadPlacementsNameTheKeyAndTheValue) {
  struct Case {
    std::vector<std::uint32_t> prefill_placement;
    std::vector<std::uint32_t> decode_nodes;
    int decode_accelerators;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{9},
       {},
       0,
       "s.yaml:3:3: serving.prefill.placement: accelerator 9, but the topology has 8 "
       "(0 to 7)"},
      {{1, 1}, {}, 0, "serving.prefill.placement: accelerator 1 is named twice"},
      {{4}, {1}, 0, "serving.decode.nodes: accelerator 4 is also in serving.prefill"},
      {{0}, {2}, 0, "serving.decode.nodes: node 2, but the topology has 2 (0 to 1)"},
      {{0}, {1}, 2, "serving.decode.accelerators: 2, but its nodes hold 4 accelerators"},
      {{0}, {}, 9, "serving.decode.accelerators: 9 accelerators, but the topology has 8"},
      {{0, 1, 2, 3, 4, 5, 6, 7},
       {},
       0,
       "serving.decode: needs some accelerators, but only 0 of the topology's 8 are left"},
      {{0}, {}, 6, "serving.decode: tp 4 must divide the pool's 6 accelerators"},
  };
  for (const Case& c : cases) {
    ServingSpec spec;
    spec.prefill = pool("prefill");
    spec.prefill->placement = c.prefill_placement;
    spec.decode = pool("decode", 4);
    spec.decode->nodes = c.decode_nodes;
    spec.decode->accelerators = c.decode_accelerators;
    const std::string message = error_of(spec);
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace stepsim::workloads
