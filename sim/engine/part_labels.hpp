// Internal to the flow network: the connected parts of one solve's component, labelled as the
// incremental solve's search finds them (incremental_max_min.hpp), so that its twin parts
// (twin_parts.hpp) can be found. Each changed class's link starts a label; a link takes the label
// of the crossed link the search reached it from; two labels join (union-find, the smaller label
// the root) when a class's path meets both. Labels and component links are local indices.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace stepsim::engine::detail {

class PartLabels {
 public:
  // Forgets every label, for the next search.
  void clear() { parent_.clear(); }
  // A new label, its own part.
  std::uint32_t add() {
    const auto label = static_cast<std::uint32_t>(parent_.size());
    parent_.push_back(label);
    return label;
  }
  std::size_t size() const { return parent_.size(); }
  // The label standing for x's part.
  std::uint32_t find(std::uint32_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void join(std::uint32_t a, std::uint32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }
  // Whether no two labels were joined.
  bool all_apart() const {
    for (std::uint32_t x = 0; x < parent_.size(); ++x)
      if (parent_[x] != x) return false;
    return true;
  }
  // Numbers the parts by their smallest link: part_of_link[j] for each link j, given each link's
  // label (link_label[j]); returns the number of parts.
  std::uint32_t number_parts(std::span<const std::uint32_t> link_label,
                             std::vector<std::uint32_t>& part_of_link);

 private:
  static constexpr std::uint32_t kNoPart = 0xffffffffu;
  std::vector<std::uint32_t> parent_;  // per label
  std::vector<std::uint32_t> part_;    // per label: its part (number_parts), or kNoPart
};

inline std::uint32_t PartLabels::number_parts(std::span<const std::uint32_t> link_label,
                                              std::vector<std::uint32_t>& part_of_link) {
  part_.assign(parent_.size(), kNoPart);
  part_of_link.resize(link_label.size());
  std::uint32_t parts = 0;
  for (std::size_t j = 0; j < link_label.size(); ++j) {
    std::uint32_t& part = part_[find(link_label[j])];
    if (part == kNoPart) part = parts++;
    part_of_link[j] = part;
  }
  return parts;
}

}  // namespace stepsim::engine::detail
