// What a scenario says about the training job: the model, the parallel layout, the training
// settings and the compute model, read from the scenario's `model:`, `parallelism:`, `training:`
// and `compute:` sections (docs/workloads.md gives every key).
//
// Parallel layout conventions follow Megatron-LM:
//  - world size = tp x cp x dp x pp; expert parallelism is carved out of the tp x cp x dp ranks of
//    a pipeline stage: experts are not tensor-parallel (expert TP = 1) and each expert is
//    replicated over edp = tp x cp x dp / ep ranks (the expert-data-parallel group);
//  - `order` lists the dimensions from innermost (consecutive ranks) to outermost; the default
//    "tp-cp-ep-dp-pp" is Megatron's. Dense groups use the order without ep, expert groups the
//    order without cp (with tp of size 1), as Megatron's RankGenerator does.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/config.hpp"
#include "sim/common/units.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/device.hpp"
#include "workloads/model.hpp"

namespace stepsim::workloads {

enum class PipelineSchedule : std::uint8_t { kGpipe, kOneFOneB, kInterleaved, kDualPipe };
enum class CpMode : std::uint8_t { kRing, kUlysses };
// What the backward recomputes instead of storing: nothing; the attention core (selective,
// Korthikanti et al.); every layer's forward (full); or the norms and MLA up-projections
// (norm_and_mla_up: DeepSeek-V3, arXiv 2412.19437 section 3.3).
enum class Recompute : std::uint8_t { kNone, kSelective, kFull, kNormAndMlaUp };
// The parallel dimensions of the rank order.
enum class OrderDim : std::uint8_t { kTp, kCp, kEp, kDp, kPp };

struct ParallelLayout {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int ep = 1;
  int cp = 1;
  bool sp = false;  // Megatron sequence parallelism (meaningful with tp > 1)
  // Megatron-LM's --tp-comm-overlap (Transformer Engine userbuffers): each SP AllGather runs
  // alongside the GEMM that consumes it and each ReduceScatter alongside the GEMM that produces
  // it, chunk by chunk, so a pair takes about max(GEMM, communication). Needs sp.
  bool tp_comm_overlap = false;
  int vpp = 1;   // model chunks per pipeline rank (virtual pipeline stages)
  int zero = 0;  // 0: DDP; 1: optimizer states sharded (Megatron's distributed optimizer);
                 // 2: + gradients; 3: + parameters (FSDP)
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  // DualPipe's overlapped forward-and-backward chunks (arXiv 2412.19437 section 3.2.1, figure 4):
  // true interleaves each such pair layer by layer, so that one chunk's expert all-to-alls run
  // beside the other chunk's attention and MLP; false issues the forward, then the backward.
  bool dualpipe_overlap = true;
  // The share of the device's multiprocessors that the expert all-to-all kernels hold while they
  // overlap compute in such a pair: 20 of the H800's 132 (section 3.2.2). The GEMMs and attention
  // kernels of an overlapped pair with an all-to-all run 1 / (1 - share) times longer.
  double dualpipe_comm_sm_share = 20.0 / 132.0;
  CpMode cp_mode = CpMode::kRing;
  std::array<OrderDim, 5> order = {OrderDim::kTp, OrderDim::kCp, OrderDim::kEp, OrderDim::kDp,
                                   OrderDim::kPp};

  int world_size() const { return tp * cp * dp * pp; }
  int expert_dp() const { return tp * cp * dp / ep; }
  bool sequence_parallel() const { return sp && tp > 1; }
};

struct TrainingConfig {
  std::int64_t seq_len = 0;
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 0;
  Precision precision = Precision::kBf16;
  Recompute recompute = Recompute::kNone;
  Bytes grad_bucket = Bytes(25'000'000);
  // The precision gradients are accumulated and reduced in over data parallelism
  // (training.grad_reduce_dtype). Default: the weights' precision (BF16 for BF16 and FP8
  // training). Megatron-LM reduces BF16 training's gradients in FP32 main grads unless told
  // otherwise ("accumulate and all-reduce gradients in fp32 for bfloat16 data type",
  // megatron/training/arguments.py; --grad-reduce-in-bf16 since 2025): `fp32` models that.
  // ZeRO's parameter gathers move the weights' precision whatever this is.
  Precision grad_reduce = Precision::kBf16;
  bool overlap_grad_reduce = true;  // false: gradient collectives wait for the whole backward
  // ZeRO-1/2 (Megatron's --overlap-param-gather): the parameter AllGather after the optimizer
  // runs during the next step's forward; simulated in steady state as gathers at the start of
  // the step that only the first forward waits for. ZeRO-3: the gathers are prefetched a layer
  // ahead. false: ZeRO-1/2 gather after the optimizer; ZeRO-3 gathers just in time.
  bool overlap_param_gather = true;
  double routing_skew = 0.0;  // 0: uniform routing; s > 0: expert e gets tokens ~ (e+1)^-s
};

struct WorkloadSpec {
  ModelSpec model;
  ParallelLayout parallel;
  TrainingConfig training;
  ComputeModel compute;
  std::string parallelism_location;  // "scenario.yaml:12:3", for messages of validate_layout
  // The scale-up domain (NVLink node, supernode) of each rank, numbered from 0, from the topology
  // (rank r runs on its accelerator r); empty: one domain for all. Node-limited routing and the
  // relayed dispatch group experts by it.
  std::vector<int> rank_domains;

  // Micro-batches per step on each data-parallel replica.
  std::int64_t micro_batches() const {
    return training.global_batch / (training.micro_batch * parallel.dp);
  }
  // Tokens per step over the whole job.
  std::int64_t tokens_per_step() const { return training.global_batch * training.seq_len; }
};

// Reads `model:`, `parallelism:`, `training:` and `compute:` from the scenario root (other
// top-level keys are the caller's business) and checks everything that does not depend on the
// topology. Throws InputError naming the key and the reason for every impossible layout.
WorkloadSpec parse_workload(const config::Node& scenario_root);

// Reads a `model:` value: a preset name, {preset: name, <overrides>} or a full inline model.
ModelSpec parse_model(const config::Node& model);

// Checks the layout against the topology: the product tp x cp x dp x pp must equal the number of
// accelerators. Throws InputError naming `parallelism` and both numbers.
void validate_layout(const WorkloadSpec& spec, int world_size);

// The checks of a model against its tensor and expert parallelism that training and serving share:
// tp divides the MLP, ep needs a mixture-of-experts model and divides its experts. Each error
// names the key (`tp`, `ep`) in the section `n`, or `n` itself when the key is absent.
void check_model_split(const config::Node& n, const ModelSpec& m, int tp, int ep);

// Layers of each virtual pipeline stage (pp x vpp of them, in model order); spreads a remainder
// over the first stages. Megatron-LM requires even division; uneven counts (Llama 3 405B's 126
// layers on 16 stages) are allowed here as long as no stage is empty.
std::vector<std::int64_t> layers_per_virtual_stage(std::int64_t layers, int stages);

std::string_view to_string(PipelineSchedule s);
std::string_view to_string(Recompute r);

}  // namespace stepsim::workloads
