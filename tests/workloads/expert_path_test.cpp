// The MoE path: router, dispatch, shared and routed experts, combine, forward and backward, with
// all-to-alls of the rank's routed tokens (T x top-k x h elements) on the expert communicator.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/workloads/workload_of.hpp"
#include "workloads/expert_path.hpp"
#include "workloads/step_generator.hpp"

namespace stepsim::workloads {
namespace {

// Layers 1 to 3 are MoE: 8 experts, top-2, one shared expert.
const char* kMoe =
    "{layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096, gated_mlp: true,\n"
    " moe: {experts: 8, top_k: 2, expert_ffn: 2048, dense_layers: 1, shared_experts: 1}}";
// T = 1024 tokens x top-2 x h = 1024 x 2 bytes.
constexpr std::int64_t kAllToAllBytes = 1024 * 2 * 1024 * 2;

WorkloadSpec spec_of(const std::string& parallelism, const std::string& extra = "") {
  return workload_of(kMoe, parallelism,
                     "{seq_len: 1024, micro_batch: 1, global_batch: 8" + extra + "}");
}

// The parts an ExpertPath adds operations with.
struct Parts {
  explicit Parts(const WorkloadSpec& spec)
      : shape(micro_batch_shape(spec)),
        compute(spec, graph, false),
        gradients(spec, 0, 2, graph, compute),
        figures(spec, shape),
        experts(spec, shape, graph, compute, gradients) {}
  MicroBatchShape shape;
  OpGraphBuilder graph;
  StageCompute compute;
  GradientPath gradients;
  LayerFigureCache figures;
  ExpertPath experts;
};

OpIndex add_norm(OpGraphBuilder& graph) {
  return graph.add_compute({OpName::kNorm, Phase::kForward, 1}, ComputeKind::kElementwise, 0, 0,
                           Time::zero(), {});
}

TEST(ExpertPath, ForwardRoutesDispatchesComputesAndCombines) {
  const auto spec = spec_of("{ep: 4, dp: 4}");
  Parts parts(spec);
  const LayerFigures& f = parts.figures.of(1);
  const OpIndex norm = add_norm(parts.graph);
  const OpIndex dispatch = parts.experts.route_and_dispatch(Phase::kForward, 1, f, norm);
  const Frontier out = parts.experts.experts_forward(Phase::kForward, 1, f, norm, dispatch);
  const Program p = parts.graph.take_program();
  // norm, router, dispatch, shared experts, routed experts, combine
  ASSERT_EQ(p.ops.size(), 6u);
  EXPECT_EQ(p.ops[1].name, OpName::kRouter);
  EXPECT_EQ(p.ops[dispatch].name, OpName::kEpDispatch);
  EXPECT_EQ(p.deps_of(p.ops[dispatch])[0], 1u);
  EXPECT_EQ(p.ops[out.side].name, OpName::kSharedExperts);
  EXPECT_EQ(p.deps_of(p.ops[out.side])[0], norm);  // beside the dispatch
  EXPECT_EQ(p.ops[4].compute, ComputeKind::kGroupedGemm);
  EXPECT_EQ(p.deps_of(p.ops[4])[0], dispatch);
  EXPECT_EQ(p.ops[out.main].name, OpName::kEpCombine);
  for (const OpIndex a2a : {dispatch, out.main}) {
    EXPECT_EQ(p.ops[a2a].collective, CollectiveKind::kAllToAll);
    EXPECT_EQ(p.ops[a2a].group, Communicator::kExpert);
    EXPECT_EQ(p.ops[a2a].bytes, kAllToAllBytes);
    EXPECT_EQ(p.ops[a2a].matrix, kNoMatrix);
  }
}

TEST(ExpertPath, BackwardRunsTheAllToAllsInReverseAndReducesExpertGradientsApart) {
  // ep 2 of dp 4: each expert is replicated on 2 ranks, which reduce its gradients.
  const auto spec = spec_of("{ep: 2, dp: 4}");
  Parts parts(spec);
  const LayerFigures& f = parts.figures.of(1);
  StagePass pass;
  pass.forward = false;
  pass.reduces_gradients = true;
  parts.gradients.begin_backward(pass);
  const Frontier in{add_norm(parts.graph), kNoOp};
  const OpIndex combine = parts.experts.combine_backward(1, in.main);
  const Frontier experts = parts.experts.experts_backward(1, f, combine, in, in, {});
  const OpIndex norm = parts.experts.router_backward(1, f, experts);
  parts.gradients.end_backward(norm);
  const Program p = parts.graph.take_program();
  EXPECT_EQ(p.ops[combine].name, OpName::kEpCombine);
  EXPECT_EQ(p.ops[combine].phase, Phase::kBackward);
  EXPECT_EQ(p.ops[experts.main].name, OpName::kEpDispatch);
  EXPECT_EQ(p.ops[experts.main].bytes, kAllToAllBytes);
  EXPECT_EQ(p.ops[experts.side].name, OpName::kSharedExperts);
  EXPECT_EQ(p.ops[norm].name, OpName::kNorm);
  // The routed experts' gradients over the expert-data-parallel group, the rest over the data-
  // parallel group.
  std::int64_t expert_bytes = 0;
  std::int64_t dense_bytes = 0;
  for (const Op& op : p.ops) {
    if (op.name != OpName::kDpGradients) continue;
    (op.group == Communicator::kExpertData ? expert_bytes : dense_bytes) += op.bytes;
  }
  EXPECT_EQ(expert_bytes, std::llround(f.parameters.routed_experts * 2));
  EXPECT_EQ(dense_bytes,
            std::llround(f.parameters.shared_experts * 2) + std::llround(f.parameters.router * 2));
}

TEST(ExpertPath, SkewedRoutingUsesTheDispatchAndCombineMatrices) {
  const auto spec = spec_of("{ep: 4, dp: 4}", ", routing_skew: 1.0");
  Parts parts(spec);
  const LayerFigures& f = parts.figures.of(1);
  const OpIndex norm = add_norm(parts.graph);
  const OpIndex dispatch = parts.experts.route_and_dispatch(Phase::kForward, 1, f, norm);
  const Frontier out = parts.experts.experts_forward(Phase::kForward, 1, f, norm, dispatch);
  const OpIndex combine_back = parts.experts.combine_backward(1, out.main);
  const Program p = parts.graph.take_program();
  EXPECT_EQ(p.ops[dispatch].collective, CollectiveKind::kAllToAllv);
  EXPECT_EQ(p.ops[dispatch].matrix, 0u);
  EXPECT_EQ(p.ops[out.main].matrix, 1u);
  EXPECT_EQ(p.ops[combine_back].matrix, 0u);  // the combine's backward moves the dispatch's way
  EXPECT_EQ(expert_traffic_matrices(spec).size(), 2u);
}

TEST(ExpertPath, NoAllToAllAtEp1) {
  const auto spec = spec_of("{dp: 4}");
  Parts parts(spec);
  const OpIndex norm = add_norm(parts.graph);
  const OpIndex router =
      parts.experts.route_and_dispatch(Phase::kForward, 1, parts.figures.of(1), norm);
  const Program p = parts.graph.take_program();
  EXPECT_EQ(p.ops[router].name, OpName::kRouter);
  EXPECT_EQ(p.ops.size(), 2u);
}

TEST(ExpertPath, AStepHasFourAllToAllsOfTkhPerMoeLayerAndMicroBatch) {
  // 3 MoE layers, 2 micro-batches (global batch 8 over dp 4).
  const Program p = generate_stage_program(spec_of("{ep: 4, dp: 4}"), 0);
  int all_to_alls = 0;
  for (const Op& op : p.ops) {
    if (op.group != Communicator::kExpert) continue;
    ++all_to_alls;
    EXPECT_EQ(op.bytes, kAllToAllBytes);
  }
  EXPECT_EQ(all_to_alls, 3 * 2 * 4);
}

}  // namespace
}  // namespace stepsim::workloads
