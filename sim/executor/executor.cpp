#include "sim/executor/executor.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/planned_collective.hpp"
#include "sim/collectives/runner/placement.hpp"
#include "sim/collectives/runner/topology_network.hpp"
#include "sim/engine/flow_network.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/executor/op_label.hpp"
#include "topology/router.hpp"

namespace stepsim::executor {
namespace {

using workloads::Op;
using workloads::OpKind;
using workloads::ParallelDim;
using workloads::Program;

constexpr std::size_t kStreams = static_cast<std::size_t>(workloads::Stream::kCount);
constexpr std::uint32_t kNone = 0xFFFFFFFFu;
constexpr std::uint64_t kProgressMask = (std::uint64_t{1} << 18) - 1;

// Breakdown categories, in priority order (a lower value wins where several overlap).
constexpr std::uint8_t kCategoryCompute = 0;
constexpr std::uint8_t kCategoryCommBase = 1;  // + ParallelDim
constexpr std::uint8_t kCategoryBubble = kCategoryCommBase + kDimensionCount;
constexpr std::uint8_t kCategoryWait = kCategoryBubble + 1;
constexpr std::size_t kCategories = kCategoryWait + 1;

struct Interval {
  Time start;
  Time end;
  std::uint8_t category;
};

std::size_t dim_index(ParallelDim d) {
  return static_cast<std::size_t>(d);
}

// Splits [0, step) among the categories of `intervals`, the highest-priority active one taking
// each instant; time covered by none is idle.
RankBreakdown sweep(int rank, std::vector<Interval>& intervals, Time step) {
  struct Edge {
    std::int64_t at;
    int delta;
    std::uint8_t category;
  };
  std::vector<Edge> edges;
  edges.reserve(intervals.size() * 2);
  for (const auto& iv : intervals) {
    if (iv.end <= iv.start) continue;
    edges.push_back({iv.start.picoseconds(), +1, iv.category});
    edges.push_back({iv.end.picoseconds(), -1, iv.category});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.at != b.at ? a.at < b.at : a.category < b.category;
  });
  std::array<std::int64_t, kCategories> ps{};
  std::array<int, kCategories> active{};
  std::int64_t idle = 0;
  std::int64_t last = 0;
  for (const auto& e : edges) {
    if (e.at > last) {
      const std::int64_t span = e.at - last;
      std::size_t c = 0;
      while (c < kCategories && active[c] == 0)
        ++c;
      if (c < kCategories) {
        ps[c] += span;
      } else {
        idle += span;
      }
      last = e.at;
    }
    active[e.category] += e.delta;
  }
  idle += std::max<std::int64_t>(0, step.picoseconds() - last);
  RankBreakdown b;
  b.rank = rank;
  b.compute = Time::ps(ps[kCategoryCompute]);
  for (std::size_t d = 0; d < kDimensionCount; ++d)
    b.exposed[d] = Time::ps(ps[kCategoryCommBase + d]);
  b.bubble = Time::ps(ps[kCategoryBubble]);
  b.wait = Time::ps(ps[kCategoryWait]);
  b.idle = Time::ps(idle);
  return b;
}

}  // namespace

Time RankBreakdown::total() const {
  Time t = compute + bubble + wait + idle;
  for (const auto& e : exposed)
    t += e;
  return t;
}

