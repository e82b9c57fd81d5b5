// NCCL's three protocols and the constants of NCCL's own cost model, as facts taken with their
// source: NVIDIA/nccl v2.20.3 (commit b6475625), src/graph/tuning.cc (baseLat, hwLat, llMaxBws,
// the bandwidth refinements) and src/init.cc / src/include/device.h (buffer sizes: NCCL_STEPS 8,
// DEFAULT_LL_BUFFSIZE = 8 lines x 512 threads x 8 steps x 16 B, DEFAULT_LL128_BUFFSIZE = 120
// elements x 640 threads x 8 steps x 8 B, DEFAULT_BUFFSIZE 4 MiB).
//
// What a protocol costs, and how stepsim charges it inside the flow simulation (never as a closed
// form that bypasses the network; docs/collectives.md, "Protocols"):
//  - wire bytes: LL moves 16-byte lines of 8 data bytes and two 4-byte flags (2 wire bytes per
//    payload byte); LL128 128-byte lines of 120 data bytes and one 8-byte flag; Simple moves the
//    data alone. The runner multiplies every flow's bytes by this factor, so protocol overheads
//    share links like any other traffic;
//  - latency: NCCL's base latency once per operation and its hardware latency per algorithm step,
//    by link kind (NVLink inside a scale-up domain, the network across domains), added to the
//    transfers of each step besides the route's own latency;
//  - pipelining: the data a channel moves per step (a slice of the protocol's buffer), which sets
//    the chunk size of the step-by-step plans.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "sim/common/units.hpp"

namespace stepsim::collectives {

enum class Protocol : std::uint8_t { kLL, kLL128, kSimple };
inline constexpr Protocol kAllProtocols[] = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};

// "LL", "LL128", "Simple" (NCCL's names, as NCCL_PROTO takes them).
std::string_view to_string(Protocol protocol);
// Case-insensitive; nullopt for anything else.
std::optional<Protocol> parse_protocol(std::string_view text);

// Payload bytes and wire bytes of the protocol's unit of transfer.
struct ProtocolTraits {
  double wire_factor = 1.0;  // wire bytes per payload byte: LL 16/8, LL128 128/120, Simple 1
  // Payload one channel moves per pipeline step: the protocol's buffer / NCCL_STEPS, less the
  // flags (LL 512 KiB / 8 / 2 = 32 KiB; LL128 4,915,200 B / 8 x 120/128 = 576,000 B); Simple
  // pipelines by slices of 2 steps of its 4 MiB / 8 buffer (SLICESTEPS 2: 1 MiB).
  Bytes slice;
};
ProtocolTraits protocol_traits(Protocol protocol);

// NCCL's algorithms, as its cost model indexes them.
enum class NcclAlgorithm : std::uint8_t {
  kTree,
  kRing,
  kCollNetDirect,
  kCollNetChain,
  kNvls,
  kNvlsTree,
  kPat  // NCCL 2.23+ (AllGather and ReduceScatter with one GPU per node)
};
std::string_view to_string(NcclAlgorithm algorithm);

// The link kind NCCL's model charges a step at.
enum class NcclHardware : std::uint8_t { kNvlink, kPci, kNet };

// tuning.cc baseLat[algorithm][protocol]: once per operation (0 where NCCL has none).
Time nccl_base_latency(NcclAlgorithm algorithm, Protocol protocol);
// tuning.cc hwLat[hardware][algorithm][protocol]: per step.
Time nccl_hardware_latency(NcclHardware hardware, NcclAlgorithm algorithm, Protocol protocol);
// NVLink generations as NCCL's topology counts them.
enum class NvlinkGeneration : std::uint8_t { kNvlink3, kNvlink4, kNvlink5 };
// The generation of a member's scale-up links: NVLink5 from 900 GB/s a GPU (18 links of 50 GB/s;
// no earlier GPU reaches it), else NVLink4 where the group is Hopper or later (a reducing NVSwitch,
// nccl_hopper_or_later), else NVLink3.
NvlinkGeneration nvlink_generation(double scale_up_gbps, bool hopper_or_later);
// NCCL's figure for one NVLink, per direction, GB/s (src/graph/topo.h SM80_NVLINK_BW 20.0,
// SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1): NCCL builds its rings, trees and p2p channels on it.
double nccl_nvlink_gbps(NvlinkGeneration generation);
// The line rate of one such link per direction, GB/s, as a preset's scale-up bandwidth counts
// links: 25 (NVLink3, NVLink4), 50 (NVLink5).
double nvlink_line_gbps(NvlinkGeneration generation);

// Whether NCCL 2.20 runs the algorithm with the protocol at all (NVLS, NVLS-tree, CollNet and
// PAT run Simple only).
bool nccl_supports(NcclAlgorithm algorithm, Protocol protocol);

}  // namespace stepsim::collectives
