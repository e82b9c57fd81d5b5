// A collective's plan: a directed acyclic graph of transfers that an algorithm produced from an
// operation, independent of any topology.
//
// A transfer moves `bytes` from one endpoint to another: a group member (index 0..n-1 in the
// communicator) or the group's reduction switch (in-switch reduction, NVLS/SHARP). It may start
// once every transfer it depends on has completed; it then takes
//   extra_latency + path_traversals x (latency of the route) + the time to drain its bytes
// at the rate the network gives it. `extra_latency` carries the software and protocol overheads
// (per algorithm step, per operation); `path_traversals` > 1 marks a fluid transfer that stands
// for that many consecutive algorithm steps, so that it pays the route latency once per step.
// A transfer whose source and destination are the same member is a join: it moves nothing over
// the network and completes `extra_latency` after its dependencies (it keeps dependency lists
// short: n joins instead of n^2 edges).
//
// Dependencies are stored in compressed sparse row form and always point to earlier transfers, so
// transfer order is a topological order. Plans stay compact: a fluid ring over n ranks is n
// transfers with no dependencies.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "sim/collectives/plan/operation.hpp"
#include "sim/collectives/plan/protocol.hpp"
#include "sim/common/units.hpp"

namespace stepsim::collectives {

// A transfer's source or destination: a group member or a switch that reduces.
class Endpoint {
 public:
  static constexpr Endpoint member(std::uint32_t index) { return Endpoint(index); }
  // The switch that reduces for the whole group (NVLS inside its one domain).
  static constexpr Endpoint reduction_switch() { return Endpoint(kSwitch); }
  // The reducing switch of the group's scale-up domain `domain` (GroupShape numbering), for
  // plans that reduce in every domain (NVLS-tree). Domain 0's is reduction_switch().
  static constexpr Endpoint domain_switch(std::uint32_t domain) {
    return Endpoint(kSwitch - domain);
  }
  // Switch `index` of the group's reduction trees in the scale-out fabric (InfiniBand SHARP:
  // GroupShape::network_tree numbers them), for plans that reduce in the network (CollNet).
  static constexpr Endpoint network_switch(std::uint32_t index) {
    return Endpoint(kFirstNetworkSwitch - index);
  }
  constexpr bool is_switch() const { return value_ >= kFirstSwitch; }
  constexpr bool is_network_switch() const {
    return value_ >= kFirstSwitch && value_ <= kFirstNetworkSwitch;
  }
  // For a domain switch (not a network switch).
  constexpr std::uint32_t switch_domain() const { return kSwitch - value_; }
  constexpr std::uint32_t network_switch_index() const { return kFirstNetworkSwitch - value_; }
  constexpr std::uint32_t member_index() const { return value_; }
  constexpr auto operator<=>(const Endpoint&) const = default;

 private:
  static constexpr std::uint32_t kSwitch = std::numeric_limits<std::uint32_t>::max();
  // 8 M domain switches and 8 M network switches at most.
  static constexpr std::uint32_t kFirstSwitch = kSwitch - (1u << 24);
  static constexpr std::uint32_t kFirstNetworkSwitch = kSwitch - (1u << 23);
  constexpr explicit Endpoint(std::uint32_t value) : value_(value) {}
  std::uint32_t value_ = 0;
};

// Index of a transfer within its plan.
class TransferId {
 public:
  constexpr TransferId() = default;
  constexpr explicit TransferId(std::uint32_t value) : value_(value) {}
  constexpr std::uint32_t value() const { return value_; }
  constexpr auto operator<=>(const TransferId&) const = default;

 private:
  std::uint32_t value_ = 0;
};

struct Transfer {
  static constexpr std::uint32_t kNoRelay = std::numeric_limits<std::uint32_t>::max();

  Endpoint src = Endpoint::member(0);
  Endpoint dst = Endpoint::member(0);
  Bytes bytes;
  Time extra_latency;
  std::uint32_t path_traversals = 1;
  // A member the data passes through on its way (NCCL's PXN, GroupShape::pxn_relays): the flow's
  // route is the route to the relay followed by the relay's route to the destination.
  std::uint32_t relay = kNoRelay;
  // The most payload bytes per second this transfer moves, a bound its links do not show (the
  // channels NCCL gives one point-to-point transfer, nccl_p2p.hpp); zero: none. The runner caps
  // the transfer's flow at that rate (x the protocol's wire factor); a flow split over several
  // paths crosses a private link of that capacity instead.
  BytesPerSecond rate_ceiling{};

