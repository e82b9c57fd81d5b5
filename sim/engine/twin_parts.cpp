#include "sim/engine/twin_parts.hpp"

#include <algorithm>
#include <bit>
#include <cassert>

namespace stepsim::engine::detail {

namespace {

// Below this many classes a problem is solved whole: looking for twins would cost more than the
// filling it could save.
constexpr std::size_t kMinClasses = 16;
// The first parts of one signature a part is compared with.
constexpr std::size_t kCandidates = 4;

// A cheap running hash (one rotate and one xor a value): parts with equal signatures are compared
// in full, so a collision costs a comparison, never a wrong rate.
std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  return std::rotl(h, 7) ^ v;
}

std::uint64_t bits(double x) {
  return std::bit_cast<std::uint64_t>(x);
}
std::uint64_t folded(double x) {
  const std::uint64_t b = bits(x);
  return b ^ (b >> 29);
}

}  // namespace

std::uint32_t TwinParts::find(std::uint32_t l) {
  while (parent_[l] != l) {
    parent_[l] = parent_[parent_[l]];
    l = parent_[l];
  }
  return l;
}

std::uint32_t TwinParts::number_parts(const Input& in) {
  const std::size_t nl = in.capacity.size();
  const std::size_t nc = in.flows.size();
  parent_.resize(nl);
  for (std::uint32_t l = 0; l < nl; ++l)
    parent_[l] = l;
  // Each root is its part's smallest link.
  for (std::size_t c = 0; c < nc; ++c) {
    std::uint32_t a = find(in.links[in.offsets[c]]);
    for (std::uint32_t k = in.offsets[c] + 1; k < in.offsets[c + 1]; ++k) {
      const std::uint32_t b = find(in.links[k]);
      if (a == b) continue;
      if (a < b) {
        parent_[b] = a;
      } else {
        parent_[a] = b;
        a = b;
      }
    }
  }
  part_of_link_.resize(nl);
  std::uint32_t parts = 0;
  for (std::uint32_t l = 0; l < nl; ++l) {
    const std::uint32_t root = find(l);
    part_of_link_[l] = root == l ? parts++ : part_of_link_[root];  // (root <= l: numbered)
  }
  return parts;
}

void TwinParts::list_parts(const Input& in, std::uint32_t parts) {
  const std::size_t nl = in.capacity.size();
  const std::size_t nc = in.flows.size();
  const std::span<const std::uint32_t> part_of_link = part_of_;
  // Links and classes by part, each in increasing index (counting sorts).
  link_offsets_.assign(parts + 1, 0);
  for (std::uint32_t l = 0; l < nl; ++l)
    ++link_offsets_[part_of_link[l] + 1];
  for (std::uint32_t p = 0; p < parts; ++p)
    link_offsets_[p + 1] += link_offsets_[p];
  link_order_.resize(nl);
  rank_.resize(nl);
  class_offsets_.assign(parts + 1, 0);  // (used as fill cursors for the links first)
  for (std::uint32_t l = 0; l < nl; ++l) {
    const std::uint32_t p = part_of_link[l];
    rank_[l] = class_offsets_[p]++;
    link_order_[link_offsets_[p] + rank_[l]] = l;
  }
  class_offsets_.assign(parts + 1, 0);
  for (std::size_t c = 0; c < nc; ++c)
    ++class_offsets_[part_of_link[in.links[in.offsets[c]]] + 1];
  for (std::uint32_t p = 0; p < parts; ++p)
    class_offsets_[p + 1] += class_offsets_[p];
  class_order_.resize(nc);
  std::vector<std::uint32_t>& cursor = reduced_link_;  // (scratch here)
  cursor.assign(class_offsets_.begin(), class_offsets_.end() - 1);
  for (std::uint32_t c = 0; c < nc; ++c)
    class_order_[cursor[part_of_link[in.links[in.offsets[c]]]]++] = c;
}