class Executor::Impl {
 public:
  Impl(const workloads::Workload& workload, const topology::Topology& topology,
       ExecutorOptions options, OpListener* listener)
      : workload_(workload),
        topology_(topology),
        options_(std::move(options)),
        listener_(listener),
        network_(sim_, engine::FlowNetworkOptions{.idle_tolerance = options_.network.idle_tolerance,
                                                  .record_utilization_samples =
                                                      options_.record_link_samples,
                                                  .sampled_links = options_.sampled_links}),
        router_(topology_),
        links_(collectives::add_topology_links(network_, topology_, options_.network.calibration)),
        runner_(sim_, network_, topology_, router_, links_, options_.network.runner),
        registry_(collectives::builtin_algorithms()),
        algorithm_(registry_.create(options_.network.algorithm)),
        fallback_(registry_.create("auto")),
        direct_(registry_.create("direct")) {
    const int world = workload_.world_size();
    if (static_cast<std::size_t>(world) > topology_.accelerators().size()) {
      throw std::logic_error("executor: more ranks than accelerators (validate_layout first)");
    }
    if (!options_.rank_accelerators.empty() &&
        options_.rank_accelerators.size() != static_cast<std::size_t>(world)) {
      throw std::logic_error("executor: rank_accelerators must name one accelerator per rank");
    }
    const double share = workload_.spec().compute.comm_sm_share();
    comm_slowdown_ = share > 0 ? 1.0 / (1.0 - share) : 1.0;
    const int stages = workload_.spec().parallel.pp;
    stage_streams_.resize(static_cast<std::size_t>(stages));
    stage_positions_.resize(static_cast<std::size_t>(stages));
    for (int s = 0; s < stages; ++s) {
      const Program& program = workload_.stage_program(s);
      auto& streams = stage_streams_[static_cast<std::size_t>(s)];
      auto& positions = stage_positions_[static_cast<std::size_t>(s)];
      positions.resize(program.ops.size());
      for (std::uint32_t i = 0; i < program.ops.size(); ++i) {
        const auto stream = static_cast<std::size_t>(program.ops[i].stream);
        positions[i] = {static_cast<std::uint32_t>(streams[stream].size()),
                        static_cast<std::uint8_t>(stream)};
        streams[stream].push_back(i);
      }
    }
    ranks_.resize(static_cast<std::size_t>(world));
    for (int r = 0; r < world; ++r) {
      auto& state = ranks_[static_cast<std::size_t>(r)];
      state.stage = workload_.ranks().stage(r);
      state.left = static_cast<std::uint32_t>(workload_.program(r).ops.size());
      total_operations_ += state.left;
    }
    for (std::size_t i = 0; i < options_.detail_ranks.size(); ++i) {
      const int r = options_.detail_ranks[i];
      if (r < 0 || r >= world) {
        throw std::logic_error(fmt::format("executor: detail rank {} out of range", r));
      }
      ranks_[static_cast<std::size_t>(r)].detail = static_cast<int>(i);
    }
    detail_intervals_.resize(options_.detail_ranks.size());
    placements_.resize(workload_.ranks().group_count());
    pending_by_group_.resize(workload_.ranks().group_count());
  }