  bool is_join() const { return src == dst; }
};

// Whether the group members combine the data they receive (AllReduce, ReduceScatter, Reduce) or
// only copy it. NCCL runs each such operation as one kernel that reduces as it goes, so the
// reducing GPU's throughput bounds every transfer of the plan into a member, the all-gather half of
// a ring AllReduce included (link_calibration.hpp, "reduction throughput").
enum class Reduction : std::uint8_t {
  kNone,       // copies only (AllGather, AllToAll, Broadcast, Send/Recv), or the switch reduces
  kByMembers,  // the receiving members reduce
};
// kByMembers for AllReduce, ReduceScatter and Reduce.
Reduction member_reduction(CollectiveKind kind);

class Plan {
 public:
  Reduction reduction() const { return reduction_; }
  // NCCL's protocol the plan runs with (protocol.hpp), if any. Transfers hold payload bytes; the
  // runner puts payload x wire_factor() on the wire (1 without a protocol).
  std::optional<Protocol> protocol() const { return protocol_; }
  double wire_factor() const { return protocol_ ? protocol_traits(*protocol_).wire_factor : 1.0; }
  void set_protocol(Protocol protocol) { protocol_ = protocol; }
  // Per member: the most payload bytes per second its transfers of this plan send together, a
  // bound the links do not show (NCCL's protocol and per-channel ceilings,
  // nccl_algorithm_ceiling); the runner holds the member's flows to it. Empty: none (then, and
  // for a zero entry, only the links bound the rates).
  std::span<const BytesPerSecond> send_ceilings() const { return send_ceilings_; }
  void set_send_ceilings(std::vector<BytesPerSecond> ceilings) {
    send_ceilings_ = std::move(ceilings);
  }
  // Bounds transfer `id` to `ceiling` (Transfer::rate_ceiling) and adds `extra` to its latency.
  void limit_transfer(TransferId id, BytesPerSecond ceiling, Time extra);
  // Whether any transfer has a rate ceiling.
  bool has_transfer_ceilings() const { return has_transfer_ceilings_; }
  std::size_t size() const { return transfers_.size(); }
  const Transfer& transfer(TransferId id) const { return transfers_[id.value()]; }
  const std::vector<Transfer>& transfers() const { return transfers_; }
  std::span<const TransferId> dependencies(TransferId id) const {
    return {deps_.data() + offsets_[id.value()], deps_.data() + offsets_[id.value() + 1]};
  }
  std::size_t num_dependencies() const { return deps_.size(); }
  // Transfers that wait for `id` (the reverse graph), for the runner.
  std::span<const TransferId> dependents(TransferId id) const {
    return {rdeps_.data() + roffsets_[id.value()], rdeps_.data() + roffsets_[id.value() + 1]};
  }
  // Bytes over the network (joins excluded).
  Bytes total_bytes() const;
  // Bytes sent by / received by each member (index = member), over the network.
  std::vector<Bytes> bytes_sent(std::size_t members) const;
  std::vector<Bytes> bytes_received(std::size_t members) const;

 private:
  friend class PlanBuilder;
  std::vector<Transfer> transfers_;
  std::vector<std::uint32_t> offsets_{0};
  std::vector<TransferId> deps_;
  std::vector<std::uint32_t> roffsets_;
  std::vector<TransferId> rdeps_;
  Reduction reduction_ = Reduction::kNone;
  std::optional<Protocol> protocol_;
  std::vector<BytesPerSecond> send_ceilings_;
  bool has_transfer_ceilings_ = false;
};

class PlanBuilder {
 public:
  // Adds a transfer that starts after all of `deps` (which must already be in the plan).
  TransferId add(const Transfer& transfer, std::span<const TransferId> deps = {});
  TransferId add(const Transfer& transfer, std::initializer_list<TransferId> deps) {
    return add(transfer, std::span<const TransferId>(deps.begin(), deps.size()));
  }
  // A join at `member` after all of `deps`.
  TransferId join(std::uint32_t member, std::span<const TransferId> deps, Time latency = Time{});
  std::size_t size() const { return plan_.transfers_.size(); }
  void reserve(std::size_t transfers, std::size_t deps);
  // Builds the reverse graph and hands the plan over.
  Plan finish(Reduction reduction) &&;

 private:
  Plan plan_;
};

// Where each member stands between two phases of a plan: the transfer the member must wait for
// before its next phase starts, or none. Phases compose through it (hierarchical algorithms).
class Frontier {
 public:
  explicit Frontier(std::size_t members) : ready_(members, kNone) {}
  bool has(std::uint32_t member) const { return ready_[member] != kNone; }
  // The dependency list for `member`: empty or one transfer.
  std::span<const TransferId> deps(std::uint32_t member) const {
    return has(member) ? std::span<const TransferId>(&ready_[member], 1)
                       : std::span<const TransferId>();
  }
  void set(std::uint32_t member, TransferId id) { ready_[member] = id; }
  // Sets `member`'s frontier to `ids`, through a join when there is more than one.
  void set_all(PlanBuilder& builder, std::uint32_t member, std::span<const TransferId> ids);
  std::size_t size() const { return ready_.size(); }

 private:
  static constexpr TransferId kNone{std::numeric_limits<std::uint32_t>::max()};
  std::vector<TransferId> ready_;
};

}  // namespace stepsim::collectives
