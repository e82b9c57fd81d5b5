#include "sim/collectives/runner/mesh_detection.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <vector>

namespace stepsim::collectives {

using topology::GroupKind;
using topology::LinkIndex;
using topology::NodeId;
using topology::NodeKind;

namespace {

constexpr std::uint32_t kUnset = std::numeric_limits<std::uint32_t>::max();

// A member's link to another member: the link's class and the other member's index.
struct MemberLink {
  std::uint16_t link_class = 0;
  std::uint32_t to = 0;
  auto operator<=>(const MemberLink&) const = default;
};

bool links_an_accelerator(const topology::Topology& topology, NodeId node) {
  const auto range = topology.out_links(node);
  for (std::uint32_t l = range.first; l < range.first + range.count; ++l)
    if (topology.kind(topology.target(LinkIndex(l))) == NodeKind::kAccelerator) return true;
  return false;
}

// Union-find over member indices, path halving.
std::uint32_t root(std::vector<std::uint32_t>& parent, std::uint32_t m) {
  while (parent[m] != m)
    m = parent[m] = parent[parent[m]];
  return m;
}

}  // namespace

std::optional<MeshShape> detect_full_mesh(const topology::Topology& topology,
                                          std::span<const NodeId> members) {
  const auto n = static_cast<std::uint32_t>(members.size());
  if (n < 2 || !links_an_accelerator(topology, members[0])) return std::nullopt;
  std::unordered_map<std::uint32_t, std::uint32_t> index;  // node -> member, lookup only
  index.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (topology.kind(members[i]) != NodeKind::kAccelerator) return std::nullopt;
    index.emplace(members[i].value(), i);
  }
  // Each member's links to other members, sorted by (class, member), parallel links once.
  std::vector<std::uint32_t> offset(n + 1, 0);
  std::vector<MemberLink> links;
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto range = topology.out_links(members[i]);
    const std::size_t first = links.size();
    for (std::uint32_t l = range.first; l < range.first + range.count; ++l) {
      const auto it = index.find(topology.target(LinkIndex(l)).value());
      if (it != index.end() && it->second != i)
        links.push_back({topology.link(LinkIndex(l)).link_class, it->second});
    }
    const auto begin = links.begin() + static_cast<std::ptrdiff_t>(first);
    std::sort(begin, links.end());
    links.erase(std::unique(begin, links.end()), links.end());
    offset[i + 1] = static_cast<std::uint32_t>(links.size());
  }
  auto links_of = [&](std::uint32_t i) {
    return std::span<const MemberLink>(links.data() + offset[i], offset[i + 1] - offset[i]);
  };

  // Dimensions: the classes of member 0's links, each as large as its links plus member 0.
  std::vector<std::uint16_t> classes;
  MeshShape mesh;
  for (const MemberLink& link : links_of(0)) {
    if (classes.empty() || classes.back() != link.link_class) {
      classes.push_back(link.link_class);
      mesh.sizes.push_back(1);
    }
    ++mesh.sizes.back();
  }
  const std::size_t d = classes.size();
  std::uint64_t points = 1;
  for (std::uint32_t size : mesh.sizes)
    if ((points *= size) > n) return std::nullopt;
  if (points != n) return std::nullopt;
  auto dimension_of = [&](std::uint16_t link_class) {
    return static_cast<std::size_t>(std::find(classes.begin(), classes.end(), link_class) -
                                    classes.begin());  // d when it is none
  };
  mesh.bandwidth.resize(d);
  const auto range = topology.out_links(members[0]);
  for (std::uint32_t l = range.first; l < range.first + range.count; ++l) {
    const LinkIndex link(l);
    const auto it = index.find(topology.target(link).value());
    if (it != index.end() && it->second != 0)
      mesh.bandwidth[dimension_of(topology.link(link).link_class)] =
          topology.effective_bandwidth(link);
  }

  // Degrees: size - 1 links of each dimension's class, none of another.
  std::vector<std::uint32_t> degree(d);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::fill(degree.begin(), degree.end(), 0);
    for (const MemberLink& link : links_of(i)) {
      const std::size_t k = dimension_of(link.link_class);
      if (k == d) return std::nullopt;
      ++degree[k];
    }
    for (std::size_t k = 0; k < d; ++k)
      if (degree[k] + 1 != mesh.sizes[k]) return std::nullopt;
  }

  // Coordinate k: the links of the other dimensions join the members of one hyperplane
  // (coordinate k fixed); member 0's line of dimension k has one member in each.
  mesh.coordinates.assign(std::size_t{n} * d, kUnset);
  std::vector<std::uint32_t> parent(n);
  std::vector<std::uint32_t> label(n);
  for (std::size_t k = 0; k < d; ++k) {
    std::iota(parent.begin(), parent.end(), 0u);
    for (std::uint32_t i = 0; i < n; ++i)
      for (const MemberLink& link : links_of(i))
        if (link.link_class != classes[k]) parent[root(parent, i)] = root(parent, link.to);
    std::fill(label.begin(), label.end(), kUnset);
    std::uint32_t position = 0;
    label[root(parent, 0)] = position++;
    for (const MemberLink& link : links_of(0)) {
      if (link.link_class != classes[k]) continue;
      std::uint32_t& l = label[root(parent, link.to)];
      if (l != kUnset) return std::nullopt;  // two members of the line in one hyperplane
      l = position++;
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t c = label[root(parent, i)];
      if (c == kUnset) return std::nullopt;  // a hyperplane without a member of the line
      mesh.coordinates[std::size_t{i} * d + k] = c;
    }
  }

  // One member per grid point (the sizes multiply to n, so the members fill the grid).
  std::vector<bool> taken(n, false);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::size_t point = 0;
    for (std::size_t k = d; k-- > 0;)
      point = point * mesh.sizes[k] + mesh.coordinate(i, k);
    if (taken[point]) return std::nullopt;
    taken[point] = true;
  }
  // Every link stays in its line, and the router keeps the traffic on it. With the degrees above,
  // each member then links to every other member of each of its lines.
  auto keeps_direct = [&](std::uint32_t a, std::uint32_t b) {
    const auto domain = topology.group_of(members[a], GroupKind::kScaleUp);
    return (domain && domain == topology.group_of(members[b], GroupKind::kScaleUp)) ||
           topology.nics(members[a]).empty() || topology.nics(members[b]).empty();
  };
  for (std::uint32_t i = 0; i < n; ++i)
    for (const MemberLink& link : links_of(i)) {
      const std::size_t k = dimension_of(link.link_class);
      for (std::size_t other = 0; other < d; ++other)
        if (other != k && mesh.coordinate(i, other) != mesh.coordinate(link.to, other))
          return std::nullopt;
      if (!keeps_direct(i, link.to)) return std::nullopt;
    }
  return mesh;
}

}  // namespace stepsim::collectives
