#include "sim/run/resource_estimate.hpp"

#include <unistd.h>
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/common/input_error.hpp"
#include "workloads/workload.hpp"

namespace stepsim {

namespace {

struct Probe {
  double operations = 0;  // over all ranks
  double program_bytes = 0;
};

// The step generated with `micro_batches` per replica.
Probe probe(const workloads::WorkloadSpec& spec, std::int64_t micro_batches) {
  workloads::WorkloadSpec small = spec;
  small.training.global_batch = micro_batches * spec.training.micro_batch * spec.parallel.dp;
  const workloads::Workload workload(small);
  Probe p;
  const double ranks_per_stage =
      static_cast<double>(workload.world_size()) / static_cast<double>(spec.parallel.pp);
  for (int stage = 0; stage < spec.parallel.pp; ++stage)
    p.operations += ranks_per_stage * static_cast<double>(workload.stage_program(stage).ops.size());
  p.program_bytes = static_cast<double>(workload.memory_bytes());
  return p;
}

std::uint64_t to_count(double v) {
  return v >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(std::llround(v));
}

}  // namespace

ResourceEstimate estimate_resources(const workloads::WorkloadSpec& spec) {
  ResourceEstimate e;
  e.micro_batches = spec.micro_batches();
  const std::int64_t p = spec.parallel.pp;
  // Small steps are cheap to simulate: no estimate (it would cost as much as the step).
  if (e.micro_batches <= 4 * p) return e;
  // The probes' micro-batches: p and 2p, or 2p and 4p under DualPipe (it needs at least 2p).
  const std::int64_t base =
      spec.parallel.schedule == workloads::PipelineSchedule::kDualPipe ? 2 * p : p;
  const Probe one = probe(spec, base);
  const Probe two = probe(spec, 2 * base);
  const double extra = static_cast<double>(e.micro_batches - base) / static_cast<double>(base);
  const double operations = one.operations + extra * (two.operations - one.operations);
  const double program_bytes = one.program_bytes + extra * (two.program_bytes - one.program_bytes);
  e.operations = to_count(operations);
  const double bytes = program_bytes + operations * static_cast<double>(kExecutorBytesPerOperation);
  e.memory = Bytes(bytes >= 9.2e18 ? INT64_MAX : static_cast<std::int64_t>(bytes));
  e.seconds = operations / kOperationsPerSecond;
  e.extrapolated = true;
  return e;
}

Bytes machine_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return Bytes(0);
  return Bytes(static_cast<std::int64_t>(pages) * page_size);
}

void check_resources(const ResourceEstimate& estimate, const workloads::WorkloadSpec& spec,
                     Bytes limit, const std::string& limit_source) {
  if (!estimate.extrapolated || limit.count() <= 0 || estimate.memory <= limit) return;
  const auto& t = spec.training;
  // How many micro-batches per replica would fit, at the same cost per micro-batch.
  const double per_micro_batch =
      static_cast<double>(estimate.memory.count()) / static_cast<double>(estimate.micro_batches);
  const auto fitting =
      static_cast<std::int64_t>(static_cast<double>(limit.count()) / per_micro_batch);
  const std::int64_t fitting_batch =
      std::max<std::int64_t>(1, fitting) * t.micro_batch * spec.parallel.dp;
  std::string hint = fmt::format(
      "training.global_batch counts sequences of {} tokens; at this layout about {} sequences "
      "fit (a larger training.micro_batch also means fewer micro-batches)",
      t.seq_len, fitting_batch);
  // A million sequences is beyond any published run: the user may have meant tokens.
  if (t.global_batch >= 1'000'000) {
    hint += fmt::format("; if {} is a number of tokens, that is global_batch: {}", t.global_batch,
                        std::max<std::int64_t>(1, t.global_batch / t.seq_len));
  }
  throw InputError(fmt::format(
      "training.global_batch: {}: this step is too big to simulate here: {} micro-batches per "
      "replica, about {:.3g} operations, about {} of memory, more than {} ({}). {}; or raise "
      "the limit with --max-memory",
      t.global_batch, estimate.micro_batches, static_cast<double>(estimate.operations),
      format_bytes(estimate.memory), format_bytes(limit), limit_source, hint));
}

}  // namespace stepsim
