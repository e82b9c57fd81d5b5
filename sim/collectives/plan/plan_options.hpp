// Parameters every algorithm takes when it builds a plan: the software latencies it charges and
// how it cuts data into chunks and channels.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/common/units.hpp"

namespace stepsim::collectives {

// Bounds on what a user may set, the same in a scenario's `network:` section and on the command
// line: software latencies are microseconds in practice, and latency x steps must stay within the
// clock; more channels than this only multiply transfers.
inline constexpr Time kMaxSoftwareLatency = Time::ms(1000);
inline constexpr std::uint32_t kMaxChannels = 1024;

// NCCL's protocol model (protocol.hpp, nccl_tuner.hpp). kOff: the latencies and chunk size of
// PlanOptions as given and no wire overheads (closed forms, `--links line-rate`). kAuto: NCCL's
// tuner picks the protocol for the algorithm (and `auto` the algorithm too) by its predicted time.
// kLL, kLL128, kSimple: that protocol, forced (`--proto`, NCCL_PROTO).
enum class ProtocolChoice : std::uint8_t { kOff, kAuto, kLL, kLL128, kSimple };

// NCCL versions as NCCL codes them (major x 10000 + minor x 100 + patch). The tuner's model is
// 2.20.3's (nccl_tuner.hpp); from 2.23 NCCL's `auto` also has PAT (AllGather and ReduceScatter
// at one GPU per node).
inline constexpr std::uint32_t kNcclModelVersion = 22003;
inline constexpr std::uint32_t kNcclPatVersion = 22300;

struct PlanOptions {
  // Software and protocol overhead of one algorithm step (one send/receive round of a ring, one
  // level of a tree), added to every transfer's latency besides the route's own latency.
  Time step_latency = Time::ns(500);
  // The same for a step between two scale-up domains (over the network); nullopt: step_latency.
  // Set by the protocol model to NCCL's network hardware latency.
  std::optional<Time> net_step_latency;
  // Launch overhead of the whole operation, charged once on the transfers that start it.
  Time op_latency = Time::us(5);
  // Pipelining granularity of the step-by-step forms (ring, tree): data is cut into chunks of at
  // most this size, chunk c of step k+1 waiting only for chunk c of step k.
  Bytes chunk_size = Bytes(1 << 20);
  // Upper bound on chunks per step, so plan size stays bounded for huge buffers.
  std::uint32_t max_chunks = 64;
  // Parallel rings (NCCL channels), each carrying an equal share. 0: one per member of a scale-up
  // domain when the group spans several domains (so every NIC carries a ring), else 1.
  std::uint32_t channels = 0;
  // Point-to-point transfers (AllToAll, AllToAllv, Send/Recv) between domains go through the
  // member of the sender's domain on the receiver's rail, as NCCL's PXN does by default since
  // NCCL 2.12 (NCCL_P2P_PXN_LEVEL=2): over the scale-up network first, then one rail of the
  // scale-out fabric. false: every transfer leaves through the sender's own NIC.
  bool pxn = true;
  ProtocolChoice protocol = ProtocolChoice::kOff;
  // The fixed cost of one NVLS chunk step (a channel's handshake with its peers through the
  // NVSwitch before and after each chunk), as the bytes a channel would have moved in that time:
  // with the protocol model on, every transfer to or from a reducing NVSwitch (in-switch, the
  // switch phases of nvls-tree and nvls-collnet) carries data x (1 + this / step), the step being
  // NCCL's chunk for the algorithm, at most 128 KiB (detail::nvls_step_bytes).
  // 0: none (closed forms). Calibrated (link_calibration.cpp).
  Bytes nvls_step_overhead = Bytes(0);
  // The NCCL version whose choices `auto` makes (kNcclModelVersion and up; the model's costs stay
  // 2.20.3's): from kNcclPatVersion on it offers PAT.
  std::uint32_t nccl_version = kNcclModelVersion;
};

}  // namespace stepsim::collectives
