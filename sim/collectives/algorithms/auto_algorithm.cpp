// "auto": picks an algorithm by operation, size, group shape and what the topology offers. The
// rules, in order (docs/collectives.md, "auto"):
//  1. AllToAll, AllToAllv, Send/Recv: direct.
//  2. Broadcast, Reduce: ring (pipelined chain), fluid above 64 ranks.
//  3. AllReduce, AllGather, ReduceScatter:
//     a. AllReduce only: in-switch when a reducing switch spans the group, the group is one
//        scale-up domain and S >= 1 MiB (NCCL enables NVLS for large messages inside an NVLink
//        domain). AllGather and ReduceScatter keep the ring: their published 8xH200 busbw
//        (361.4 and 362.9 GB/s, validation/data/nccl_busbw.yaml h200_nvls) is the ring's, and the
//        calibrated in-switch path would make them slower;
//     b. mesh when the group is a full mesh of direct links (GroupShape::mesh) of >= 2
//        dimensions, or of one dimension of > 2 members, at every size. By the closed forms it
//        beats halving-doubling even on tiny messages: an AllReduce takes o + 2d·a +
//        2(n-1)/n·S/(L·B) on the mesh (d dimensions, L >= d links per member) against o +
//        2·log2(n)·a + 2(n-1)/n·S/B, and d <= log2(n) since every dimension has >= 2 members:
//        fewer steps and more links. The ring pays 2(n-1) steps over one link per member. A
//        single line of 2 members is one link whatever the algorithm and stays on the rules
//        below;
//     c. halving-doubling when S/n <= 64 KiB and more than 2 ranks (latency-bound: log2(n) steps
//        instead of n-1); for AllGather/ReduceScatter only on powers of two;
//     d. hierarchical-pipelined when the group spans several equal domains of >= 2 members and
//        n > 64 (a flat ring pays 2(n-1) step latencies; NCCL pipelines its two-level forms);
//     e. ring, step by step up to 64 ranks and below 4 MiB per rank (1 MiB when every edge of
//        the ring is alike: one domain, or one member per domain), fluid otherwise (its plan
//        grows as n^2 chunks; on large messages the two forms agree within 1%).
#include <bit>
#include <map>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/nccl/nccl_tuner.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

constexpr std::uint32_t kStepByStepRanks = 64;
// From this much data per rank on, the fluid ring stands in for the step-by-step one: the two
// agree within 1% on large messages (tests/collectives/ring_forms_test.cpp), and the fluid plan
// has n transfers instead of about 2(n-1) x n x chunks, which decides the speed of a whole step.
// A ring whose edges are alike (all inside one domain, or all across domains: one member per
// domain, as a data-parallel ring over nodes) agrees with the step form within 1% from 1 MiB per
// rank on; a ring that mixes NVLink and network edges needs more, because the fluid form charges
// every edge the slowest edge's latency at each of its 2(n-1) steps (ring_forms_test.cpp).
constexpr std::int64_t kFluidBytesPerRank = std::int64_t{4} << 20;
constexpr std::int64_t kFluidBytesPerRankUniformEdges = std::int64_t{1} << 20;
constexpr std::int64_t kInSwitchMinBytes = std::int64_t{1} << 20;
constexpr std::int64_t kLatencyBoundBytesPerRank = std::int64_t{64} << 10;

class AutoAlgorithm final : public Algorithm {
 public:
  explicit AutoAlgorithm(const AlgorithmRegistry& registry) {
    for (const char* name : {"direct", "ring", "ring-fluid", "in-switch", "mesh",
                             "halving-doubling", "hierarchical-pipelined", "tree", "nvls-tree",
                             "collnet", "collnet-chain", "nvls-collnet", "pat"})
      if (registry.contains(name)) algorithms_.emplace(name, registry.create(name));
  }
  std::string_view name() const override { return "auto"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    return choose(op, group).unsupported(op, group);
  }

  std::string_view resolve(const Operation& op, const GroupShape& group) const override {
    return choose(op, group).name();
  }
  std::string_view resolve(const Operation& op, const GroupShape& group,
                           const PlanOptions& options) const override {
    return choose(op, group, options).name();
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    return choose(op, group, options).plan(op, group, options);
  }

