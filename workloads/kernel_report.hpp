// Every distinct kernel of a training step with its shape, FLOPs, bytes, bound, modelled time,
// efficiency and the data its time came from (`stepsim kernels SCENARIO`), so that a user can
// hold the compute model against a profiler. Built from the same layer description that the step
// generator times (layer_costs.hpp), so the table and the simulated step cannot disagree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/units.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

struct KernelRow {
  std::string operation;   // the step's operation ("qkv", "mlp_up", "optimizer_step")
  std::string kernel;      // the kernel ("qkv", "bias_gelu", "fused_attention")
  std::string pass;        // fwd, bwd (dgrad + wgrad for a GEMM)
  std::string kind;        // gemm, grouped_gemm, attention, memory
  std::string shape;       // "m=4096 n=6912 k=2304", "b=1 h=24 s=4096 d=96 causal", "bytes"
  std::int64_t count = 0;  // runs per micro-batch on one rank (layers x recomputation)
  double flops = 0;        // one run
  double bytes = 0;        // one run (memory kernels; GEMMs: the operands)
  Time time;               // one run, launch costs excluded
  double efficiency = 0;   // achieved / peak FLOP rate (compute) or / HBM bandwidth (memory)
  bool memory_bound = false;
  std::string source;  // "gemm table", "gemm model", "cuDNN fused attention", "hbm rate"
};

struct KernelReport {
  std::string device;
  bool calibrated = false;  // every kernel's data is the device's own
  std::string note;         // non-empty when the scenario's step uses the roofline
  std::string sources;      // one line per part of the model: where its numbers come from
  std::vector<KernelRow> rows;
  Time total_per_micro_batch;  // sum of count x time over the rows (optimizer excluded)
};

// The kernels of one micro-batch's forward and backward over the whole model (each layer on the
// rank of its pipeline stage), the embedding, the output layer and the optimizer step. A scenario
// whose step uses the roofline is listed with its device preset's kernel-level model (`note` says
// so); a device given by numbers has none, and that throws InputError.
KernelReport step_kernels(const WorkloadSpec& spec);

}  // namespace stepsim::workloads
