// Building blocks of ring-shaped plans, shared by the ring and hierarchical algorithms: rings and
// chains over given member orders, in the step-by-step form (each step its own transfers, cut into
// chunks) and in the fluid form (one transfer per ring edge for the whole phase).
//
// With a `group`, a step between two scale-up domains costs PlanOptions::net_step_latency instead
// of step_latency (step_latency() below); a fluid ring charges every edge the mean over its edges.
//
// Each emitter reads, for every member it involves, the transfer the member waits for from
// `frontier` (none: the operation starts there, and the operation latency is charged), and leaves
// in `frontier` the transfer after which the member holds its result.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/collectives/plan/group_shape.hpp"
#include "sim/collectives/plan/plan.hpp"
#include "sim/collectives/plan/plan_options.hpp"

namespace stepsim::collectives::detail {

// Part `index` of `total` cut into `parts` near-equal whole-byte parts (the first ones larger).
Bytes share(Bytes total, std::uint32_t parts, std::uint32_t index);
// Chunks per step for `bytes` per transfer: ceil(bytes / chunk_size), within [1, max_chunks].
std::uint32_t chunk_count(Bytes bytes, const PlanOptions& options);

// NCCL_NVLS_NCHANNELS: the channels NVLS, NVLS-tree and NVLS with CollNet run on (H100).
inline constexpr std::int64_t kNvlsChannels = 16;
// NCCL moves NVLS data through its NVLS buffers in steps of at most NCCL_NVLS_CHUNKSIZE, 128 KiB
// (transport/nvls.cc, ncclNvlsBufferSetup: nvlsStepSize = nvlsChunkSize), whatever the
// algorithm's chunk (NVLS-tree's reaches 2 MiB).
inline constexpr std::int64_t kNvlsStepBytes = std::int64_t{128} << 10;
// NCCL's NVLS chunk (enqueue.cc, calcCollChunking, NVLS): at most kNvlsStepBytes; 64 KiB below
// 64·K·chunk bytes, 32 KiB below 8·K·chunk, 16 KiB below 2·K·chunk, for an operation of `bytes`
// with K = `concurrent` chunks at once (channels x heads).
std::int64_t nvls_chunk_bytes(std::int64_t bytes, std::int64_t concurrent);
// What a transfer of `data` through a reducing NVSwitch carries when NCCL moves it in chunks of
// `chunk` bytes: data x (1 + options.nvls_step_overhead / step), step = min(chunk, 128 KiB), each
// step's fixed cost (PlanOptions::nvls_step_overhead) counted as bytes at the channel's rate.
Bytes nvls_step_bytes(Bytes data, std::int64_t chunk, const PlanOptions& options);

enum class RingPhase : std::uint8_t {
  kReduceScatter,  // n-1 steps; each member ends with 1/n of the reduced data
  kAllGather,      // n-1 steps; each member ends with everything
  kAllReduce,      // both: 2(n-1) steps
};

// One ring per entry of `rings` (member indices in ring order); ring r carries `bytes[r]` (the
// operation's buffer size for that ring: input of a reduce-scatter, output of an all-gather).
// Rings may share members (channels) or be disjoint (one ring per domain).
void emit_ring_steps(PlanBuilder& builder, std::span<const std::vector<std::uint32_t>> rings,
                     std::span<const Bytes> bytes, RingPhase phase, const PlanOptions& options,
                     Frontier& frontier, const GroupShape* group = nullptr);
void emit_ring_fluid(PlanBuilder& builder, std::span<const std::vector<std::uint32_t>> rings,
                     std::span<const Bytes> bytes, RingPhase phase, const PlanOptions& options,
                     Frontier& frontier, const GroupShape* group = nullptr);
// The pipelined fluid form ("ring-pipelined", opt-in): per ring, a chain of one transfer per
// step that carries the first chunk of one segment round the ring, edge after edge, each hop
// charged its own edge's step latency and route latency once and waiting for the hop before (a
// chunk waits on its predecessor's arrival: the step form's critical path), and one fluid
// transfer per edge with the edge's other bytes of every step, from the start (its step latency
// once). Every edge carries the step form's bytes; about n + steps transfers per ring instead of
// steps x chunks x n. A member holds its result once its incoming edge and the chain are done.
void emit_ring_pipelined(PlanBuilder& builder, std::span<const std::vector<std::uint32_t>> rings,
                         std::span<const Bytes> bytes, RingPhase phase, const PlanOptions& options,
                         Frontier& frontier, const GroupShape* group = nullptr);

// Pipelined chains: chain r moves `bytes[r]` from chain[0] to the end (broadcast) or, with
// `toward_head`, from the end back to chain[0] (reduce). Step form: chunks follow each other on
// every edge (a sender pushes chunk c+1 after chunk c) and chunk c crosses edge e+1 after edge e.
void emit_chain_steps(PlanBuilder& builder, std::span<const std::vector<std::uint32_t>> chains,
                      std::span<const Bytes> bytes, bool toward_head, const PlanOptions& options,
                      Frontier& frontier, const GroupShape* group = nullptr);
void emit_chain_fluid(PlanBuilder& builder, std::span<const std::vector<std::uint32_t>> chains,
                      std::span<const Bytes> bytes, bool toward_head, const PlanOptions& options,
                      Frontier& frontier, const GroupShape* group = nullptr);

// Channel count: options.channels, or (0) the largest domain when the group spans several
// domains, else 1.
std::uint32_t channel_count(const GroupShape& group, const PlanOptions& options);
// Ring orders, one per channel. Each ring visits the domains in order; in domain d, channel c
// enters at local member c+d and leaves at local member c+d+1 (mod the domain size), so every edge
// between domains joins members of the same local index (one NIC rail), and across channels every
// member (and its NIC) leaves its domain once and enters it once.
std::vector<std::vector<std::uint32_t>> channel_rings(const GroupShape& group,
                                                      std::uint32_t channels);

// The software latency of one step from member `from` to member `to`: options.net_step_latency
// when `group` puts them in different scale-up domains and it is set, else options.step_latency.
// With `group` null every step is a step_latency (the emitters' default).
Time step_latency(const GroupShape* group, std::uint32_t from, std::uint32_t to,
                  const PlanOptions& options);

// Extra latency of a transfer that starts a phase: the step latency, plus the operation latency
// when the member has nothing to wait for (the operation starts with it).
Time start_latency(const Frontier& frontier, std::uint32_t member, Time step_latency,
                   const PlanOptions& options);

}  // namespace stepsim::collectives::detail
