// One operation of a rank's training step: a compute kernel (or a fused group of kernels), a
// collective on a communicator group, or one side of a point-to-point transfer.
//
// Operations are compact (56 bytes) because a step has tens of thousands per rank: names are enums,
// groups and peers are not stored but named relative to the rank (its tensor-parallel group, the
// next pipeline stage), so one Program serves every rank of a pipeline stage; Workload resolves
// them to interned global groups and ranks. docs/workloads.md describes the representation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/common/collective_kind.hpp"
#include "sim/common/units.hpp"

namespace stepsim::workloads {

enum class OpKind : std::uint8_t { kCompute, kCollective, kSend, kRecv };

// The stream an operation runs on. Streams run in program order, one operation at a time.
// Point-to-point receives have their own streams: with rendezvous semantics a receive queued
// behind a send on one stream could deadlock a pipeline (Megatron batches them for the same
// reason). DualPipe's second direction has a send and a receive stream of its own (kPpReverse,
// kPpReverseRecv): its transfers are batched apart from the first direction's.
enum class Stream : std::uint8_t {
  kCompute,
  kTp,
  kCp,
  kCpRecv,
  kEp,
  kPp,
  kPpRecv,
  kDp,
  kPpReverse,
  kPpReverseRecv,
  kCount
};

// The parallel dimension a communication belongs to (labels and statistics).
enum class ParallelDim : std::uint8_t { kNone, kTp, kSp, kCp, kEp, kPp, kDp, kCount };
inline constexpr std::size_t kParallelDimCount = static_cast<std::size_t>(ParallelDim::kCount);

// Which communicator of the rank an operation uses; Workload::group() resolves it.
//  kData: data-parallel x context-parallel ranks (the group dense gradients are reduced over);
//  kExpertData: the ranks holding the same experts (expert gradients).
enum class Communicator : std::uint8_t {
  kTensor,
  kContext,
  kExpert,
  kData,
  kExpertData,
  kPipeline,
  kCount
};

enum class Phase : std::uint8_t { kForward, kBackward, kRecompute, kOptimizer };

enum class OpName : std::uint8_t {
  // compute
  kEmbedding,
  kNorm,
  kQkv,
  kAttentionCore,
  kAttentionOut,
  kMlpUp,
  kMlpDown,
  kRouter,
  kExperts,
  kSharedExperts,
  kLogits,
  kLoss,
  kOptimizerStep,
  // communication
  kTpAllReduce,
  kSpAllGather,
  kSpReduceScatter,
  kCpKvExchange,
  kCpAllToAll,
  kEpDispatch,
  kEpCombine,
  kPpActivation,
  kPpGradient,
  kDpGradients,
  kZeroParamGather,
  kCount
};

// The efficiency class of a compute operation (ComputeModel).
enum class ComputeKind : std::uint8_t {
  kGemm,
  kGroupedGemm,
  kAttention,
  kElementwise,
  kOptimizer,
  kCount
};

inline constexpr std::int16_t kNoLayer = -1;
inline constexpr std::int32_t kNoMicroBatch = -1;
inline constexpr std::uint32_t kNoMatrix = 0xFFFFFFFFu;

struct Op {
  Time duration;           // compute: modeled or measured time; communication: zero
  double flops = 0;        // compute: floating-point operations
  std::int64_t bytes = 0;  // compute: HBM bytes moved; communication: the buffer size in bytes
                           // as nccl-tests counts it (AllReduce: the buffer; AllGather: the
                           // gathered output; ReduceScatter: the input; AllToAll: the send buffer)
  std::uint32_t dep_begin = 0;  // dependencies: Program::deps[dep_begin, dep_begin + dep_count)
  // Collectives: the index of this operation among the program's operations on the same
  // Communicator; members of one group run the same program, so (group id, seq) matches them.
  // Send/receive: a tag unique per (source, destination) pair; (source, destination, seq) matches.
  std::uint32_t seq = 0;
  std::int32_t micro_batch = kNoMicroBatch;
  std::uint32_t matrix = kNoMatrix;  // AllToAllv: Workload::traffic_matrix(matrix)
  std::int16_t layer = kNoLayer;     // global layer index; kNoLayer for embedding, head, optimizer
  std::uint16_t dep_count = 0;
  OpKind kind = OpKind::kCompute;
  Stream stream = Stream::kCompute;
  Phase phase = Phase::kForward;
  OpName name = OpName::kNorm;
  // What a kCollective operation runs; kSendRecv for a send or a receive, unused for compute.
  CollectiveKind collective = CollectiveKind::kSendRecv;
  ParallelDim dim = ParallelDim::kNone;
  Communicator group = Communicator::kTensor;
  ComputeKind compute = ComputeKind::kGemm;
  std::uint8_t chunk = 0;       // model chunk (virtual pipeline stage index on this rank)
  std::int8_t peer_offset = 0;  // send/receive: the peer's position in `group` relative to this
                                // rank's, modulo the group size (+1: next stage, -1: previous)
};

std::string_view to_string(OpKind v);
std::string_view to_string(Stream v);
// "none", "tp", "sp", "cp", "ep", "pp", "dp": the report's keys and the trace's categories.
std::string_view to_string(ParallelDim v);
std::string_view to_string(Communicator v);
std::string_view to_string(Phase v);
std::string_view to_string(OpName v);
std::string_view to_string(ComputeKind v);

}  // namespace stepsim::workloads