 private:
  // With NCCL's protocol model on: the algorithm NCCL's tuner predicts fastest over every
  // protocol (or the forced one), among Ring, Tree, NVLS (across domains: NVLS with CollNet),
  // NVLS-tree, CollNet-Direct and CollNetChain (where the fabric has SHARP trees) and, for NCCL
  // 2.23 and later (PlanOptions::nccl_version), PAT, for the operations NCCL runs that way; a full
  // mesh keeps `mesh` (NCCL has no such algorithm) and point-to-point operations keep `direct`.
  // Ring becomes the ring form the rules below pick.
  const Algorithm& choose(const Operation& op, const GroupShape& group,
                          const PlanOptions& options) const {
    if (options.protocol == ProtocolChoice::kOff) return choose(op, group);
    if (group.mesh && (group.mesh->dimensions() >= 2 || group.size > 2)) return choose(op, group);
    std::vector<NcclAlgorithm> candidates{NcclAlgorithm::kRing};
    const bool multi = group.num_domains() > 1;
    for (auto [algorithm, name] :
         {std::pair{NcclAlgorithm::kTree, "tree"},
          std::pair{NcclAlgorithm::kNvls, multi ? "nvls-collnet" : "in-switch"},
          std::pair{NcclAlgorithm::kNvlsTree, "nvls-tree"},
          std::pair{NcclAlgorithm::kCollNetDirect, "collnet"},
          std::pair{NcclAlgorithm::kCollNetChain, "collnet-chain"},
          std::pair{NcclAlgorithm::kPat, "pat"}})
      if (algorithms_.contains(name) && !get(name).unsupported(op, group) &&
          (algorithm != NcclAlgorithm::kPat || options.nccl_version >= kNcclPatVersion))
        candidates.push_back(algorithm);
    const auto choice = nccl_choose(op, group, candidates, forced_protocol(options.protocol));
    if (!choice) return choose(op, group);
    switch (choice->algorithm) {
      case NcclAlgorithm::kTree:
        return get("tree");
      case NcclAlgorithm::kNvls:
        return get(multi ? "nvls-collnet" : "in-switch");
      case NcclAlgorithm::kNvlsTree:
        return get("nvls-tree");
      case NcclAlgorithm::kCollNetDirect:
        return get("collnet");
      case NcclAlgorithm::kCollNetChain:
        return get("collnet-chain");
      case NcclAlgorithm::kPat:
        return get("pat");
      default:
        return nccl_ring_form(op, group);
    }
  }

  // The ring NCCL runs is flat: one ring through every member, channel by channel, whatever the
  // domains (NCCL has no two-level ring; its two-level algorithms are the trees above). The
  // step-by-step form up to 64 members and small messages, the fluid form otherwise. On 10 x 8
  // H100, AllGather at 16 GiB: 324.3 GB/s published (xxrjun/nccl-tests-cluster,
  // validation/data/nccl_tests_other_ops.yaml), 372.0 by the flat ring, 403.1 by the two-level
  // form.
  const Algorithm& nccl_ring_form(const Operation& op, const GroupShape& group) const {
    const std::uint32_t n = group.size;
    if (n <= kStepByStepRanks) return ring_form(op, group);
    return get("ring-fluid");
  }

  // The ring NCCL runs, in the form that simulates it best: two-level and pipelined on large
  // multi-domain groups, step by step on small ones, fluid on large messages (rules d and e).
  const Algorithm& ring_form(const Operation& op, const GroupShape& group) const {
    const std::uint32_t n = group.size;
    const bool large_ring = n > kStepByStepRanks;
    if (op.kind == CollectiveKind::kBroadcast || op.kind == CollectiveKind::kReduce)
      return get(large_ring ? "ring-fluid" : "ring");
    const std::uint32_t domains = group.num_domains();
    const auto per_domain = group.uniform_domain_size();
    if (domains >= 2 && per_domain && *per_domain >= 2 && large_ring)
      return get("hierarchical-pipelined");
    const bool uniform_edges = domains <= 1 || (per_domain && *per_domain == 1);
    const bool large_message =
        op.size.count() / n >=
        (uniform_edges ? kFluidBytesPerRankUniformEdges : kFluidBytesPerRank);
    return get(large_ring || large_message ? "ring-fluid" : "ring");
  }

  const Algorithm& choose(const Operation& op, const GroupShape& group) const {
    const std::uint32_t n = group.size;
    const bool large_ring = n > kStepByStepRanks;
    switch (op.kind) {
      case CollectiveKind::kAllToAll:
      case CollectiveKind::kAllToAllv:
      case CollectiveKind::kSendRecv:
        return get("direct");
      case CollectiveKind::kBroadcast:
      case CollectiveKind::kReduce:
        return get(large_ring ? "ring-fluid" : "ring");
      default:
        break;
    }
    const std::uint32_t domains = group.num_domains();
    if (op.kind == CollectiveKind::kAllReduce && group.in_switch_reduction && domains == 1 &&
        op.size.count() >= kInSwitchMinBytes)
      return get("in-switch");
    if (group.mesh && (group.mesh->dimensions() >= 2 || n > 2)) return get("mesh");
    const bool power_of_two = std::has_single_bit(n);
    if (n > 2 && op.size.count() / n <= kLatencyBoundBytesPerRank &&
        (op.kind == CollectiveKind::kAllReduce || power_of_two))
      return get("halving-doubling");
    return ring_form(op, group);
  }

  const Algorithm& get(const std::string& name) const {
    const auto it = algorithms_.find(name);
    if (it == algorithms_.end())
      throw std::logic_error("auto: algorithm '" + name + "' is not registered (bug)");
    return *it->second;
  }

  std::map<std::string, std::unique_ptr<Algorithm>> algorithms_;
};

}  // namespace

void register_auto_algorithm(AlgorithmRegistry& registry) {
  registry.add("auto", "chosen by operation, size, group shape and topology (docs/collectives.md)",
               [](const AlgorithmRegistry& r) { return std::make_unique<AutoAlgorithm>(r); });
}

}  // namespace stepsim::collectives
