#include "workloads/op_graph_builder.hpp"

#include <fmt/format.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/common/input_error.hpp"

namespace stepsim::workloads {

namespace {

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

OpIndex OpGraphBuilder::add_send(const OpLabel& label, Communicator group, int peer_offset,
                                 std::int64_t bytes, std::int64_t tag,
                                 std::initializer_list<OpIndex> deps, bool reverse) {
  return add_transfer(true, label, group, peer_offset, bytes, tag, deps, reverse);
}

OpIndex OpGraphBuilder::add_receive(const OpLabel& label, Communicator group, int peer_offset,
                                    std::int64_t bytes, std::int64_t tag,
                                    std::initializer_list<OpIndex> deps, bool reverse) {
  return add_transfer(false, label, group, peer_offset, bytes, tag, deps, reverse);
}

OpIndex OpGraphBuilder::add_transfer(bool send, const OpLabel& label, Communicator group,
                                     int peer_offset, std::int64_t bytes, std::int64_t tag,
                                     std::initializer_list<OpIndex> deps, bool reverse) {
  if (group != Communicator::kPipeline && group != Communicator::kContext) {
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
  Op& op = start_op(label);
  op.kind = send ? OpKind::kSend : OpKind::kRecv;
  op.collective = CollectiveKind::kSendRecv;
  // Receives have streams of their own (operation.hpp says why).
  const bool pipeline = group == Communicator::kPipeline;
  if (pipeline && reverse) {
    op.stream = send ? Stream::kPpReverse : Stream::kPpReverseRecv;
  } else {
    op.stream =
        pipeline ? (send ? Stream::kPp : Stream::kPpRecv) : (send ? Stream::kCp : Stream::kCpRecv);
  }
  op.dim = pipeline ? ParallelDim::kPp : ParallelDim::kCp;
  op.group = group;
  op.peer_offset = static_cast<std::int8_t>(peer_offset);
  op.bytes = bytes;
  op.seq = static_cast<std::uint32_t>(tag);
  return finish_op(deps.begin(), deps.size());
}

OpIndex OpGraphBuilder::finish_op_with_long_list(const OpIndex* deps, std::size_t count) {
  const std::size_t index = program_.ops.size() - 1;
  const std::size_t begin = program_.deps.size();
  std::vector<OpIndex> sorted;
  sorted.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (deps[i] == kNoOp) continue;
    if (deps[i] >= index) fail_not_earlier(begin, deps[i]);
    sorted.push_back(deps[i]);
  }
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (sorted.size() > kMaxDependencies) fail_too_many_dependencies(begin);
  // Keeps the first occurrence of each, in the order given.
  std::vector<bool> stored(sorted.size(), false);
  for (std::size_t i = 0; i < count; ++i) {
    if (deps[i] == kNoOp) continue;
    const auto at = static_cast<std::size_t>(
        std::lower_bound(sorted.begin(), sorted.end(), deps[i]) - sorted.begin());
    if (!stored[at]) program_.deps.push_back(deps[i]);
    stored[at] = true;
  }
  Op& op = program_.ops.back();
  op.dep_begin = static_cast<std::uint32_t>(begin);
  op.dep_count = static_cast<std::uint16_t>(program_.deps.size() - begin);
  return static_cast<OpIndex>(index);
}

void OpGraphBuilder::fail_too_many_ops() {
  throw too_large(fmt::format("more than {} operations on one rank", kNoOp - 1));
}

void OpGraphBuilder::fail_layer(std::int64_t layer) {
  throw too_large(
      fmt::format("layer {} is beyond the {} layers an operation can name", layer, kMaxLayer + 1));
}

void OpGraphBuilder::fail_not_earlier(std::size_t deps_begin, OpIndex dep) {
  const std::size_t index = program_.ops.size() - 1;
  const OpName name = program_.ops.back().name;
  program_.deps.resize(deps_begin);
  program_.ops.pop_back();
  throw std::logic_error(fmt::format(
      "step generator bug: operation {} ({}) would wait for operation {}, not an earlier one",
      index, to_string(name), dep));
}

void OpGraphBuilder::fail_too_many_dependencies(std::size_t deps_begin) {
  const std::size_t index = program_.ops.size() - 1;
  const OpName name = program_.ops.back().name;
  program_.deps.resize(deps_begin);
  program_.ops.pop_back();
  throw too_large(fmt::format(
      "operation {} ({}) would wait for more than the {} operations one operation can name (the "
      "optimizer step waits for every gradient bucket: a larger training.grad_bucket makes "
      "fewer)",
      index, to_string(name), kMaxDependencies));
}

Program OpGraphBuilder::take_program() {
  Program program = std::move(program_);
  program_ = Program{};
  next_seq_ = {};
  return program;
}

}  // namespace stepsim::workloads