std::uint64_t TwinParts::signature(const Input& in, std::uint32_t part) const {
  // What a part's twin must share, read in a few loads: its sizes, its first link's capacity, its
  // first class's flows and path length. Parts with one signature are compared in full.
  const std::uint32_t c = class_order_[class_offsets_[part]];
  std::uint64_t h = mix(link_offsets_[part + 1] - link_offsets_[part],
                        class_offsets_[part + 1] - class_offsets_[part]);
  h = mix(h, folded(in.capacity[link_order_[link_offsets_[part]]]));
  h = mix(h, in.flows[c]);
  h = mix(h, in.offsets[c + 1] - in.offsets[c]);
  return h * 0x9e3779b97f4a7c15ull;
}

bool TwinParts::equal(const Input& in, std::uint32_t a, std::uint32_t b) const {
  const std::uint32_t links = link_offsets_[a + 1] - link_offsets_[a];
  const std::uint32_t classes = class_offsets_[a + 1] - class_offsets_[a];
  if (links != link_offsets_[b + 1] - link_offsets_[b]) return false;
  if (classes != class_offsets_[b + 1] - class_offsets_[b]) return false;
  for (std::uint32_t k = 0; k < links; ++k) {
    if (bits(in.capacity[link_order_[link_offsets_[a] + k]]) !=
        bits(in.capacity[link_order_[link_offsets_[b] + k]]))
      return false;
  }
  for (std::uint32_t k = 0; k < classes; ++k) {
    const std::uint32_t ca = class_order_[class_offsets_[a] + k];
    const std::uint32_t cb = class_order_[class_offsets_[b] + k];
    if (in.flows[ca] != in.flows[cb]) return false;
    if (!in.cap.empty() && bits(in.cap[ca]) != bits(in.cap[cb])) return false;
    const std::uint32_t length = in.offsets[ca + 1] - in.offsets[ca];
    if (length != in.offsets[cb + 1] - in.offsets[cb]) return false;
    for (std::uint32_t i = 0; i < length; ++i) {
      if (rank_[in.links[in.offsets[ca] + i]] != rank_[in.links[in.offsets[cb] + i]]) return false;
      if (!in.weights.empty() &&
          bits(in.weights[in.offsets[ca] + i]) != bits(in.weights[in.offsets[cb] + i]))
        return false;
    }
  }
  return true;
}

void TwinParts::solve(MaxMinSolver& solver, std::span<const double> link_capacity,
                      std::span<const std::uint32_t> class_flows,
                      std::span<const std::uint32_t> path_offsets,
                      std::span<const std::uint32_t> path_links,
                      std::span<const double> path_weights, std::span<const double> class_cap,
                      std::span<double> rate) {
  const Input in{link_capacity, class_flows, path_offsets, path_links, path_weights, class_cap};
  if (class_flows.size() < kMinClasses) return solve_parts(solver, in, 1, rate);
  const std::uint32_t parts = number_parts(in);
  part_of_ = part_of_link_;
  solve_parts(solver, in, parts, rate);
}

void TwinParts::solve(MaxMinSolver& solver, std::span<const double> link_capacity,
                      std::span<const std::uint32_t> class_flows,
                      std::span<const std::uint32_t> path_offsets,
                      std::span<const std::uint32_t> path_links,
                      std::span<const double> path_weights, std::span<const double> class_cap,
                      std::span<double> rate, std::span<const std::uint32_t> part_of_link,
                      std::uint32_t parts) {
  assert(part_of_link.size() == link_capacity.size());
  const Input in{link_capacity, class_flows, path_offsets, path_links, path_weights, class_cap};
  part_of_ = part_of_link;
  solve_parts(solver, in, class_flows.size() < kMinClasses ? 1 : parts, rate);
}

