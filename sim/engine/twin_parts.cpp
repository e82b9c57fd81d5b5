#include "sim/engine/twin_parts.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>

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

void TwinParts::list_parts(const MaxMinProblem& in, std::uint32_t parts) {
  const std::size_t nl = in.link_capacity.size();
  const std::size_t nc = in.class_flows.size();
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
  class_part_.resize(nc);
  for (std::size_t c = 0; c < nc; ++c) {
    const std::uint32_t p = part_of_link[in.path_links[in.path_offsets[c]]];
    class_part_[c] = p;
    ++class_offsets_[p + 1];
  }
  for (std::uint32_t p = 0; p < parts; ++p)
    class_offsets_[p + 1] += class_offsets_[p];
  class_order_.resize(nc);
  std::vector<std::uint32_t>& cursor = reduced_link_;  // (scratch here)
  cursor.assign(class_offsets_.begin(), class_offsets_.end() - 1);
  for (std::uint32_t c = 0; c < nc; ++c)
    class_order_[cursor[class_part_[c]]++] = c;
}

std::uint64_t TwinParts::signature(const MaxMinProblem& in, std::uint32_t part) const {
  // What a part's twin must share, read in a few loads: its sizes, its first link's capacity, its
  // first class's flows and path length. Parts with one signature are compared in full.
  const std::uint32_t c = class_order_[class_offsets_[part]];
  std::uint64_t h = mix(link_offsets_[part + 1] - link_offsets_[part],
                        class_offsets_[part + 1] - class_offsets_[part]);
  h = mix(h, folded(in.link_capacity[link_order_[link_offsets_[part]]]));
  h = mix(h, in.class_flows[c]);
  h = mix(h, in.path_offsets[c + 1] - in.path_offsets[c]);
  return h * 0x9e3779b97f4a7c15ull;
}

bool TwinParts::equal(const MaxMinProblem& in, std::uint32_t a, std::uint32_t b) const {
  const std::uint32_t links = link_offsets_[a + 1] - link_offsets_[a];
  const std::uint32_t classes = class_offsets_[a + 1] - class_offsets_[a];
  if (links != link_offsets_[b + 1] - link_offsets_[b]) return false;
  if (classes != class_offsets_[b + 1] - class_offsets_[b]) return false;
  for (std::uint32_t k = 0; k < links; ++k) {
    if (bits(in.link_capacity[link_order_[link_offsets_[a] + k]]) !=
        bits(in.link_capacity[link_order_[link_offsets_[b] + k]]))
      return false;
  }
  for (std::uint32_t k = 0; k < classes; ++k) {
    const std::uint32_t ca = class_order_[class_offsets_[a] + k];
    const std::uint32_t cb = class_order_[class_offsets_[b] + k];
    if (in.class_flows[ca] != in.class_flows[cb]) return false;
    if (!in.class_cap.empty() && bits(in.class_cap[ca]) != bits(in.class_cap[cb])) return false;
    const std::uint32_t length = in.path_offsets[ca + 1] - in.path_offsets[ca];
    if (length != in.path_offsets[cb + 1] - in.path_offsets[cb]) return false;
    for (std::uint32_t i = 0; i < length; ++i) {
      if (rank_[in.path_links[in.path_offsets[ca] + i]] !=
          rank_[in.path_links[in.path_offsets[cb] + i]])
        return false;
      if (!in.path_weights.empty() && bits(in.path_weights[in.path_offsets[ca] + i]) !=
                                          bits(in.path_weights[in.path_offsets[cb] + i]))
        return false;
    }
  }
  return true;
}

void TwinParts::solve(MaxMinSolver& solver, const MaxMinProblem& problem, std::span<double> rate,
                      std::span<const std::uint32_t> part_of_link, std::uint32_t parts) {
  assert(part_of_link.size() == problem.link_capacity.size());
  part_of_ = part_of_link;
  solve_parts(solver, problem, problem.class_flows.size() < kMinClasses ? 1 : parts, rate);
}

void TwinParts::solve_parts(MaxMinSolver& solver, const MaxMinProblem& in, std::uint32_t parts,
                            std::span<double> rate) {
  twin_set_parts_ = 0;
  auto whole = [&] { solver.solve(in, rate); };
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
  twin_set_parts_ = parts;

  // The problem of the first parts, links and classes in their order in the whole problem.
  // (Inputs read through locals: the push_backs below may alias the spans' and vectors' pointers
  // for the compiler.)
  const std::size_t nl = in.link_capacity.size();
  const std::size_t nc = in.class_flows.size();
  const std::span<const std::uint32_t> part_of = part_of_;
  const std::uint32_t* const first = first_.data();
  reduced_link_.assign(nl, kNone);
  std::uint32_t* const reduced = reduced_link_.data();
  r_capacity_.clear();
  for (std::uint32_t l = 0; l < nl; ++l) {
    const std::uint32_t p = part_of[l];
    if (first[p] != p) continue;
    reduced[l] = static_cast<std::uint32_t>(r_capacity_.size());
    r_capacity_.push_back(in.link_capacity[l]);
  }
  r_flows_.clear();
  r_offsets_.assign(1, 0);
  r_links_.clear();
  r_weights_.clear();
  r_cap_.clear();
  const std::span<const std::uint32_t> flows = in.class_flows, offsets = in.path_offsets,
                                       links = in.path_links;
  const std::span<const double> caps = in.class_cap, weights = in.path_weights;
  const std::uint32_t* const class_part = class_part_.data();
  for (std::uint32_t c = 0; c < nc; ++c) {
    const std::uint32_t p = class_part[c];
    if (first[p] != p) continue;
    r_flows_.push_back(flows[c]);
    if (!caps.empty()) r_cap_.push_back(caps[c]);
    for (std::uint32_t k = offsets[c]; k < offsets[c + 1]; ++k) {
      r_links_.push_back(reduced[links[k]]);
      if (!weights.empty()) r_weights_.push_back(weights[k]);
    }
    r_offsets_.push_back(static_cast<std::uint32_t>(r_links_.size()));
  }
  r_rate_.resize(r_flows_.size());
  solver.solve({r_capacity_, r_flows_, r_offsets_, r_links_, r_weights_, r_cap_}, r_rate_);

  // The first parts' rates, then each twin's from its first part, class by class.
  std::size_t r = 0;
  for (std::uint32_t c = 0; c < nc; ++c) {
    const std::uint32_t p = class_part_[c];
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

bool TwinParts::sum_loads(const MaxMinProblem& in, std::span<const double> rate,
                          std::span<double> load, bool& finite) const {
  if (twin_set_parts_ == 0) return false;
  bool same_outside = true;
  for_each_twin_link([&](std::uint32_t twin, std::uint32_t first) {
    same_outside = same_outside && bits(load[twin]) == bits(load[first]);
  });
  if (!same_outside) return false;
  finite = true;
  for (std::uint32_t p = 0; p < twin_set_parts_; ++p) {
    if (first_[p] != p) continue;
    for (std::uint32_t k = class_offsets_[p]; k < class_offsets_[p + 1]; ++k) {
      const std::uint32_t c = class_order_[k];
      finite = std::isfinite(in.add_class_load(c, rate[c], load)) && finite;
    }
  }
  for_each_twin_link([&](std::uint32_t twin, std::uint32_t first) { load[twin] = load[first]; });
  return true;
}

}  // namespace stepsim::engine::detail
