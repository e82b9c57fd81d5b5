#include "sim/collectives/runner/mesh_detection.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <span>
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

// Each member's links to other members, sorted by (class, member), parallel links once.
class MemberLinks {
 public:
  MemberLinks(const topology::Topology& topology, std::span<const NodeId> members,
              const std::unordered_map<std::uint32_t, std::uint32_t>& index)
      : offset_(members.size() + 1, 0) {
    for (std::uint32_t i = 0; i < members.size(); ++i) {
      const auto range = topology.out_links(members[i]);
      const std::size_t first = links_.size();
      for (std::uint32_t l = range.first; l < range.first + range.count; ++l) {
        const auto it = index.find(topology.target(LinkIndex(l)).value());
        if (it != index.end() && it->second != i)
          links_.push_back({topology.link(LinkIndex(l)).link_class, it->second});
      }
      const auto begin = links_.begin() + static_cast<std::ptrdiff_t>(first);
      std::sort(begin, links_.end());
      links_.erase(std::unique(begin, links_.end()), links_.end());
      offset_[i + 1] = static_cast<std::uint32_t>(links_.size());
    }
  }
  std::span<const MemberLink> of(std::uint32_t i) const {
    return {links_.data() + offset_[i], offset_[i + 1] - offset_[i]};
  }

 private:
  std::vector<std::uint32_t> offset_;
  std::vector<MemberLink> links_;
};

// The dimension of a link class: its index in `classes`, classes.size() when it is none.
std::size_t dimension_of(std::span<const std::uint16_t> classes, std::uint16_t link_class) {
  return static_cast<std::size_t>(std::find(classes.begin(), classes.end(), link_class) -
                                  classes.begin());
}

// Dimensions: the classes of member 0's links, each as large as its links plus member 0 (into
// mesh.sizes and `classes`), with the bandwidth of member 0's link of each; false when the sizes
// do not multiply to n.
bool find_dimensions(const topology::Topology& topology, std::span<const NodeId> members,
                     const std::unordered_map<std::uint32_t, std::uint32_t>& index,
                     const MemberLinks& links, std::vector<std::uint16_t>& classes,
                     MeshShape& mesh) {
  for (const MemberLink& link : links.of(0)) {
    if (classes.empty() || classes.back() != link.link_class) {
      classes.push_back(link.link_class);
      mesh.sizes.push_back(1);
    }
    ++mesh.sizes.back();
  }
  const std::size_t n = members.size();
  std::uint64_t points = 1;
  for (std::uint32_t size : mesh.sizes)
    if ((points *= size) > n) return false;
  if (points != n) return false;
  mesh.bandwidth.resize(classes.size());
  const auto range = topology.out_links(members[0]);
  for (std::uint32_t l = range.first; l < range.first + range.count; ++l) {
    const LinkIndex link(l);
    const auto it = index.find(topology.target(link).value());
    if (it != index.end() && it->second != 0)
      mesh.bandwidth[dimension_of(classes, topology.link(link).link_class)] =
          topology.effective_bandwidth(link);
  }
  return true;
}

// Degrees: size - 1 links of each dimension's class, none of another.
bool degrees_match(std::uint32_t n, const MemberLinks& links,
                   std::span<const std::uint16_t> classes, const MeshShape& mesh) {
  const std::size_t d = classes.size();
  std::vector<std::uint32_t> degree(d);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::fill(degree.begin(), degree.end(), 0);
    for (const MemberLink& link : links.of(i)) {
      const std::size_t k = dimension_of(classes, link.link_class);
      if (k == d) return false;
      ++degree[k];
    }
    for (std::size_t k = 0; k < d; ++k)
      if (degree[k] + 1 != mesh.sizes[k]) return false;
  }
  return true;
}

// Coordinate k: the links of the other dimensions join the members of one hyperplane
// (coordinate k fixed); member 0's line of dimension k has one member in each. False when the
// hyperplanes and the line do not match one to one.
bool assign_coordinates(std::uint32_t n, const MemberLinks& links,
                        std::span<const std::uint16_t> classes, MeshShape& mesh) {
  const std::size_t d = classes.size();
  mesh.coordinates.assign(std::size_t{n} * d, kUnset);
  std::vector<std::uint32_t> parent(n);
  std::vector<std::uint32_t> label(n);
  for (std::size_t k = 0; k < d; ++k) {
    std::iota(parent.begin(), parent.end(), 0u);
    for (std::uint32_t i = 0; i < n; ++i)
      for (const MemberLink& link : links.of(i))
        if (link.link_class != classes[k]) parent[root(parent, i)] = root(parent, link.to);
    std::fill(label.begin(), label.end(), kUnset);
    std::uint32_t position = 0;
    label[root(parent, 0)] = position++;
    for (const MemberLink& link : links.of(0)) {
      if (link.link_class != classes[k]) continue;
      std::uint32_t& l = label[root(parent, link.to)];
      if (l != kUnset) return false;  // two members of the line in one hyperplane
      l = position++;
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t c = label[root(parent, i)];
      if (c == kUnset) return false;  // a hyperplane without a member of the line
      mesh.coordinates[std::size_t{i} * d + k] = c;
    }
  }
  return true;
}

// One member per grid point (the sizes multiply to n, so the members fill the grid).
bool one_member_per_point(std::uint32_t n, const MeshShape& mesh) {
  std::vector<bool> taken(n, false);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::size_t point = 0;
    for (std::size_t k = mesh.dimensions(); k-- > 0;)
      point = point * mesh.sizes[k] + mesh.coordinate(i, k);
    if (taken[point]) return false;
    taken[point] = true;
  }
  return true;
}

// Every link stays in its line, and the router keeps the traffic on it. With the degrees checked,
// each member then links to every other member of each of its lines.
bool links_stay_in_lines(const topology::Topology& topology, std::span<const NodeId> members,
                         const MemberLinks& links, std::span<const std::uint16_t> classes,
                         const MeshShape& mesh) {
  auto keeps_direct = [&](std::uint32_t a, std::uint32_t b) {
    const auto domain = topology.group_of(members[a], GroupKind::kScaleUp);
    return (domain && domain == topology.group_of(members[b], GroupKind::kScaleUp)) ||
           topology.nics(members[a]).empty() || topology.nics(members[b]).empty();
  };
  const std::size_t d = classes.size();
  for (std::uint32_t i = 0; i < members.size(); ++i)
    for (const MemberLink& link : links.of(i)) {
      const std::size_t k = dimension_of(classes, link.link_class);
      for (std::size_t other = 0; other < d; ++other)
        if (other != k && mesh.coordinate(i, other) != mesh.coordinate(link.to, other))
          return false;
      if (!keeps_direct(i, link.to)) return false;
    }
  return true;
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
  const MemberLinks links(topology, members, index);
  std::vector<std::uint16_t> classes;
  MeshShape mesh;
  if (!find_dimensions(topology, members, index, links, classes, mesh) ||
      !degrees_match(n, links, classes, mesh) || !assign_coordinates(n, links, classes, mesh) ||
      !one_member_per_point(n, mesh) ||
      !links_stay_in_lines(topology, members, links, classes, mesh))
    return std::nullopt;
  return mesh;
}

}  // namespace stepsim::collectives
