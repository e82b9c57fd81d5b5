// Where each global rank sits in the parallel layout, and its communicator groups.
//
// Ranks 0..world-1 are decomposed by the layout's order, innermost first (Megatron-LM's
// RankGenerator): dense groups (tensor, context, data x context, pipeline) use the sizes tp, cp,
// dp, pp; expert groups (expert, expert-data) use ep and edp = tp x cp x dp / ep, with tensor and
// context parallelism of size 1 in expert layers. Groups are interned once: a GroupId names a
// list of global ranks in ascending order (for the pipeline group, stage order; for the context
// group, ring order).
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/common/dense_id.hpp"
#include "workloads/operation.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

// An interned communicator group: dense, 0..groups-1.
using GroupId = DenseId<struct GroupTag>;

class RankMap {
 public:
  explicit RankMap(const ParallelLayout& layout);

  int world_size() const { return world_; }
  // The rank's coordinate along a dimension: tp, cp, dp, pp from the dense decomposition, ep from
  // the expert one.
  int coordinate(int rank, OrderDim dim) const;
  int stage(int rank) const { return coordinate(rank, OrderDim::kPp); }

  GroupId group(int rank, Communicator kind) const {
    return GroupId{group_of_[static_cast<std::size_t>(kind)][static_cast<std::size_t>(rank)]};
  }
  std::span<const int> members(GroupId g) const {
    return {members_.data() + offsets_[g.value()], members_.data() + offsets_[g.value() + 1]};
  }
  // The rank's position in its group of `kind`.
  int index_in_group(int rank, Communicator kind) const {
    return static_cast<int>(
        index_of_[static_cast<std::size_t>(kind)][static_cast<std::size_t>(rank)]);
  }
  Communicator kind_of(GroupId g) const { return kinds_[g.value()]; }
  std::size_t group_count() const { return kinds_.size(); }

 private:
  struct Decomposition {
    std::array<int, 5> size{};
    std::array<int, 5> stride{};
  };
  void add_groups(Communicator kind, const Decomposition& dec,
                  std::initializer_list<OrderDim> vary);

  int world_ = 0;
  Decomposition dense_;
  Decomposition expert_;
  std::array<std::vector<std::uint32_t>, static_cast<std::size_t>(Communicator::kCount)> group_of_;
  std::array<std::vector<std::uint32_t>, static_cast<std::size_t>(Communicator::kCount)> index_of_;
  std::vector<std::uint32_t> offsets_ = {0};
  std::vector<int> members_;
  std::vector<Communicator> kinds_;
};

// The scale-up domain of each member of an expert-parallel group, numbered from 0 in order of
// first appearance, given each rank's domain (WorkloadSpec::rank_domains; empty: one domain).
// Programs are shared by every expert group of a stage, so the pattern must be the same in every
// group: throws InputError otherwise, naming `where` (the parallelism section).
std::vector<int> expert_group_domains(const RankMap& ranks, const std::vector<int>& rank_domains,
                                      const std::string& where);

}  // namespace stepsim::workloads
