// NCCL's point-to-point model (AllToAll, AllToAllv, Send/Recv): how many channels NCCL gives a
// transfer to one peer, what a channel carries, and the pipeline of chunks it moves the data in.
// Facts, each from NCCL's source (NVIDIA/nccl, src/enqueue.cc addP2pToPlan and
// scheduleP2pTasksToPlan; src/graph/paths.cc ncclTopoComputeP2pChannels and ncclTopoGetNchannels;
// src/init.cc p2pChunkSize; src/graph/topo.h SM80/SM90/SM100_NVLINK_BW):
//  - channels per peer: NCCL starts a transfer of B bytes on nChannelsMin channels (its
//    p2pnChannelsPerPeer, halved while nChannelsMin x ranks > p2pnChannels), at most one per
//    minimum part, and doubles them while a channel's part exceeds the maximum part, up to
//    p2pnChannelsPerPeer. Parts: one node, chunk/8 to 32 x chunk; across nodes chunk/2 to chunk;
//  - p2pnChannels = pow2Up(NCCL's collective channels), p2pnChannelsPerPeer = pow2Up(the fewest
//    channels to any peer): 2 per NVLink (2 x path bandwidth / NVLink bandwidth) on one node,
//    NCCL_NCHANNELS_PER_NET_PEER = 2 when the communicator spans nodes (logs: one H800 node
//    prints "16 coll channels, 16 p2p channels, 16 p2p channels per peer", NVIDIA/nccl #892; two
//    H20 nodes "8 p2p channels, 2 p2p channels per peer", #1189);
//  - chunk (p2pChunkSize): 512 KiB when every path is NVLink on one node (NCCL_P2P_NVL_CHUNKSIZE),
//    128 KiB across nodes (NCCL_P2P_NET_CHUNKSIZE);
//  - a channel is one thread block copying through the peer's FIFO: it carries about one
//    NVLink's worth, NCCL's per-link figure (20.0 GB/s Ampere, 20.6 Hopper, 40.1 Blackwell). The
//    published one-node 8x H100 sendrecv curve steps with the channel count exactly so: 79.5 GB/s
//    on 4 channels (32, 64 MiB), 162.7 on 8 (128 MiB), 299.6 on 16 (256 MiB), about 20 GB/s each
//    (validation/data/nccl_tests_other_ops.yaml, h100x8-sendrecv-32M-16G-xxrjun);
//  - Simple copies each chunk twice, into the FIFO and out of it, one chunk behind: a transfer
//    takes one chunk's copy longer than its data's drain (the pipeline's fill).
// stepsim applies it inside a scale-up domain, where NCCL's p2p channels are the limit; between
// domains the NICs are (and NCCL's per-channel network rate is not known).
#pragma once

#include <cstdint>
#include <optional>

#include "sim/collectives/plan/group_shape.hpp"
#include "sim/common/units.hpp"

namespace stepsim::collectives {

struct NcclP2pModel {
  std::uint32_t channels = 0;           // p2pnChannels
  std::uint32_t channels_per_peer = 0;  // p2pnChannelsPerPeer
  std::uint32_t ranks = 0;              // the communicator's size
  bool multi_node = false;
  Bytes chunk;                       // p2pChunkSize
  BytesPerSecond channel_bandwidth;  // what one channel carries, payload
};

// The model for a group NCCL runs with a scale-up domain of two or more members and a known
// scale-up bandwidth; nullopt otherwise (no NVLink channels to model).
std::optional<NcclP2pModel> nccl_p2p_model(const GroupShape& group);

// The channels NCCL gives a transfer of `bytes` to one peer (scheduleP2pTasksToPlan and
// addP2pToPlan): at least 1.
std::uint32_t nccl_p2p_peer_channels(const NcclP2pModel& model, std::int64_t bytes);

// What a Simple transfer of `bytes` inside a domain costs beyond its route: the payload rate its
// channels carry together, and the pipeline's fill (one chunk's copy, the part of a channel when
// smaller, at the channel's rate).
struct NcclP2pLimit {
  BytesPerSecond ceiling;
  Time fill;
};
NcclP2pLimit nccl_p2p_limit(const NcclP2pModel& model, std::int64_t bytes);

}  // namespace stepsim::collectives
