#include "workloads/rank_map.hpp"

#include <fmt/format.h>

#include <map>

#include "sim/common/input_error.hpp"

namespace stepsim::workloads {

namespace {

constexpr std::size_t idx(OrderDim d) {
  return static_cast<std::size_t>(d);
}

}  // namespace

RankMap::RankMap(const ParallelLayout& p) : world_(p.world_size()) {
  auto decompose = [&](std::array<int, 5> size) {
    Decomposition dec;
    dec.size = size;
    int stride = 1;
    for (OrderDim d : p.order) {
      dec.stride[idx(d)] = stride;
      stride *= size[idx(d)];
    }
    return dec;
  };
  dense_ = decompose({p.tp, p.cp, 1, p.dp, p.pp});
  expert_ = decompose({1, 1, p.ep, p.expert_dp(), p.pp});
  add_groups(Communicator::kTensor, dense_, {OrderDim::kTp});
  add_groups(Communicator::kContext, dense_, {OrderDim::kCp});
  add_groups(Communicator::kExpert, expert_, {OrderDim::kEp});
  add_groups(Communicator::kData, dense_, {OrderDim::kDp, OrderDim::kCp});
  add_groups(Communicator::kExpertData, expert_, {OrderDim::kDp});
  add_groups(Communicator::kPipeline, dense_, {OrderDim::kPp});
}

int RankMap::coordinate(int rank, OrderDim dim) const {
  const Decomposition& dec = dim == OrderDim::kEp ? expert_ : dense_;
  return (rank / dec.stride[idx(dim)]) % dec.size[idx(dim)];
}

void RankMap::add_groups(Communicator kind, const Decomposition& dec,
                         std::initializer_list<OrderDim> vary) {
  const auto k = static_cast<std::size_t>(kind);
  group_of_[k].assign(static_cast<std::size_t>(world_), 0);
  index_of_[k].assign(static_cast<std::size_t>(world_), 0);
  // A group is the set of ranks that agree on every coordinate outside `vary`; its key is the
  // lowest such rank (the varying coordinates zeroed). Groups are numbered by ascending key and
  // members listed by ascending rank, so ids do not depend on anything but the layout.
  std::vector<std::uint32_t> group_of_key(static_cast<std::size_t>(world_), 0xFFFFFFFFu);
  const std::uint32_t base = static_cast<std::uint32_t>(kinds_.size());
  std::vector<std::vector<int>> groups;
  for (int r = 0; r < world_; ++r) {
    int key = r;
    for (OrderDim d : vary)
      key -= ((r / dec.stride[idx(d)]) % dec.size[idx(d)]) * dec.stride[idx(d)];
    auto& g = group_of_key[static_cast<std::size_t>(key)];
    if (g == 0xFFFFFFFFu) {
      g = static_cast<std::uint32_t>(groups.size());
      groups.emplace_back();
    }
    group_of_[k][static_cast<std::size_t>(r)] = base + g;
    index_of_[k][static_cast<std::size_t>(r)] = static_cast<std::uint32_t>(groups[g].size());
    groups[g].push_back(r);
  }
  for (const auto& members : groups) {
    members_.insert(members_.end(), members.begin(), members.end());
    offsets_.push_back(static_cast<std::uint32_t>(members_.size()));
    kinds_.push_back(kind);
  }
}

std::vector<int> expert_group_domains(const RankMap& ranks, const std::vector<int>& rank_domains,
                                      const std::string& where) {
  std::vector<int> pattern;
  bool first = true;
  std::vector<bool> done(ranks.group_count(), false);
  for (int r = 0; r < ranks.world_size(); ++r) {
    const GroupId g = ranks.group(r, Communicator::kExpert);
    if (done[g.value()]) continue;
    done[g.value()] = true;
    std::vector<int> domains;
    std::map<int, int> number;
    for (int member : ranks.members(g)) {
      const int d = rank_domains.empty() ? 0 : rank_domains[static_cast<std::size_t>(member)];
      domains.push_back(number.emplace(d, static_cast<int>(number.size())).first->second);
    }
    if (first) {
      pattern = std::move(domains);
      first = false;
    } else if (domains != pattern) {
      throw InputError(fmt::format(
          "{}: parallelism: the expert-parallel group of rank {} spreads over the topology's "
          "scale-up domains differently from the group of rank 0; node-limited routing and the "
          "relayed dispatch need the same pattern in every group (change `order` or `ep`)",
          where, r));
    }
  }
  return pattern;
}

}  // namespace stepsim::workloads
