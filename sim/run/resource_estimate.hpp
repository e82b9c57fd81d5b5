// What a simulated training step will need, estimated before the step is generated: a scenario
// with a billion sequences must be refused at once with the figures, not end in std::bad_alloc
// after minutes (docs/reliability.md, "Resource guards").
//
// The generator's output grows linearly with the number of micro-batches: every micro-batch adds
// the same forward, backward and communication operations to each stage. The estimate generates
// the step twice at small scale (p and 2p micro-batches per replica, p the pipeline depth, so that
// every schedule accepts them) and extrapolates to the scenario's count. Memory is the programs'
// size extrapolated the same way, plus the executor's state per operation (a constant measured on
// the examples, docs/reliability.md).
#pragma once

#include <cstdint>
#include <string>

#include "sim/common/units.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim {

struct ResourceEstimate {
  std::int64_t micro_batches = 0;  // per data-parallel replica
  std::uint64_t operations = 0;    // operations of the step over all ranks
  Bytes memory;                    // peak memory of the simulation
  double seconds = 0;              // wall-clock time at kOperationsPerSecond
  bool extrapolated = false;       // false: small enough that no estimate was made
};

// Memory beyond the programs per operation of the step (over all ranks), and the rate at which
// operations are simulated: measured on examples/quickstart.yaml and
// examples/llama3-70b-superpod.yaml with larger global batches (docs/reliability.md, "Resource
// guards"); the byte figure is rounded up from the larger of the two, so the estimate errs high.
inline constexpr std::int64_t kExecutorBytesPerOperation = 6;
inline constexpr double kOperationsPerSecond = 2.5e6;

ResourceEstimate estimate_resources(const workloads::WorkloadSpec& spec);

// The memory this machine has (physical memory), or 0 when the system does not say.
Bytes machine_memory();

// Throws InputError when `estimate` needs more than `limit`: the estimate, the limit, and what to
// change (fewer micro-batches: a smaller global batch or a larger micro-batch; --max-memory).
void check_resources(const ResourceEstimate& estimate, const workloads::WorkloadSpec& spec,
                     Bytes limit, const std::string& limit_source);

}  // namespace stepsim