void TwinParts::solve_parts(MaxMinSolver& solver, const Input& in, std::uint32_t parts,
                            std::span<double> rate) {
  auto whole = [&] {
    solver.solve(in.capacity, in.flows, in.offsets, in.links, in.weights, in.cap, rate);
  };
  if (parts < 2) return whole();
  list_parts(in, parts);

  // Twin sets: parts by signature, each compared in full with the first parts of its signature
  // (at most kCandidates of them: a part that matches none stays a first part, solved).
  by_signature_.clear();
  for (std::uint32_t p = 0; p < parts; ++p) {
    if (class_offsets_[p + 1] == class_offsets_[p]) continue;  // links no class crosses
    by_signature_.emplace_back(signature(in, p), p);
  }
  std::sort(by_signature_.begin(), by_signature_.end());
  first_.resize(parts);
  for (std::uint32_t p = 0; p < parts; ++p)
    first_[p] = p;
  bool twins = false;
  for (std::size_t g = 0; g < by_signature_.size();) {
    std::size_t end = g + 1;
    while (end < by_signature_.size() && by_signature_[end].first == by_signature_[g].first)
      ++end;
    // (Within a signature, parts come in increasing index: the first of a twin set is its
    // smallest.)
    candidates_.assign(1, by_signature_[g].second);
    for (std::size_t i = g + 1; i < end; ++i) {
      const std::uint32_t p = by_signature_[i].second;
      for (const std::uint32_t q : candidates_) {
        if (equal(in, q, p)) {
          first_[p] = q;
          twins = true;
          break;
        }
      }
      if (first_[p] == p && candidates_.size() < kCandidates) candidates_.push_back(p);
    }
    g = end;
  }
  if (!twins) return whole();

  // The problem of the first parts, links and classes in their order in the whole problem.
  const std::size_t nl = in.capacity.size();
  const std::size_t nc = in.flows.size();
  reduced_link_.assign(nl, kNone);
  r_capacity_.clear();
  for (std::uint32_t l = 0; l < nl; ++l) {
    const std::uint32_t p = part_of_[l];
    if (first_[p] != p) continue;
    reduced_link_[l] = static_cast<std::uint32_t>(r_capacity_.size());
    r_capacity_.push_back(in.capacity[l]);
  }
  r_flows_.clear();
  r_offsets_.assign(1, 0);
  r_links_.clear();
  r_weights_.clear();
  r_cap_.clear();
  for (std::uint32_t c = 0; c < nc; ++c) {
    const std::uint32_t p = part_of_[in.links[in.offsets[c]]];
    if (first_[p] != p) continue;
    r_flows_.push_back(in.flows[c]);
    if (!in.cap.empty()) r_cap_.push_back(in.cap[c]);
    for (std::uint32_t k = in.offsets[c]; k < in.offsets[c + 1]; ++k) {
      r_links_.push_back(reduced_link_[in.links[k]]);
      if (!in.weights.empty()) r_weights_.push_back(in.weights[k]);
    }
    r_offsets_.push_back(static_cast<std::uint32_t>(r_links_.size()));
  }
  r_rate_.resize(r_flows_.size());
  solver.solve(r_capacity_, r_flows_, r_offsets_, r_links_, r_weights_, r_cap_, r_rate_);

  // The first parts' rates, then each twin's from its first part, class by class.
  std::size_t r = 0;
  for (std::uint32_t c = 0; c < nc; ++c) {
    const std::uint32_t p = part_of_[in.links[in.offsets[c]]];
    if (first_[p] == p) rate[c] = r_rate_[r++];
  }
  assert(r == r_rate_.size());
  for (std::uint32_t p = 0; p < parts; ++p) {
    const std::uint32_t q = first_[p];
    if (q == p) continue;
    const std::uint32_t classes = class_offsets_[p + 1] - class_offsets_[p];
    for (std::uint32_t k = 0; k < classes; ++k)
      rate[class_order_[class_offsets_[p] + k]] = rate[class_order_[class_offsets_[q] + k]];
    twin_classes_ += classes;
  }
}

}  // namespace stepsim::engine::detail