  ExecutionResult run() {
    for (int r = 0; r < workload_.world_size(); ++r)
      advance(r);
    sim_.run();
    ExecutionResult result;
    result.rank_end.resize(ranks_.size());
    std::vector<int> stalled;
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      result.rank_end[r] = ranks_[r].end;
      result.step_time = std::max(result.step_time, ranks_[r].end);
      if (ranks_[r].left > 0) stalled.push_back(static_cast<int>(r));
    }
    if (!stalled.empty()) throw ExecutionStalled(describe_stall(stalled));
    result.traffic = traffic_;
    for (std::size_t i = 0; i < options_.detail_ranks.size(); ++i) {
      result.breakdowns.push_back(
          sweep(options_.detail_ranks[i], detail_intervals_[i], result.step_time));
    }
    result.operations = operations_;
    result.flows = flows_;
    result.events = sim_.events_processed();
    return result;
  }

  const engine::FlowNetwork& network() const { return network_; }
  const collectives::NetworkLinks& links() const { return links_; }

 private:
  struct RankState {
    // cursor[s]: position in stream s of its head operation; the operations before it are done
    // (a stream runs in order), which is how dependencies are checked.
    std::array<std::uint32_t, kStreams> cursor{};
    std::array<Time, kStreams> issued{};
    std::array<bool, kStreams> busy{};
    std::uint32_t left = 0;
    int stage = 0;
    Time end;
    int detail = -1;
    // Data- and tensor-parallel collectives issued and not finished: their kernels (NCCL's
    // channels, Transformer Engine's userbuffers) hold SMs from launch to completion.
    std::uint32_t sm_holders = 0;
  };

  // Collectives whose kernels share the SMs with the compute stream while it computes.
  static bool holds_sms(const Op& op) {
    return op.kind == OpKind::kCollective &&
           (op.stream == workloads::Stream::kDp || op.stream == workloads::Stream::kTp);
  }
  // A compute kernel that needs every SM (GEMMs, attention; memory-bound kernels saturate HBM
  // on fewer).
  static bool sm_bound(const Op& op) {
    return op.compute == workloads::ComputeKind::kGemm ||
           op.compute == workloads::ComputeKind::kGroupedGemm ||
           op.compute == workloads::ComputeKind::kAttention;
  }
  // Where an operation sits in its stage's streams.
  struct StreamPosition {
    std::uint32_t position;
    std::uint8_t stream;
  };
  // A collective some members have issued, in a pool of reused slots (their vectors keep their
  // capacity), found through its group's short list of open collectives.
  struct PendingCollective {
    std::uint32_t seq = 0;
    std::uint32_t arrived = 0;
    std::vector<std::uint32_t> op_index;  // per member position
    std::vector<Time> issued;
  };
  struct PendingTransfer {
    std::uint32_t send_op = kNone;
    std::uint32_t recv_op = kNone;
    Time send_issued;
    Time recv_issued;
  };
  struct TransferKey {
    std::uint64_t pair;  // sender * world + receiver
    std::uint32_t seq;
    bool operator==(const TransferKey&) const = default;
  };
  struct TransferKeyHash {
    std::size_t operator()(const TransferKey& k) const {
      return std::hash<std::uint64_t>()(k.pair * 0x9E3779B97F4A7C15ull ^ k.seq);
    }
  };
  struct PlanKey {
    std::uint32_t group;
    std::uint8_t kind;
    std::int64_t bytes;
    std::uint32_t matrix;
    auto operator<=>(const PlanKey&) const = default;
  };
  // A plan depends on the operation and the group's shape only (plan_collective), so groups of
  // one shape (the data-parallel groups of every pipeline stage, say) share it; the routes are
  // each group's own.
  struct ShapePlanKey {
    std::uint32_t shape;  // index in shapes_
    std::uint8_t kind;
    std::int64_t bytes;
    std::uint32_t matrix;
    auto operator<=>(const ShapePlanKey&) const = default;
  };
  struct SharedPlan {
    std::shared_ptr<const collectives::Plan> plan;
    Bytes wire;             // bytes the members send
    std::string algorithm;  // the algorithm that built it (`auto` resolved)
  };
  struct CachedPlan {
    const SharedPlan* shared;       // in shared_plans_ (a std::map: its nodes stay put)
    collectives::RouteMemo routes;  // for the runner: its routes on the group's placement
  };
  // A started collective or transfer: who to complete when it is done (a pool slot, reused).
  struct Started {
    std::vector<int> ranks;
    std::vector<std::uint32_t> op_index;
    std::vector<Time> issued;
    Time start;
    std::uint64_t transfer = 0;
    const char* algorithm = "";
  };

  void advance(int rank) {
    RankState& r = ranks_[static_cast<std::size_t>(rank)];
    const auto stage = static_cast<std::size_t>(r.stage);
    const Program& program = workload_.stage_program(r.stage);
    const auto& streams = stage_streams_[stage];
    const StreamPosition* positions = stage_positions_[stage].data();
    for (std::size_t s = 0; s < kStreams; ++s) {
      if (r.busy[s] || r.cursor[s] >= streams[s].size()) continue;
      const std::uint32_t index = streams[s][r.cursor[s]];
      const Op& op = program.ops[index];
      bool ready = true;
      for (std::uint32_t d : program.deps_of(op)) {
        if (r.cursor[positions[d].stream] <= positions[d].position) {
          ready = false;
          break;
        }
      }
      if (!ready) continue;
      r.busy[s] = true;
      r.issued[s] = sim_.now();
      issue(rank, index, op);
    }
  }

  void issue(int rank, std::uint32_t index, const Op& op) {
    RankState& state = ranks_[static_cast<std::size_t>(rank)];
    switch (op.kind) {
      case OpKind::kCompute: {
        // Started beside a communication kernel: on the SMs it leaves (the share is fixed at
        // the start; a collective that starts later does not slow a running kernel).
        Time duration = op.duration;
        if (comm_slowdown_ > 1.0 && state.sm_holders > 0 && sm_bound(op)) {
          duration =
              Time::ps(std::llround(static_cast<double>(duration.picoseconds()) * comm_slowdown_));
        }
        sim_.schedule_after(duration, [this, rank, index] {
          const Time now = sim_.now();
          const Time issued =
              ranks_[static_cast<std::size_t>(rank)]
                  .issued[static_cast<std::size_t>(workload_.program(rank).ops[index].stream)];
          finish(rank, index, issued, issued, now, 0, -1, "");
        });
        return;
      }
      case OpKind::kCollective:
        if (holds_sms(op)) ++state.sm_holders;
        issue_collective(rank, index, op);
        return;
      case OpKind::kSend:
      case OpKind::kRecv:
        issue_transfer(rank, index, op);
        return;
    }
  }

  void issue_collective(int rank, std::uint32_t index, const Op& op) {
    const workloads::GroupId group = workload_.group(rank, op);
    const auto members = workload_.ranks().members(group);
    const std::size_t n = members.size();
    if (n == 1) {
      sim_.schedule_after(Time::zero(), [this, rank, index] {
        finish(rank, index, sim_.now(), sim_.now(), sim_.now(), 0, -1, "");
      });
      return;
    }
    std::vector<std::uint32_t>& open = pending_by_group_[group.value()];
    std::size_t at = 0;
    while (at < open.size() && pending_[open[at]].seq != op.seq)
      ++at;
    if (at == open.size()) {
      const std::uint32_t slot = acquire(pending_, free_pending_);
      PendingCollective& fresh = pending_[slot];
      fresh.seq = op.seq;
      fresh.arrived = 0;
      fresh.op_index.assign(n, kNone);
      fresh.issued.assign(n, Time::zero());
      open.push_back(slot);
    }
    const std::uint32_t pending_slot = open[at];
    PendingCollective& p = pending_[pending_slot];
    const auto position =
        static_cast<std::size_t>(workload_.ranks().index_in_group(rank, op.group));
    p.op_index[position] = index;
    p.issued[position] = sim_.now();
    if (++p.arrived < n) return;

    const std::uint32_t slot = acquire(started_, free_started_);
    Started& started = started_[slot];
    started.ranks.assign(members.begin(), members.end());
    started.op_index.swap(p.op_index);
    started.issued.swap(p.issued);
    started.start = sim_.now();
    started.transfer = 0;
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(at));
    free_pending_.push_back(pending_slot);

    CachedPlan& cached = plan_for(group, op);
    started.algorithm = cached.shared->algorithm.c_str();
    flows_ += cached.shared->plan->size();
    account(op, static_cast<std::int64_t>(n), cached.shared->wire);
    runner_.start(
        cached.shared->plan, placement(group), [this, slot](Time) { complete(slot); },
        &cached.routes);
  }

  template <typename T>
  static std::uint32_t acquire(std::vector<T>& pool, std::vector<std::uint32_t>& free) {
    if (free.empty()) {
      pool.emplace_back();
      return static_cast<std::uint32_t>(pool.size() - 1);
    }
    const std::uint32_t slot = free.back();
    free.pop_back();
    return slot;
  }

  void issue_transfer(int rank, std::uint32_t index, const Op& op) {
    const int peer = workload_.peer(rank, op);
    const bool is_send = op.kind == OpKind::kSend;
    const int sender = is_send ? rank : peer;
    const int receiver = is_send ? peer : rank;
    const TransferKey key{
        static_cast<std::uint64_t>(sender) * static_cast<std::uint64_t>(workload_.world_size()) +
            static_cast<std::uint64_t>(receiver),
        op.seq};
    PendingTransfer& p = pending_transfers_[key];
    (is_send ? p.send_op : p.recv_op) = index;
    (is_send ? p.send_issued : p.recv_issued) = sim_.now();
    if (p.send_op == kNone || p.recv_op == kNone) return;

    const std::uint32_t slot = acquire(started_, free_started_);
    Started& started = started_[slot];
    started.ranks.assign({sender, receiver});
    started.op_index.assign({p.send_op, p.recv_op});
    started.issued.assign({p.send_issued, p.recv_issued});
    started.start = sim_.now();
    started.transfer = ++transfers_;
    started.algorithm = "";
    pending_transfers_.erase(key);

    const std::vector<std::uint32_t> pair{accelerator_of(sender), accelerator_of(receiver)};
    collectives::Placement placement =
        collectives::place_group(topology_, pair, {.network_trees = false});
    const auto plan = transfer_plan(Bytes(op.bytes), placement);
    flows_ += plan->size();
    account(op, 1, Bytes(op.bytes));
    runner_.start(plan, placement, [this, slot](Time) { complete(slot); });
  }

  void account(const Op& op, std::int64_t members, Bytes wire) {
    DimensionTraffic& t = traffic_[dim_index(op.dim)];
    t.collectives += members;
    t.payload += Bytes(op.bytes) * members;
    t.wire += wire;
  }

  void complete(std::uint32_t slot) {
    // finish() may start collectives, which take pool slots (and may grow the pool): index anew.
    const Time now = sim_.now();
    const std::size_t n = started_[slot].ranks.size();
    for (std::size_t i = 0; i < n; ++i) {
      const Started& started = started_[slot];
      const int peer = n == 2 && started.transfer != 0 ? started.ranks[1 - i] : -1;
      finish(started.ranks[i], started.op_index[i], started.issued[i], started.start, now,
             started.transfer, peer, started.algorithm);
    }
    free_started_.push_back(slot);
  }

  void finish(int rank, std::uint32_t index, Time issued, Time start, Time end,
              std::uint64_t transfer, int peer, const char* algorithm) {
    RankState& r = ranks_[static_cast<std::size_t>(rank)];
    const Op& op = workload_.stage_program(r.stage).ops[index];
    const auto s = static_cast<std::size_t>(op.stream);
    r.busy[s] = false;
    ++r.cursor[s];
    --r.left;
    if (holds_sms(op)) --r.sm_holders;
    r.end = std::max(r.end, end);
    if ((++operations_ & kProgressMask) == 0 && options_.progress) {
      options_.progress(operations_, total_operations_);
    }
    if (r.detail >= 0) record(r.detail, op, issued, start, end);
    if (listener_ != nullptr) {
      OpRecord rec;
      rec.rank = rank;
      rec.index = index;
      rec.op = &op;
      rec.issued = issued;
      rec.start = start;
      rec.end = end;
      rec.peer = peer;
      rec.transfer = transfer;
      rec.algorithm = algorithm;
      listener_->on_op(rec);
    }
    advance(rank);
  }

  void record(int detail, const Op& op, Time issued, Time start, Time end) {
    auto& intervals = detail_intervals_[static_cast<std::size_t>(detail)];
    if (op.kind == OpKind::kCompute) {
      intervals.push_back({start, end, kCategoryCompute});
      return;
    }
    const bool pipeline = op.dim == ParallelDim::kPp;
    if (start > issued)
      intervals.push_back({issued, start, pipeline ? kCategoryBubble : kCategoryWait});
    intervals.push_back(
        {start, end, static_cast<std::uint8_t>(kCategoryCommBase + dim_index(op.dim))});
  }

  std::uint32_t accelerator_of(int rank) const {
    const auto r = static_cast<std::size_t>(rank);
    return options_.rank_accelerators.empty() ? static_cast<std::uint32_t>(rank)
                                              : options_.rank_accelerators[r];
  }

  const collectives::Placement& placement(workloads::GroupId group) {
    auto& slot = placements_[group.value()];
    if (!slot) {
      const auto members = workload_.ranks().members(group);
      std::vector<std::uint32_t> accelerators;
      accelerators.reserve(members.size());
      for (const int member : members)
        accelerators.push_back(accelerator_of(member));
      slot = collectives::place_group(topology_, accelerators);
    }
    return *slot;
  }

  CachedPlan& plan_for(workloads::GroupId group, const Op& op) {
    const PlanKey key{group.value(), static_cast<std::uint8_t>(op.collective), op.bytes, op.matrix};
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    const std::uint32_t shape = shape_of(group);
    const ShapePlanKey shared_key{shape, key.kind, key.bytes, key.matrix};
    auto shared = shared_plans_.find(shared_key);
    if (shared == shared_plans_.end())
      shared = shared_plans_.emplace(shared_key, make_plan(op, shapes_[shape])).first;
    return plans_.emplace(key, CachedPlan{&shared->second, {}}).first->second;
  }

  // The index in shapes_ of the group's shape (equal shapes share one).
  std::uint32_t shape_of(workloads::GroupId group) {
    if (group_shape_.size() <= group.value()) group_shape_.resize(group.value() + 1, kNone);
    std::uint32_t& slot = group_shape_[group.value()];
    if (slot == kNone) {
      collectives::GroupShape shape = collectives::group_shape(topology_, placement(group));
      const auto found = std::find(shapes_.begin(), shapes_.end(), shape);
      slot = static_cast<std::uint32_t>(found - shapes_.begin());
      if (found == shapes_.end()) shapes_.push_back(std::move(shape));
    }
    return slot;
  }

  SharedPlan make_plan(const Op& op, const collectives::GroupShape& shape) const {
    collectives::Operation operation;
    operation.kind = op.collective;
    operation.size = Bytes(op.bytes);
    if (operation.kind == CollectiveKind::kAllToAllv) {
      const auto& matrix = workload_.traffic_matrix(op.matrix);
      operation.matrix.reserve(matrix.size());
      std::int64_t largest_row = 0;
      const std::size_t n = shape.size;
      for (std::size_t row = 0; row < n; ++row) {
        std::int64_t sum = 0;
        for (std::size_t col = 0; col < n; ++col)
          sum += matrix[row * n + col];
        largest_row = std::max(largest_row, sum);
      }
      for (std::int64_t b : matrix)
        operation.matrix.emplace_back(b);
      operation.size = Bytes(largest_row);
    }
    const collectives::Algorithm& algorithm =
        algorithm_->unsupported(operation, shape) ? *fallback_ : *algorithm_;
    collectives::PlannedCollective planned =
        collectives::plan_collective(algorithm, operation, shape, options_.network.plan);
    auto plan = std::make_shared<const collectives::Plan>(std::move(planned.plan));
    Bytes wire;
    for (const auto& t : plan->transfers()) {
      if (!t.src.is_switch() && !t.is_join()) wire += t.bytes;
    }
    return SharedPlan{std::move(plan), wire, std::move(planned.label)};
  }

  // A point-to-point transfer's plan, as plan_collective makes it for the pair (NCCL's p2p
  // protocol and, inside a scale-up domain, its p2p channels: nccl_p2p.hpp); cached by size and
  // by what of the pair's shape the plan depends on.
  std::shared_ptr<const collectives::Plan> transfer_plan(Bytes bytes,
                                                         const collectives::Placement& where) {
    const collectives::GroupShape shape = collectives::group_shape(topology_, where);
    const TransferPlanKey key{bytes.count(), shape.num_domains(), shape.scale_up_bandwidth.value(),
                              shape.in_switch_reduction, shape.nccl};
    auto it = transfer_plans_.find(key);
    if (it != transfer_plans_.end()) return it->second;
    collectives::Operation operation;
    operation.kind = CollectiveKind::kSendRecv;
    operation.size = bytes;
    operation.root = 0;
    operation.peer = 1;
    auto plan = std::make_shared<const collectives::Plan>(
        collectives::plan_collective(*direct_, operation, shape, options_.network.plan).plan);
    return transfer_plans_.emplace(key, std::move(plan)).first->second;
  }

  std::string describe_stall(const std::vector<int>& stalled) const {
    std::string text = fmt::format(
        "the step stalled at {}: {} of {} ranks have operations that can never start "
        "(mismatched collectives or a dependency cycle)",
        format_time(sim_.now()), stalled.size(), ranks_.size());
    std::size_t shown = 0;
    for (int rank : stalled) {
      if (shown++ == 8) {
        text += fmt::format("\n  ... and {} more ranks", stalled.size() - 8);
        break;
      }
      const RankState& r = ranks_[static_cast<std::size_t>(rank)];
      const Program& program = workload_.program(rank);
      const auto& streams = stage_streams_[static_cast<std::size_t>(r.stage)];
      for (std::size_t s = 0; s < kStreams; ++s) {
        if (r.cursor[s] >= streams[s].size()) continue;
        const Op& op = program.ops[streams[s][r.cursor[s]]];
        text += fmt::format("\n  rank {}: {} {} ({})", rank,
                            r.busy[s] ? "waits in" : "cannot issue", op_label(op),
                            r.busy[s] ? waiting_for(rank, op) : "its dependencies never completed");
      }
    }
    return text;
  }

  std::string waiting_for(int rank, const Op& op) const {
    if (op.kind == OpKind::kCollective) {
      const auto group = workload_.group(rank, op);
      const auto members = workload_.ranks().members(group);
      const PendingCollective* pending = nullptr;
      for (std::uint32_t slot : pending_by_group_[group.value()]) {
        if (pending_[slot].seq == op.seq) pending = &pending_[slot];
      }
      std::vector<int> missing;
      for (std::size_t i = 0; i < members.size(); ++i) {
        if (pending == nullptr || pending->op_index[i] == kNone) missing.push_back(members[i]);
      }
      return fmt::format("waits for ranks {} to reach it", fmt::join(missing, ","));
    }
    return fmt::format("waits for rank {}", workload_.peer(rank, op));
  }

  double comm_slowdown_ = 1.0;  // compute beside an SM-holding collective (ComputeModel)
  const workloads::Workload& workload_;
  const topology::Topology& topology_;
  ExecutorOptions options_;
  OpListener* listener_;
  engine::Simulator sim_;
  engine::FlowNetwork network_;
  topology::Router router_;
  collectives::NetworkLinks links_;
  collectives::CollectiveRunner runner_;
  collectives::AlgorithmRegistry registry_;
  std::unique_ptr<collectives::Algorithm> algorithm_;
  std::unique_ptr<collectives::Algorithm> fallback_;  // where algorithm_ cannot run an operation
  std::unique_ptr<collectives::Algorithm> direct_;    // sends and receives

  std::vector<std::array<std::vector<std::uint32_t>, kStreams>> stage_streams_;
  std::vector<std::vector<StreamPosition>> stage_positions_;  // per stage, per operation
  std::vector<RankState> ranks_;
  std::vector<PendingCollective> pending_;  // pool
  std::vector<std::uint32_t> free_pending_;
  std::vector<std::vector<std::uint32_t>> pending_by_group_;  // open collectives, by group
  std::vector<Started> started_;                              // pool
  std::vector<std::uint32_t> free_started_;
  std::unordered_map<TransferKey, PendingTransfer, TransferKeyHash> pending_transfers_;
  std::vector<std::optional<collectives::Placement>> placements_;
  std::map<PlanKey, CachedPlan> plans_;
  std::vector<std::uint32_t> group_shape_;  // per group: its index in shapes_, or kNone
  std::vector<collectives::GroupShape> shapes_;
  std::map<ShapePlanKey, SharedPlan> shared_plans_;
  using TransferPlanKey = std::tuple<std::int64_t, std::uint32_t, double, bool, bool>;
  std::map<TransferPlanKey, std::shared_ptr<const collectives::Plan>> transfer_plans_;
  std::vector<std::vector<Interval>> detail_intervals_;
  std::array<DimensionTraffic, kDimensionCount> traffic_{};
  std::uint64_t operations_ = 0;
  std::uint64_t total_operations_ = 0;
  std::uint64_t flows_ = 0;
  std::uint64_t transfers_ = 0;
};

Executor::Executor(const workloads::Workload& workload, const topology::Topology& topology,
                   ExecutorOptions options, OpListener* listener)
    : impl_(std::make_unique<Impl>(workload, topology, std::move(options), listener)) {}

Executor::~Executor() = default;

ExecutionResult Executor::run() {
  return impl_->run();
}

const engine::FlowNetwork& Executor::network() const {
  return impl_->network();
}

const collectives::NetworkLinks& Executor::links() const {
  return impl_->links();
}

}  // namespace stepsim::executor
