#include "workloads/kernel_report.hpp"

#include <fmt/format.h>

#include <map>
#include <tuple>

#include "sim/common/input_error.hpp"
#include "workloads/layer_costs.hpp"

namespace stepsim::workloads {

namespace {

using kernels::Kernel;
using kernels::KernelKind;
using kernels::KernelPass;

std::string shape_text(const Kernel& k, KernelPass pass) {
  switch (k.kind) {
    case KernelKind::kGemm:
    case KernelKind::kGroupedGemm: {
      const int splits = pass == KernelPass::kForward ? k.forward_splits : k.dgrad_splits;
      const std::string sliced =
          splits > 1 ? fmt::format(" ({}in {} slices of m)",
                                   pass == KernelPass::kForward ? "" : "dgrad ", splits)
                     : "";
      return (k.gemm.batch > 1
                  ? fmt::format("{} x m={} n={} k={}", k.gemm.batch, k.gemm.m, k.gemm.n, k.gemm.k)
                  : fmt::format("m={} n={} k={}", k.gemm.m, k.gemm.n, k.gemm.k)) +
             sliced;
    }
    case KernelKind::kAttention: {
      const kernels::AttentionShape& a = k.attention;
      return fmt::format("b={} h={} kv={} sq={} skv={} d={}{}{}", a.batch, a.heads, a.kv_heads,
                         a.seq_q, a.seq_kv, a.head_dim_qk,
                         a.head_dim_v != a.head_dim_qk ? fmt::format("/{}", a.head_dim_v) : "",
                         a.causal ? " causal" : "");
    }
    case KernelKind::kMemory:
      return std::string(kernels::to_string(k.memory));
  }
  return {};
}

class Collector {
 public:
  explicit Collector(const ComputeModel& compute) : compute_(compute), timer_(*compute.kernels) {}

  // Adds the kernels of `cost` run `count` times per micro-batch in `pass`.
  void add(std::string_view operation, const OpCost& cost, KernelPass pass, std::int64_t count) {
    if (count <= 0) return;
    for (const Kernel& k : cost.kernels) {
      if (k.launches(pass) == 0) continue;
      const std::string shape = shape_text(k, pass);
      const auto key = std::make_tuple(std::string(operation), std::string(k.name),
                                       std::string(kernels::to_string(pass)), shape);
      auto [it, added] = rows_.try_emplace(key);
      KernelRow& row = it->second;
      if (added) {
        const kernels::KernelTiming t = timer_.time(k, pass);
        row.operation = operation;
        row.kernel = k.name;
        row.pass = kernels::to_string(pass);
        row.kind = kernels::to_string(k.kind);
        row.shape = shape;
        row.flops = t.flops;
        row.bytes = t.bytes;
        row.time = t.time;
        row.memory_bound = t.memory_bound;
        row.source = std::string(t.source);
        const double seconds = t.time.seconds();
        if (seconds > 0) {
          if (k.kind == KernelKind::kMemory) {
            row.efficiency = t.bytes / seconds / compute_.device.hbm_bandwidth.value();
          } else {
            const bool bf16 = k.kind == KernelKind::kAttention || k.bf16_only;
            const double peak = bf16 ? compute_.device.peak_flops_per_s(Precision::kBf16)
                                     : compute_.peak_flops_per_s(ComputeKind::kGemm);
            row.efficiency = peak > 0 ? t.flops / seconds / peak : 0.0;
          }
        }
      }
      row.count += count;
    }
  }

  std::vector<KernelRow> rows() const {
    std::vector<KernelRow> v;
    for (const auto& [key, row] : rows_)
      v.push_back(row);
    return v;
  }

