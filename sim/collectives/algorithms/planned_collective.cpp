#include "sim/collectives/algorithms/planned_collective.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/collectives/nccl/nccl_p2p.hpp"
#include "sim/collectives/nccl/nccl_tuner.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {

std::optional<NcclAlgorithm> nccl_algorithm_of(std::string_view name) {
  if (name == "ring" || name == "ring-fluid" || name == "ring-pipelined" ||
      name == "hierarchical" || name == "hierarchical-pipelined")
    return NcclAlgorithm::kRing;
  if (name == "tree") return NcclAlgorithm::kTree;
  if (name == "in-switch") return NcclAlgorithm::kNvls;
  if (name == "nvls-tree") return NcclAlgorithm::kNvlsTree;
  if (name == "collnet") return NcclAlgorithm::kCollNetDirect;
  if (name == "collnet-chain") return NcclAlgorithm::kCollNetChain;
  if (name == "pat") return NcclAlgorithm::kPat;
  if (name == "nvls-collnet") return NcclAlgorithm::kNvls;
  return std::nullopt;
}

namespace {

// NCCL's point-to-point protocol (enqueue.cc, addP2pToPlan): LL for a transfer of at most
// NCCL_P2P_LL_THRESHOLD (16 KiB) to one peer, Simple above; LL128 is not used for p2p.
constexpr std::int64_t kP2pLLThreshold = 16384;

bool is_point_to_point(CollectiveKind kind) {
  return kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kAllToAllv ||
         kind == CollectiveKind::kSendRecv;
}

// The largest transfer to one peer: S/n for AllToAll, the largest matrix entry for AllToAllv,
// the buffer for Send/Recv.
std::int64_t per_peer_bytes(const Operation& op, const GroupShape& group) {
  if (op.kind == CollectiveKind::kSendRecv) return op.size.count();
  if (op.kind == CollectiveKind::kAllToAllv) {
    std::int64_t largest = 0;
    for (Bytes b : op.matrix)
      largest = std::max(largest, b.count());
    return largest;
  }
  return op.size.count() / std::max<std::uint32_t>(group.size, 1);
}

// NCCL's p2p channels inside a scale-up domain (nccl_p2p.hpp): every transfer between two
// members of one domain (not relayed) moves at most its channels' rate, and on Simple pays the
// pipeline's fill.
void limit_p2p_channels(Plan& plan, const GroupShape& group, Protocol protocol) {
  const auto model = nccl_p2p_model(group);
  if (!model) return;
  auto domain_of = [&](std::uint32_t m) { return group.domain.empty() ? 0u : group.domain[m]; };
  for (std::uint32_t i = 0; i < plan.size(); ++i) {
    const Transfer& t = plan.transfer(TransferId(i));
    if (t.is_join() || t.src.is_switch() || t.dst.is_switch() || t.relay != Transfer::kNoRelay)
      continue;
    if (domain_of(t.src.member_index()) != domain_of(t.dst.member_index())) continue;
    const NcclP2pLimit limit = nccl_p2p_limit(*model, t.bytes.count());
    plan.limit_transfer(TransferId(i), limit.ceiling,
                        protocol == Protocol::kSimple ? limit.fill : Time::zero());
  }
}

void check_operation_size(const Operation& op) {
  // (An AllToAllv's size is its largest row sum, what one rank sends.)
  if (op.size.count() > kMaxOperationBytes) {
    throw InputError(fmt::format(
        "the collective's size is {} bytes; stepsim plans collectives of at most 1 PiB ({} bytes)",
        op.size.count(), kMaxOperationBytes));
  }
}

}  // namespace

PlannedCollective plan_collective(const Algorithm& algorithm, const Operation& op,
                                  const GroupShape& group, const PlanOptions& requested) {
  check_operation_size(op);
  // Where NCCL does not run (an HCCL fabric), `auto` keeps stepsim's own rules and latencies; a
  // forced protocol still runs NCCL's model, as asked.
  PlanOptions options = requested;
  if (!group.nccl && options.protocol == ProtocolChoice::kAuto)
    options.protocol = ProtocolChoice::kOff;
  const std::string name(algorithm.resolve(op, group, options));
  const auto nccl = nccl_algorithm_of(name);
  if (options.protocol != ProtocolChoice::kOff && !nccl && is_point_to_point(op.kind)) {
    // NCCL's p2p: its protocol's wire bytes (the plan's latencies stay the calibrated ones; NCCL's
    // tuner has no p2p model). A forced LL128 runs Simple, as NCCL's p2p would.
    Protocol protocol =
        per_peer_bytes(op, group) <= kP2pLLThreshold ? Protocol::kLL : Protocol::kSimple;
    if (options.protocol == ProtocolChoice::kLL) protocol = Protocol::kLL;
    if (options.protocol == ProtocolChoice::kSimple || options.protocol == ProtocolChoice::kLL128)
      protocol = Protocol::kSimple;
    Plan plan = algorithm.plan(op, group, options);
    plan.set_protocol(protocol);
    limit_p2p_channels(plan, group, protocol);
    return {std::move(plan), fmt::format("{}/{}", name, to_string(protocol))};
  }
  if (options.protocol == ProtocolChoice::kOff || !nccl)
    return {algorithm.plan(op, group, options), name};
  const auto forced = forced_protocol(options.protocol);
  Protocol protocol = forced.value_or(Protocol::kSimple);
  if (forced && !nccl_supports(*nccl, *forced))
    throw InputError(fmt::format("protocol {} does not run with {} (NCCL runs {} with Simple only)",
                                 to_string(*forced), name, to_string(*nccl)));
  if (!forced) {
    const NcclAlgorithm candidates[] = {*nccl};
    // NCCL's tuner for this algorithm; where its model has no entry for the operation (the ring
    // standing in for a two-level form, say), the protocol it would use on a ring.
    auto choice = nccl_choose(op, group, candidates);
    if (!choice) {
      const NcclAlgorithm ring[] = {NcclAlgorithm::kRing};
      choice = nccl_choose(op, group, ring);
    }
    if (choice) protocol = choice->protocol;
  }
  Plan plan = algorithm.plan(op, group, nccl_plan_options(options, *nccl, protocol, group));
  plan.set_protocol(protocol);
  // NCCL's ceilings beyond the links: each member's sends held to its share of the operation's
  // time at the ceiling (bytes it sends / size x the algorithm bandwidth), so that the plan's
  // bandwidth term is at least NCCL's at that ceiling; a ring member sends at most busBw.
  if (const auto ceiling = nccl_algorithm_ceiling(op, group, *nccl, protocol);
      ceiling && op.size.count() > 0) {
    const std::vector<Bytes> sent = plan.bytes_sent(group.size);
    std::vector<BytesPerSecond> ceilings;
    ceilings.reserve(sent.size());
    for (const Bytes b : sent)
      ceilings.push_back(BytesPerSecond(b.as_double() / op.size.as_double() * ceiling->value()));
    plan.set_send_ceilings(std::move(ceilings));
  }
  return {std::move(plan), fmt::format("{}/{}", name, to_string(protocol))};
}

}  // namespace stepsim::collectives
