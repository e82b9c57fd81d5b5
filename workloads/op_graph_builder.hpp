// Builds one rank's operation graph (a Program): operations appended in issue order, each with
// the earlier operations it waits for. It is the only code that writes Program::ops and
// Program::deps, so every operation passes the same checks.
//
// An Op is compact (operation.hpp) and narrows several values: its dependency count to 16 bits,
// its layer to 16 bits, its model chunk and peer offset to 8 bits, operation indices, collective
// sequence numbers and transfer tags to 32 bits. The builder checks every value against its
// field and throws instead of narrowing: InputError where a scenario can reach the limit (a model
// of more than 32,767 layers, a gradient bucket so small that the optimizer waits for more than
// 65,535 buckets), std::logic_error where only a bug of the generator can (a dependency on an
// operation not yet added).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "sim/common/units.hpp"
#include "workloads/operation.hpp"
#include "workloads/program.hpp"

namespace stepsim::workloads {

// Index of an operation in its Program.
using OpIndex = std::uint32_t;
// No operation: an empty dependency slot, skipped by the builder.
inline constexpr OpIndex kNoOp = 0xFFFFFFFFu;

// What an operation is, for labels and for matching it across ranks: its name, the phase of the
// step and the global layer (kNoLayer outside the transformer layers).
struct OpLabel {
  OpName name = OpName::kNorm;
  Phase phase = Phase::kForward;
  std::int64_t layer = kNoLayer;
};

class OpGraphBuilder {
 public:
  // Labels every operation added from now on with this micro-batch (kNoMicroBatch outside the
  // passes) and model chunk (the virtual pipeline stage's index on this rank).
  void set_pass(std::int32_t micro_batch, int chunk);

  // A compute operation on the compute stream: `flops` floating-point operations and `bytes`
  // bytes of HBM traffic (rounded to whole bytes), taking `duration`.
  OpIndex add_compute(const OpLabel& label, ComputeKind kind, double flops, double bytes,
                      Time duration, std::initializer_list<OpIndex> deps);
  OpIndex add_compute(const OpLabel& label, ComputeKind kind, double flops, double bytes,
                      Time duration, std::span<const OpIndex> deps);

  // A collective of `bytes` (as nccl-tests counts its buffer) on the rank's `group`, on the
  // stream of that group. Members match it by its sequence number among the program's
  // collectives on the same GroupKind, which the builder assigns. `matrix`: the AllToAllv traffic
  // matrix, or kNoMatrix.
  OpIndex add_collective(const OpLabel& label, CollectiveKind kind, GroupKind group,
                         ParallelDim dim, std::int64_t bytes, std::initializer_list<OpIndex> deps,
                         std::uint32_t matrix = kNoMatrix);

  // One side of a point-to-point transfer of `bytes` with the rank `peer_offset` positions away
  // in `group` (kPipeline or kContext); `tag` matches the send with its receive.
  OpIndex add_send(const OpLabel& label, GroupKind group, int peer_offset, std::int64_t bytes,
                   std::int64_t tag, std::initializer_list<OpIndex> deps);
  OpIndex add_receive(const OpLabel& label, GroupKind group, int peer_offset, std::int64_t bytes,
                      std::int64_t tag, std::initializer_list<OpIndex> deps);

  // The most recently added operation; kNoOp while the graph is empty.
  OpIndex last_op() const;

  // The program built so far; the builder is left empty.
  Program take_program();

  // The limits of the compact Op's fields.
  static constexpr std::size_t kMaxDependencies = 0xFFFF;
  static constexpr std::int64_t kMaxLayer = 0x7FFF;
  static constexpr int kMaxChunk = 0xFF;
  static constexpr std::int64_t kMaxTag = 0xFFFFFFFF;

 private:
  OpIndex add(Op op, const OpLabel& label, const OpIndex* deps, std::size_t count);
  OpIndex add_transfer(bool send, const OpLabel& label, GroupKind group, int peer_offset,
                       std::int64_t bytes, std::int64_t tag, std::initializer_list<OpIndex> deps);
  void drop_repeated_dependencies(std::size_t begin);

  Program program_;
  std::int32_t micro_batch_ = kNoMicroBatch;
  std::uint8_t chunk_ = 0;
  std::array<std::uint32_t, static_cast<std::size_t>(GroupKind::kCount)> next_seq_{};
};

}  // namespace stepsim::workloads
