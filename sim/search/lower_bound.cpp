#include "sim/search/lower_bound.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <tuple>
#include <vector>

#include "workloads/operation.hpp"
#include "workloads/program.hpp"
#include "workloads/step_generator.hpp"

namespace stepsim::search {
namespace {

using workloads::Communicator;
using workloads::Op;
using workloads::OpKind;

constexpr std::size_t kStreams = static_cast<std::size_t>(workloads::Stream::kCount);

int group_size(const workloads::ParallelLayout& p, Communicator c) {
  switch (c) {
    case Communicator::kTensor:
      return p.tp;
    case Communicator::kContext:
      return p.cp;
    case Communicator::kExpert:
      return p.ep;
    case Communicator::kData:
      return p.dp * p.cp;
    case Communicator::kExpertData:
      return p.expert_dp();
    case Communicator::kPipeline:
    case Communicator::kCount:
      return p.pp;
  }
  return 1;
}

// Rounded down, so that the bound stays a bound.
Time time_for(double bytes, BytesPerSecond rate) {
  return Time::ps(static_cast<std::int64_t>(std::floor(bytes / rate.value() * 1e12)));
}

Time collective_bound(const Op& op, int n, BytesPerSecond rate) {
  if (n <= 1) return Time::zero();
  const double share = static_cast<double>(n - 1) / n * static_cast<double>(op.bytes);
  switch (op.collective) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return time_for(share, rate);
    default:
      return Time::zero();
  }
}

// One stage's state in the play.
struct StagePlay {
  const workloads::Program* program = nullptr;
  std::array<std::vector<std::uint32_t>, kStreams> streams;  // op indices in program order
  std::array<std::size_t, kStreams> cursor{};
  std::array<bool, kStreams> busy{};
  std::vector<bool> done;
  std::size_t left = 0;
  Time end;
};

// A send or a receive waiting for its other side: (sender stage, group, offset from the sender
// modulo the group size, tag).
using TransferKey = std::tuple<int, int, int, std::uint32_t>;

}  // namespace

BytesPerSecond injection_bandwidth(const topology::Topology& topology) {
  double best = 0;
  for (const auto node : topology.accelerators()) {
    double out = 0;
    const auto range = topology.out_links(node);
    for (std::uint32_t i = 0; i < range.count; ++i) {
      const topology::LinkIndex l{range.first + i};
      out += std::max(topology.bandwidth(l).value(), topology.effective_bandwidth(l).value());
    }
    double in = 0;
    for (const auto l : topology.in_links(node))
      in += std::max(topology.bandwidth(l).value(), topology.effective_bandwidth(l).value());
    best = std::max({best, out, in});
  }
  return BytesPerSecond(best);
}

LowerBound lower_bound(const workloads::WorkloadSpec& spec, BytesPerSecond injection) {
  const auto& layout = spec.parallel;
  const int stages = layout.pp;
  std::vector<workloads::Program> programs;
  programs.reserve(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s)
    programs.push_back(workloads::generate_stage_program(spec, s));

  LowerBound result;
  std::vector<StagePlay> play(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    StagePlay& st = play[static_cast<std::size_t>(s)];
    st.program = &programs[static_cast<std::size_t>(s)];
    Time compute;
    for (std::uint32_t i = 0; i < st.program->ops.size(); ++i) {
      const Op& op = st.program->ops[i];
      st.streams[static_cast<std::size_t>(op.stream)].push_back(i);
      if (op.kind == OpKind::kCompute) compute += op.duration;
    }
    st.done.assign(st.program->ops.size(), false);
    st.left = st.program->ops.size();
    result.compute = std::max(result.compute, compute);
  }

  // Completions, earliest first; ties in the order they were scheduled.
  using Event = std::tuple<std::int64_t, std::uint64_t, int, std::uint32_t>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::uint64_t sequence = 0;
  auto complete_at = [&](Time t, int stage, std::uint32_t index) {
    events.emplace(t.picoseconds(), sequence++, stage, index);
  };

  auto issue = [&](int stage, std::uint32_t index, Time now) {
    const Op& op = play[static_cast<std::size_t>(stage)].program->ops[index];
    switch (op.kind) {
      case OpKind::kCompute:
        complete_at(now + op.duration, stage, index);
        return;
      case OpKind::kCollective:
        complete_at(now + collective_bound(op, group_size(layout, op.group), injection), stage,
                    index);
        return;
      case OpKind::kSend:
      case OpKind::kRecv:
        return;  // paired in try_issue
    }
  };
  // Where the first side of each transfer waits: (stage, index), to complete it with the second.
  std::map<TransferKey, std::pair<int, std::uint32_t>> waiting;

  auto try_issue = [&](int stage, Time now) {
    StagePlay& st = play[static_cast<std::size_t>(stage)];
    for (std::size_t s = 0; s < kStreams; ++s) {
      if (st.busy[s] || st.cursor[s] >= st.streams[s].size()) continue;
      const std::uint32_t index = st.streams[s][st.cursor[s]];
      const Op& op = st.program->ops[index];
      bool ready = true;
      for (std::uint32_t d : st.program->deps_of(op)) {
        if (!st.done[d]) {
          ready = false;
          break;
        }
      }
      if (!ready) continue;
      st.busy[s] = true;
      if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
        const int n = group_size(layout, op.group);
        const int offset =
            ((op.kind == OpKind::kSend ? op.peer_offset : -op.peer_offset) % n + n) % n;
        int sender = stage;
        if (op.group == Communicator::kPipeline && op.kind == OpKind::kRecv)
          sender = (stage + op.peer_offset % n + n) % n;
        const TransferKey key{sender, static_cast<int>(op.group), offset, op.seq};
        const auto w = waiting.find(key);
        if (w == waiting.end()) {
          waiting.emplace(key, std::pair{stage, index});
          continue;
        }
        const Time end = now + time_for(static_cast<double>(op.bytes), injection);
        complete_at(end, w->second.first, w->second.second);
        complete_at(end, stage, index);
        waiting.erase(w);
        continue;
      }
      issue(stage, index, now);
    }
  };

  for (int s = 0; s < stages; ++s)
    try_issue(s, Time::zero());
  while (!events.empty()) {
    const auto [t, seq, stage, index] = events.top();
    events.pop();
    StagePlay& st = play[static_cast<std::size_t>(stage)];
    const Op& op = st.program->ops[index];
    const auto s = static_cast<std::size_t>(op.stream);
    st.busy[s] = false;
    ++st.cursor[s];
    st.done[index] = true;
    --st.left;
    st.end = std::max(st.end, Time::ps(t));
    try_issue(stage, Time::ps(t));
    // A completed send or receive may let the other stage's streams go on as well; they are
    // tried when their own completion arrives, which was scheduled with this one.
  }
  result.step = result.compute;
  for (const auto& st : play) {
    if (st.left > 0) result.stalled = true;
    result.step = std::max(result.step, st.end);
  }
  return result;
}

}  // namespace stepsim::search
