#include "workloads/op_graph_builder.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "sim/common/input_error.hpp"

namespace stepsim::workloads {

namespace {

// Dependency lists up to this long are checked for repeats by a linear scan, as the generator's
// lists have at most five entries; longer ones (the optimizer step waits for every gradient
// bucket) are sorted first, so that tens of thousands of buckets stay cheap.
constexpr std::size_t kLinearScanLimit = 16;

Stream stream_of(GroupKind group) {
  switch (group) {
    case GroupKind::kTensor:
      return Stream::kTp;
    case GroupKind::kContext:
      return Stream::kCp;
    case GroupKind::kExpert:
      return Stream::kEp;
    case GroupKind::kPipeline:
      return Stream::kPp;
    case GroupKind::kData:
    case GroupKind::kExpertData:
    case GroupKind::kCount:
      break;
  }
  return Stream::kDp;
}

InputError too_large(const std::string& what) {
  return InputError("the step graph is too large for its representation: " + what);
}

}  // namespace

void OpGraphBuilder::set_pass(std::int32_t micro_batch, int chunk) {
  if (chunk < 0) throw std::logic_error(fmt::format("step generator bug: model chunk {}", chunk));
  if (chunk > kMaxChunk) {
    throw too_large(
        fmt::format("model chunk {} is beyond the {} chunks per rank an operation can "
                    "name (parallelism.vpp)",
                    chunk, kMaxChunk + 1));
  }
  micro_batch_ = micro_batch;
  chunk_ = static_cast<std::uint8_t>(chunk);
}

OpIndex OpGraphBuilder::add_compute(const OpLabel& label, ComputeKind kind, double flops,
                                    double bytes, Time duration,
                                    std::initializer_list<OpIndex> deps) {
  return add_compute(label, kind, flops, bytes, duration, std::span(deps.begin(), deps.size()));
}

OpIndex OpGraphBuilder::add_compute(const OpLabel& label, ComputeKind kind, double flops,
                                    double bytes, Time duration, std::span<const OpIndex> deps) {
  Op op;
  op.kind = OpKind::kCompute;
  op.stream = Stream::kCompute;
  op.compute = kind;
  op.flops = flops;
  op.bytes = std::llround(bytes);
  op.duration = duration;
  return add(op, label, deps.data(), deps.size());
}

OpIndex OpGraphBuilder::add_collective(const OpLabel& label, CollectiveKind kind, GroupKind group,
                                       ParallelDim dim, std::int64_t bytes,
                                       std::initializer_list<OpIndex> deps, std::uint32_t matrix) {
  Op op;
  op.kind = OpKind::kCollective;
  op.stream = stream_of(group);
  op.collective = kind;
  op.group = group;
  op.dim = dim;
  op.bytes = bytes;
  op.matrix = matrix;
  op.seq = next_seq_[static_cast<std::size_t>(group)];
  const OpIndex index = add(op, label, deps.begin(), deps.size());
  ++next_seq_[static_cast<std::size_t>(group)];
  return index;
}

OpIndex OpGraphBuilder::add_send(const OpLabel& label, GroupKind group, int peer_offset,
                                 std::int64_t bytes, std::int64_t tag,
                                 std::initializer_list<OpIndex> deps) {
  return add_transfer(true, label, group, peer_offset, bytes, tag, deps);
}

OpIndex OpGraphBuilder::add_receive(const OpLabel& label, GroupKind group, int peer_offset,
                                    std::int64_t bytes, std::int64_t tag,
                                    std::initializer_list<OpIndex> deps) {
  return add_transfer(false, label, group, peer_offset, bytes, tag, deps);
}

OpIndex OpGraphBuilder::add_transfer(bool send, const OpLabel& label, GroupKind group,
                                     int peer_offset, std::int64_t bytes, std::int64_t tag,
                                     std::initializer_list<OpIndex> deps) {
  if (group != GroupKind::kPipeline && group != GroupKind::kContext) {
    throw std::logic_error(
        fmt::format("step generator bug: a transfer on the {} group", to_string(group)));
  }
  if (peer_offset < -128 || peer_offset > 127) {
    throw std::logic_error(fmt::format("step generator bug: peer offset {}", peer_offset));
  }
  if (tag < 0 || tag > kMaxTag) {
    throw too_large(
        fmt::format("transfer tag {} of a {} operation is beyond the 32-bit tags (too "
                    "many micro-batches and pipeline stages)",
                    tag, to_string(label.name)));
  }
  Op op;
  op.kind = send ? OpKind::kSend : OpKind::kRecv;
  op.collective = send ? CollectiveKind::kSend : CollectiveKind::kRecv;
  // Receives have streams of their own (operation.hpp says why).
  const bool pipeline = group == GroupKind::kPipeline;
  op.stream =
      pipeline ? (send ? Stream::kPp : Stream::kPpRecv) : (send ? Stream::kCp : Stream::kCpRecv);
  op.dim = pipeline ? ParallelDim::kPp : ParallelDim::kCp;
  op.group = group;
  op.peer_offset = static_cast<std::int8_t>(peer_offset);
  op.bytes = bytes;
  op.seq = static_cast<std::uint32_t>(tag);
  return add(op, label, deps.begin(), deps.size());
}

OpIndex OpGraphBuilder::add(Op op, const OpLabel& label, const OpIndex* deps, std::size_t count) {
  const std::size_t index = program_.ops.size();
  if (index >= kNoOp) {
    throw too_large(fmt::format("more than {} operations on one rank", kNoOp - 1));
  }
  if (label.layer < kNoLayer || label.layer > kMaxLayer) {
    throw too_large(fmt::format("layer {} is beyond the {} layers an operation can name",
                                label.layer, kMaxLayer + 1));
  }
  const std::size_t begin = program_.deps.size();
  for (std::size_t i = 0; i < count; ++i) {
    const OpIndex dep = deps[i];
    if (dep == kNoOp) continue;
    if (dep >= index) {
      program_.deps.resize(begin);
      throw std::logic_error(fmt::format(
          "step generator bug: operation {} ({}) would wait for operation {}, not an earlier one",
          index, to_string(label.name), dep));
    }
    if (count <= kLinearScanLimit &&
        std::find(program_.deps.begin() + static_cast<std::ptrdiff_t>(begin), program_.deps.end(),
                  dep) != program_.deps.end()) {
      continue;
    }
    program_.deps.push_back(dep);
  }
  if (count > kLinearScanLimit) drop_repeated_dependencies(begin);
  const std::size_t dep_count = program_.deps.size() - begin;
  if (dep_count > kMaxDependencies) {
    program_.deps.resize(begin);
    throw too_large(fmt::format(
        "operation {} ({}) would wait for {} operations, more than the {} one operation can name "
        "(the optimizer step waits for every gradient bucket: a larger training.grad_bucket "
        "makes fewer)",
        index, to_string(label.name), dep_count, kMaxDependencies));
  }
  op.name = label.name;
  op.phase = label.phase;
  op.layer = static_cast<std::int16_t>(label.layer);
  op.dep_begin = static_cast<std::uint32_t>(begin);
  op.dep_count = static_cast<std::uint16_t>(dep_count);
  op.micro_batch = micro_batch_;
  op.chunk = chunk_;
  program_.ops.push_back(op);
  return static_cast<OpIndex>(index);
}

void OpGraphBuilder::drop_repeated_dependencies(std::size_t begin) {
  const auto first = program_.deps.begin() + static_cast<std::ptrdiff_t>(begin);
  std::vector<OpIndex> sorted(first, program_.deps.end());
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) return;
  // Keeps the first occurrence of each, in the order given.
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<bool> seen(sorted.size(), false);
  std::vector<OpIndex> kept;
  for (auto it = first; it != program_.deps.end(); ++it) {
    const auto at = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), *it) -
                                             sorted.begin());
    if (!seen[at]) kept.push_back(*it);
    seen[at] = true;
  }
  program_.deps.resize(begin);
  program_.deps.insert(program_.deps.end(), kept.begin(), kept.end());
}

OpIndex OpGraphBuilder::last_op() const {
  return program_.ops.empty() ? kNoOp : static_cast<OpIndex>(program_.ops.size() - 1);
}

Program OpGraphBuilder::take_program() {
  Program program = std::move(program_);
  program_ = Program{};
  next_seq_ = {};
  return program;
}

}  // namespace stepsim::workloads
