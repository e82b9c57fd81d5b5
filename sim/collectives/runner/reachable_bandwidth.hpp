// Is a fabric's bandwidth reachable with the default settings? For each tier of the network, a
// large AllReduce and AllToAll (algorithm `auto`, calibrated links, ECMP as the fabric says) over
// a group of accelerators, beside what each accelerator's links can carry. A fabric whose defaults
// reach less than half of that (a collective that uses one of seven planes, a hashed route where
// the hardware sprays) is a defect of the preset or of the algorithms, not a property of the
// hardware: `stepsim topo` prints the check and a test runs it on every preset.
//
// The tiers:
//  - scale-up: up to `max_ranks` accelerators of the first scale-up domain with two or more
//    (topology order); the reference is an accelerator's bandwidth on the links that leave it (or
//    a die it owns) for the domain's switches and the other members of the group (or their dies);
//  - scale-out: the first accelerator of each scale-up domain (of each accelerator when there are
//    no domains), up to `max_ranks`, when they have NICs; the reference is the bandwidth of the
//    links leaving their NICs for the fabric.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/units.hpp"
#include "topology/topology.hpp"

namespace stepsim::collectives {

struct ReachCheck {
  std::string tier;                // "scale-up", "scale-out"
  std::uint32_t ranks = 0;         // accelerators in the group
  BytesPerSecond per_accelerator;  // the reference, one direction, line rate (smallest member)
  BytesPerSecond allreduce_busbw;
  BytesPerSecond alltoall_busbw;
  // Both collectives reach at least half of the reference.
  bool reachable() const {
    return allreduce_busbw.value() >= 0.5 * per_accelerator.value() &&
           alltoall_busbw.value() >= 0.5 * per_accelerator.value();
  }
};

struct ReachOptions {
  Bytes size = Bytes(std::int64_t{1} << 30);
  std::uint32_t max_ranks = 64;
};

// One check per tier the topology has (none for a single accelerator).
std::vector<ReachCheck> check_reachable(const topology::Topology& topology,
                                        const ReachOptions& options = {});

}  // namespace stepsim::collectives
