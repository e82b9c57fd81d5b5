#include "sim/collectives/plan/group_shape.hpp"

#include <algorithm>

namespace stepsim::collectives {

GroupShape GroupShape::single_domain(std::uint32_t members, bool in_switch) {
  GroupShape shape;
  shape.size = members;
  shape.in_switch_reduction = in_switch;
  shape.domain_in_switch = in_switch;
  return shape;
}

GroupShape GroupShape::uniform(std::uint32_t domains, std::uint32_t per_domain, bool in_switch) {
  GroupShape shape;
  shape.size = domains * per_domain;
  shape.in_switch_reduction = in_switch;
  shape.domain_in_switch = in_switch;
  shape.domain.resize(shape.size);
  for (std::uint32_t i = 0; i < shape.size; ++i)
    shape.domain[i] = i / per_domain;
  return shape;
}

std::uint32_t GroupShape::num_domains() const {
  if (domain.empty()) return size == 0 ? 0 : 1;
  return *std::max_element(domain.begin(), domain.end()) + 1;
}

std::vector<std::vector<std::uint32_t>> GroupShape::domain_members() const {
  std::vector<std::vector<std::uint32_t>> members(num_domains());
  for (std::uint32_t i = 0; i < size; ++i)
    members[domain.empty() ? 0 : domain[i]].push_back(i);
  return members;
}

namespace {
std::uint64_t domain_rail(std::uint32_t domain, std::uint32_t rail) {
  return (static_cast<std::uint64_t>(domain) << 32) | rail;
}
}  // namespace

PxnRelays::PxnRelays(const GroupShape& group) : group_(group) {
  if (group.rail.empty() || group.domain.empty()) return;
  for (std::uint32_t k = 0; k < group.size; ++k)
    if (group.rail[k] != GroupShape::kNoRail)
      on_rail_.try_emplace(domain_rail(group.domain[k], group.rail[k]), k);
}

std::optional<std::uint32_t> PxnRelays::operator()(std::uint32_t from, std::uint32_t to) const {
  if (on_rail_.empty()) return std::nullopt;
  const auto& domain = group_.domain;
  const auto& rail = group_.rail;
  if (domain[from] == domain[to] || rail[from] == GroupShape::kNoRail ||
      rail[to] == GroupShape::kNoRail || rail[from] == rail[to])
    return std::nullopt;
  const auto it = on_rail_.find(domain_rail(domain[from], rail[to]));
  if (it == on_rail_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::vector<std::uint32_t>> MeshShape::lines(std::size_t dimension) const {
  const std::size_t d = dimensions();
  if (d == 0) return {};
  // Grid point p = sum of coordinate x stride (dimension 0 varies fastest) -> member.
  std::vector<std::size_t> stride(d, 1);
  for (std::size_t k = 1; k < d; ++k)
    stride[k] = stride[k - 1] * sizes[k - 1];
  const std::size_t points = stride[d - 1] * sizes[d - 1];
  std::vector<std::uint32_t> at(points);
  for (std::uint32_t m = 0; m < points; ++m) {
    std::size_t p = 0;
    for (std::size_t k = 0; k < d; ++k)
      p += coordinate(m, k) * stride[k];
    at[p] = m;
  }
  const std::uint32_t size = sizes[dimension];
  std::vector<std::vector<std::uint32_t>> result;
  result.reserve(points / size);
  for (std::size_t p = 0; p < points; ++p) {
    if ((p / stride[dimension]) % size != 0) continue;  // a line starts at coordinate 0
    auto& line = result.emplace_back(size);
    for (std::uint32_t c = 0; c < size; ++c)
      line[c] = at[p + c * stride[dimension]];
  }
  return result;
}

std::optional<std::uint32_t> GroupShape::uniform_domain_size() const {
  const auto members = domain_members();
  if (members.empty()) return std::nullopt;
  for (const auto& d : members)
    if (d.size() != members.front().size()) return std::nullopt;
  return static_cast<std::uint32_t>(members.front().size());
}

}  // namespace stepsim::collectives
