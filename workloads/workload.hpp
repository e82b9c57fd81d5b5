// A generated training step for every rank: the spec, the rank map with its interned groups, and
// one Program per pipeline stage (every rank of a stage runs the same program; operations name
// their group and peer relative to the rank, and Workload resolves them).
//
// An executor walks program(rank) for each rank; for a collective it finds the group with
// group(rank, op) and matches members by (group id, op.seq); for a send it finds the receiver with
// peer(rank, op) and matches (sender, receiver, op.seq) with the receiver's recv of the same tag.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/program.hpp"
#include "workloads/rank_map.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

class Workload {
 public:
  // Builds the rank map and the program of every stage. Requires a spec from parse_workload.
  explicit Workload(WorkloadSpec spec);
  // The rank map of `spec` with given stage programs (one per pipeline stage): an inference
  // server's forward pass (generate_forward_program) instead of a training step.
  Workload(WorkloadSpec spec, std::vector<Program> programs);

  const WorkloadSpec& spec() const { return spec_; }
  const RankMap& ranks() const { return ranks_; }
  int world_size() const { return ranks_.world_size(); }

  const Program& program(int rank) const {
    return programs_[static_cast<std::size_t>(ranks_.stage(rank))];
  }
  const Program& stage_program(int stage) const {
    return programs_[static_cast<std::size_t>(stage)];
  }
  // Replaces the program of a pipeline stage, for programs that do not come from the generator
  // (hand-written or edited ones: the executor's stall tests feed it mismatched operations).
  void replace_stage_program(int stage, Program program) {
    programs_.at(static_cast<std::size_t>(stage)) = std::move(program);
  }
  // The communicator of a collective (or the group a send/recv runs in).
  GroupId group(int rank, const Op& op) const { return ranks_.group(rank, op.group); }
  // The other side of a send or a receive.
  int peer(int rank, const Op& op) const;
  // AllToAllv bytes: row = sender's index in the expert group, column = receiver's.
  const std::vector<std::int64_t>& traffic_matrix(std::uint32_t index) const {
    return matrices_[index];
  }
  std::size_t memory_bytes() const;

 private:
  WorkloadSpec spec_;
  RankMap ranks_;
  std::vector<Program> programs_;
  std::vector<std::vector<std::int64_t>> matrices_;
};

}  // namespace stepsim::workloads