 private:
  const ComputeModel& compute_;
  const kernels::KernelTimer& timer_;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, KernelRow> rows_;
};

// The forward (and recomputed forward) and backward of a layer's operations.
void add_layer(Collector& c, const LayerCosts& cost, const ModelSpec& model,
               const MicroBatchShape& shape, Recompute recompute, std::int64_t count) {
  const std::int64_t forward_runs = recompute == Recompute::kFull ? 2 : 1;
  const std::int64_t core_runs =
      recompute == Recompute::kFull || recompute == Recompute::kSelective ? 2 : 1;
  const std::int64_t norm_runs =
      recompute == Recompute::kNone || recompute == Recompute::kSelective ? 1 : 2;
  struct Part {
    const char* name;
    const OpCost* cost;
    std::int64_t forward;
  };
  const Part parts[] = {
      {"norm", &cost.norm, 2 * norm_runs},
      {"qkv", &cost.qkv, forward_runs},
      {"attention_core", &cost.attention_core, core_runs},
      {"attention_out", &cost.attention_out, forward_runs},
      {"mlp_up", &cost.mlp_up, forward_runs},
      {"mlp_down", &cost.mlp_down, forward_runs},
      {"router", &cost.router, forward_runs},
      {"shared_experts", &cost.shared_experts, forward_runs},
      {"experts", &cost.routed_experts, forward_runs},
  };
  for (const Part& p : parts) {
    const std::int64_t backward = p.cost == &cost.norm ? 2 : 1;
    c.add(p.name, *p.cost, KernelPass::kForward, p.forward * count);
    c.add(p.name, *p.cost, KernelPass::kBackward, backward * count);
  }
  if (recompute == Recompute::kNormAndMlaUp) {
    c.add("qkv", mla_up_projection_cost(model, shape), KernelPass::kForward, count);
  }
}

}  // namespace

KernelReport step_kernels(const WorkloadSpec& spec) {
  // A scenario on the roofline is listed with its device preset's kernel-level model.
  ComputeModel listed = spec.compute;
  std::string note;
  if (!listed.kernels) {
    listed.kernels = kernels::kernel_timer_preset(listed.device.name);
    if (!listed.kernels || listed.device.name == "custom") {
      throw InputError(fmt::format(
          "device '{}'{} has no kernel-level model to list (it is not a device preset)",
          listed.device.name, listed.device.name == "custom" ? ", given by numbers," : ""));
    }
    note = fmt::format(
        "the scenario's step is timed by the roofline; listed here: device '{}''s "
        "kernel-level model (compute.model: kernels)",
        listed.device.name);
  }
  const ComputeModel& compute = listed;
  const kernels::KernelTimer& timer = *compute.kernels;
  const MicroBatchShape shape = micro_batch_shape(spec);
  const ModelSpec& model = spec.model;
  Collector c(compute);
  // Layers of one shape (dense, MoE) share their kernels.
  std::map<bool, std::int64_t> layers_of_kind;
  std::map<bool, std::int64_t> first_of_kind;
  for (std::int64_t l = 0; l < model.layers; ++l) {
    const bool moe = model.is_moe_layer(l);
    if (layers_of_kind[moe]++ == 0) first_of_kind[moe] = l;
  }
  for (const auto& [moe, n] : layers_of_kind) {
    add_layer(c, layer_forward_costs(model, shape, first_of_kind[moe]), model, shape,
              spec.training.recompute, n);
  }
  const OpCost embedding = embedding_forward_cost(model, shape);
  c.add("embedding", embedding, KernelPass::kForward, 1);
  c.add("embedding", embedding, KernelPass::kBackward, 1);
  const HeadCosts head = head_forward_costs(model, shape);
  c.add("norm", head.final_norm, KernelPass::kForward, 1);
  c.add("norm", head.final_norm, KernelPass::kBackward, 1);
  c.add("logits", head.logits, KernelPass::kForward, 1);
  c.add("logits", head.logits, KernelPass::kBackward, 1);
  c.add("loss", head.loss, KernelPass::kForward, 2);

  KernelReport report;
  report.device = timer.device();
  report.calibrated = timer.calibrated();
  report.note = note;
  report.sources =
      fmt::format("gemm: {}\nattention: {} ({})\nmemory: {}\nlaunch: {}",
                  timer.gemm().params().source, timer.attention().rates().kernel,
                  timer.attention().rates().source, timer.memory().source, timer.launch().source);
  if (!timer.gemm_time_scale_source().empty()) {
    report.sources += "\nsustained load: " + timer.gemm_time_scale_source();
  }
  report.rows = c.rows();
  for (const KernelRow& r : report.rows)
    report.total_per_micro_batch += r.time * r.count;

  // The optimizer step over the rank's parameters (once per step).
  const ParameterCount counts = count_parameters(model);
  const ParallelLayout& p = spec.parallel;
  const double expert_total =
      counts.expert * static_cast<double>(model.moe.experts * model.moe_layers());
  double dense = (counts.total - expert_total) / (p.tp * p.pp);
  double expert = expert_total / (p.ep * p.pp);
  if (p.zero >= 1) {
    dense /= p.dp * p.cp;
    expert /= p.expert_dp();
  }
  Collector optimizer(compute);
  optimizer.add("optimizer_step", optimizer_step_cost(dense + expert, shape.element_bytes),
                KernelPass::kForward, 1);
  for (const KernelRow& r : optimizer.rows())
    report.rows.push_back(r);
  return report;
}

}  // namespace stepsim::workloads
