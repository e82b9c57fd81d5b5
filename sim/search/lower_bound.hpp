// A lower bound on the simulated step time of a layout, cheap enough to compute for every
// candidate of a search before any is simulated.
//
// The bound plays the step's programs (one per pipeline stage; every rank of a stage runs the same
// one) with the executor's rules and none of its waits for the network: each stream runs its
// operations in program order, one at a time; an operation starts when its stream is free and its
// dependencies are done; a send and its receive (in the neighbouring stage) start together, when
// both have been posted. Compute operations take their modelled time, exactly as in the
// simulation. A collective takes the time its least traffic needs at the accelerator's whole
// injection bandwidth (the sum of the line rates of its links, the largest over accelerators):
// every member of an AllReduce, ReduceScatter or AllToAll of S bytes over n ranks must send
// (n-1)/n x S, every member of an AllGather of S bytes must receive (n-1)/n x S, a transfer moves
// S. AllToAllv, Broadcast and Reduce count 0. Latencies count 0, and no flow ever waits for
// another.
//
// Every start in this play is no later than in the simulation (the rules are the same and each
// duration is no longer), so its last finish is a lower bound of the step time: compute plus the
// communication that cannot overlap, pipeline fill and drain included. tests/search checks it
// against the simulation on hundreds of random layouts.
#pragma once

#include "sim/common/units.hpp"
#include "topology/topology.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::search {

struct LowerBound {
  Time step;             // the bound
  Time compute;          // compute of the busiest stage (a bound by itself)
  bool stalled = false;  // the play could not match a send with its receive (then `step` is the
                         // busiest stage's own play, still a bound); tests expect false
};

// The largest injection bandwidth of an accelerator of `topology`: the sum of the line rates (or
// effective rates, where larger) of its outgoing or of its incoming links, whichever is larger.
BytesPerSecond injection_bandwidth(const topology::Topology& topology);

// Requires a spec that passed parse_workload and validate_layout.
LowerBound lower_bound(const workloads::WorkloadSpec& spec, BytesPerSecond injection);

}  // namespace stepsim::search
