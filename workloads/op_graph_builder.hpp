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

#include <algorithm>
#include <array>
#include <cmath>
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
                      Time duration, std::initializer_list<OpIndex> deps) {
    return add_compute(label, kind, flops, bytes, duration,
                       std::span<const OpIndex>(deps.begin(), deps.size()));
  }
  OpIndex add_compute(const OpLabel& label, ComputeKind kind, double flops, double bytes,
                      Time duration, std::span<const OpIndex> deps) {
    Op& op = start_op(label);
    op.kind = OpKind::kCompute;
    op.stream = Stream::kCompute;
    op.compute = kind;
    op.flops = flops;
    op.bytes = std::llround(bytes);
    op.duration = duration;
    return finish_op(deps.data(), deps.size());
  }

  // A collective of `bytes` (as nccl-tests counts its buffer) on the rank's `group`, on the
  // stream of that group. Members match it by its sequence number among the program's
  // collectives on the same Communicator, which the builder assigns. `matrix`: the AllToAllv
  // traffic matrix, or kNoMatrix.
  OpIndex add_collective(const OpLabel& label, CollectiveKind kind, Communicator group,
                         ParallelDim dim, std::int64_t bytes, std::initializer_list<OpIndex> deps,
                         std::uint32_t matrix = kNoMatrix) {
    Op& op = start_op(label);
    op.kind = OpKind::kCollective;
    op.stream = stream_of(group);
    op.collective = kind;
    op.group = group;
    op.dim = dim;
    op.bytes = bytes;
    op.matrix = matrix;
    op.seq = next_seq_[static_cast<std::size_t>(group)];
    const OpIndex index = finish_op(deps.begin(), deps.size());
    ++next_seq_[static_cast<std::size_t>(group)];
    return index;
  }

  // One side of a point-to-point transfer of `bytes` with the rank `peer_offset` positions away
  // in `group` (kPipeline or kContext); `tag` matches the send with its receive. `reverse`: on
  // the pipeline streams of DualPipe's second direction (operation.hpp).
  OpIndex add_send(const OpLabel& label, Communicator group, int peer_offset, std::int64_t bytes,
                   std::int64_t tag, std::initializer_list<OpIndex> deps, bool reverse = false);
  OpIndex add_receive(const OpLabel& label, Communicator group, int peer_offset, std::int64_t bytes,
                      std::int64_t tag, std::initializer_list<OpIndex> deps, bool reverse = false);

  // The most recently added operation; kNoOp while the graph is empty.
  OpIndex last_op() const {
    return program_.ops.empty() ? kNoOp : static_cast<OpIndex>(program_.ops.size() - 1);
  }

  // The program built so far; the builder is left empty.
  Program take_program();

  // The limits of the compact Op's fields.
  static constexpr std::size_t kMaxDependencies = 0xFFFF;
  static constexpr std::int64_t kMaxLayer = 0x7FFF;
  static constexpr int kMaxChunk = 0xFF;
  static constexpr std::int64_t kMaxTag = 0xFFFFFFFF;

 private:
  // Dependency lists up to this long are checked for repeats by a linear scan (the generator's
  // have at most five entries); longer ones (the optimizer step waits for every gradient bucket)
  // are sorted, so that tens of thousands stay cheap.
  static constexpr std::size_t kLinearScanLimit = 16;

  // The operations are built in place, and the checks and the common path are inline, because a
  // step has millions of operations; the failures are out of line.
  //
  // Appends an operation with `label` and the current pass's labels; the caller sets the rest and
  // calls finish_op with its dependencies.
  Op& start_op(const OpLabel& label) {
    if (program_.ops.size() >= kNoOp) fail_too_many_ops();
    if (label.layer < kNoLayer || label.layer > kMaxLayer) fail_layer(label.layer);
    Op& op = program_.ops.emplace_back();
    op.name = label.name;
    op.phase = label.phase;
    op.layer = static_cast<std::int16_t>(label.layer);
    op.micro_batch = micro_batch_;
    op.chunk = chunk_;
    return op;
  }

  // Stores the dependencies of the operation start_op appended (skipping kNoOp and repeats) and
  // returns its index; removes the operation again when a check fails.
  OpIndex finish_op(const OpIndex* deps, std::size_t count) {
    if (count > kLinearScanLimit) return finish_op_with_long_list(deps, count);
    const std::size_t index = program_.ops.size() - 1;
    const std::size_t begin = program_.deps.size();
    for (std::size_t i = 0; i < count; ++i) {
      const OpIndex dep = deps[i];
      if (dep == kNoOp) continue;
      if (dep >= index) fail_not_earlier(begin, dep);
      if (std::find(program_.deps.begin() + static_cast<std::ptrdiff_t>(begin), program_.deps.end(),
                    dep) == program_.deps.end()) {
        program_.deps.push_back(dep);
      }
    }
    Op& op = program_.ops.back();
    op.dep_begin = static_cast<std::uint32_t>(begin);
    op.dep_count = static_cast<std::uint16_t>(program_.deps.size() - begin);
    return static_cast<OpIndex>(index);
  }

  static Stream stream_of(Communicator group) {
    switch (group) {
      case Communicator::kTensor:
        return Stream::kTp;
      case Communicator::kContext:
        return Stream::kCp;
      case Communicator::kExpert:
        return Stream::kEp;
      case Communicator::kPipeline:
        return Stream::kPp;
      case Communicator::kData:
      case Communicator::kExpertData:
      case Communicator::kCount:
        break;
    }
    return Stream::kDp;
  }

  OpIndex finish_op_with_long_list(const OpIndex* deps, std::size_t count);
  OpIndex add_transfer(bool send, const OpLabel& label, Communicator group, int peer_offset,
                       std::int64_t bytes, std::int64_t tag, std::initializer_list<OpIndex> deps,
                       bool reverse);
  [[noreturn]] static void fail_too_many_ops();
  [[noreturn]] static void fail_layer(std::int64_t layer);
  // Removes the operation being added and its dependencies stored so far, then throws.
  [[noreturn]] void fail_not_earlier(std::size_t deps_begin, OpIndex dep);
  [[noreturn]] void fail_too_many_dependencies(std::size_t deps_begin);

  Program program_;
  std::int32_t micro_batch_ = kNoMicroBatch;
  std::uint8_t chunk_ = 0;
  std::array<std::uint32_t, static_cast<std::size_t>(Communicator::kCount)> next_seq_{};
};

}  // namespace stepsim::workloads
