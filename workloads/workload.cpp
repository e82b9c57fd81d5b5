#include "workloads/workload.hpp"

#include <stdexcept>

#include "workloads/step_generator.hpp"

namespace stepsim::workloads {

Workload::Workload(WorkloadSpec spec) : spec_(std::move(spec)), ranks_(spec_.parallel) {
  programs_.reserve(static_cast<std::size_t>(spec_.parallel.pp));
  for (int s = 0; s < spec_.parallel.pp; ++s)
    programs_.push_back(generate_stage_program(spec_, s));
  matrices_ = expert_traffic_matrices(spec_);
}

Workload::Workload(WorkloadSpec spec, std::vector<Program> programs)
    : spec_(std::move(spec)), ranks_(spec_.parallel), programs_(std::move(programs)) {
  if (programs_.size() != static_cast<std::size_t>(spec_.parallel.pp))
    throw std::logic_error("Workload needs one program per pipeline stage");
  matrices_ = expert_traffic_matrices(spec_);
}

int Workload::peer(int rank, const Op& op) const {
  const auto members = ranks_.members(ranks_.group(rank, op.group));
  const int n = static_cast<int>(members.size());
  const int me = ranks_.index_in_group(rank, op.group);
  return members[static_cast<std::size_t>(((me + op.peer_offset) % n + n) % n)];
}

std::size_t Workload::memory_bytes() const {
  std::size_t total = 0;
  for (const auto& p : programs_)
    total += p.memory_bytes();
  return total;
}

}  // namespace stepsim::workloads
