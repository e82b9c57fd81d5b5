#include "workloads/gradient_buckets.hpp"

#include <cmath>

namespace stepsim::workloads {

namespace {

const OpLabel kGradientReduction{OpName::kDpGradients, Phase::kBackward, kNoLayer};
const OpLabel kParameterGather{OpName::kZeroParamGather, Phase::kOptimizer, kNoLayer};

}  // namespace

GradientBuckets::GradientBuckets(const WorkloadSpec& spec, OpGraphBuilder& graph)
    : graph_(graph),
      zero_stage_(spec.parallel.zero),
      overlap_grad_reduce_(spec.training.overlap_grad_reduce),
      bucket_bytes_(spec.training.grad_bucket.count()),
      grad_element_bytes_(element_bytes(spec.training.grad_reduce)),
      parameter_element_bytes_(element_bytes(spec.training.precision)),
      dense_group_size_(spec.parallel.dp * spec.parallel.cp),
      expert_group_size_(spec.parallel.expert_dp()) {}

void GradientBuckets::begin_backward_pass(bool reduces_gradients) {
  reducing_ = reduces_gradients;
}

void GradientBuckets::add_gradients(OpIndex producer, double parameters, bool routed_experts) {
  if (parameters <= 0 || !reducing_) return;
  if ((routed_experts ? expert_group_size_ : dense_group_size_) <= 1) return;
  OpenBucket& bucket = routed_experts ? expert_ : dense_;
  bucket.parameters += parameters;
  bucket.bytes += std::llround(parameters * static_cast<double>(grad_element_bytes_));
  bucket.last_producer = producer;
  if (bucket.bytes >= bucket_bytes_) close(routed_experts);
}

void GradientBuckets::end_backward_pass() {
  if (reducing_) {
    close(false);
    close(true);
  }
  reducing_ = false;
}

void GradientBuckets::close(bool routed_experts) {
  OpenBucket& bucket = routed_experts ? expert_ : dense_;
  if (bucket.bytes == 0) return;
  const auto parameter_bytes =
      std::llround(bucket.parameters * static_cast<double>(parameter_element_bytes_));
  closed_.push_back({bucket.bytes, parameter_bytes,
                     routed_experts ? Communicator::kExpertData : Communicator::kData});
  if (overlap_grad_reduce_) issue_reduction(closed_.back(), bucket.last_producer);
  bucket = OpenBucket{};
}

void GradientBuckets::issue_reduction(const ClosedBucket& bucket, OpIndex after) {
  const CollectiveKind kind =
      zero_stage_ == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter;
  reductions_.push_back(graph_.add_collective(kGradientReduction, kind, bucket.group,
                                              ParallelDim::kDp, bucket.bytes, {after}));
}

void GradientBuckets::issue_deferred_reductions(OpIndex last_backward_op) {
  if (overlap_grad_reduce_) return;
  for (const auto& bucket : closed_)
    issue_reduction(bucket, last_backward_op);
}

void GradientBuckets::gather_parameters_after(OpIndex optimizer_step) {
  for (const auto& bucket : closed_) {
    graph_.add_collective(kParameterGather, CollectiveKind::kAllGather, bucket.group,
                          ParallelDim::kDp, bucket.parameter_bytes, {optimizer_step});
  }
}

OpIndex gather_parameters_at_step_start(const std::vector<ClosedBucket>& buckets,
                                        OpGraphBuilder& graph) {
  OpIndex first = kNoOp;
  for (auto it = buckets.rbegin(); it != buckets.rend(); ++it) {
    const OpIndex gather =
        graph.add_collective(kParameterGather, CollectiveKind::kAllGather, it->group,
                             ParallelDim::kDp, it->parameter_bytes, {});
    if (first == kNoOp) first = gather;
  }
  return first;
}

}  // namespace stepsim::workloads
