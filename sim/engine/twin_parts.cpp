#include "sim/engine/twin_parts.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>

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

// Whether a[i] - a_base == b[i] - b_base for every i < n (mod 2^32), four at a time in a vector
// register (GCC's vector extensions; SSE2 instructions on x86-64): most runs compared are twins',
// compared to their end.
bool same_offsets(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t n,
                  std::uint32_t a_base, std::uint32_t b_base) {
  using Four = std::uint32_t __attribute__((vector_size(16)));
  Four differ{};
  std::uint32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    Four x;
    Four y;
    std::memcpy(&x, a + i, sizeof x);
    std::memcpy(&y, b + i, sizeof y);
    differ |= (x - a_base) ^ (y - b_base);
  }
  std::uint32_t rest = differ[0] | differ[1] | differ[2] | differ[3];
  for (; i < n; ++i)
    rest |= (a[i] - a_base) ^ (b[i] - b_base);
  return rest == 0;
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
  const std::uint32_t c = class_at(part, 0);
  std::uint64_t h = mix(link_offsets_[part + 1] - link_offsets_[part],
                        class_offsets_[part + 1] - class_offsets_[part]);
  h = mix(h, folded(in.link_capacity[link_at(part, 0)]));
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

bool TwinParts::equal_runs(const MaxMinProblem& in, std::uint32_t a, std::uint32_t b) const {
  // As equal(), each part a run: the same comparisons as runs of values (memcmp compares the
  // doubles bit for bit), a link's rank being its place in its part's run.
  const std::uint32_t la = link_offsets_[a], lb = link_offsets_[b];
  const std::uint32_t links = link_offsets_[a + 1] - la;
  const std::uint32_t ca = class_offsets_[a], cb = class_offsets_[b];
  const std::uint32_t classes = class_offsets_[a + 1] - ca;
  if (links != link_offsets_[b + 1] - lb || classes != class_offsets_[b + 1] - cb) return false;
  if (std::memcmp(in.link_capacity.data() + la, in.link_capacity.data() + lb,
                  links * sizeof(double)) != 0)
    return false;
  if (!std::equal(in.class_flows.data() + ca, in.class_flows.data() + ca + classes,
                  in.class_flows.data() + cb))
    return false;
  if (!in.class_cap.empty() && std::memcmp(in.class_cap.data() + ca, in.class_cap.data() + cb,
                                           classes * sizeof(double)) != 0)
    return false;
  const std::uint32_t* const offsets = in.path_offsets.data();
  const std::uint32_t pa = offsets[ca], pb = offsets[cb];
  // The classes' path lengths (their offsets from the part's first), then the paths (their links
  // from the part's first link).
  if (!same_offsets(offsets + ca + 1, offsets + cb + 1, classes, pa, pb)) return false;
  const std::uint32_t entries = offsets[ca + classes] - pa;
  const std::uint32_t* const path = in.path_links.data();
  if (!same_offsets(path + pa, path + pb, entries, la, lb)) return false;
  return in.path_weights.empty() ||
         std::memcmp(in.path_weights.data() + pa, in.path_weights.data() + pb,
                     entries * sizeof(double)) == 0;
}

void TwinParts::solve(MaxMinSolver& solver, const MaxMinProblem& problem, std::span<double> rate,
                      std::span<const std::uint32_t> part_of_link, std::uint32_t parts) {
  assert(part_of_link.size() == problem.link_capacity.size());
  part_of_ = part_of_link;
  ranges_ = false;
  solve_parts(solver, problem, problem.class_flows.size() < kMinClasses ? 1 : parts, rate);
}

void TwinParts::solve_ranges(MaxMinSolver& solver, const MaxMinProblem& problem,
                             std::span<double> rate, std::span<const std::uint32_t> link_begin,
                             std::span<const std::uint32_t> class_begin) {
  assert(link_begin.size() == class_begin.size());
  assert(link_begin.empty() || (link_begin[0] == 0 && class_begin[0] == 0));
  const auto parts = static_cast<std::uint32_t>(link_begin.size());
  ranges_ = true;
  part_of_ = {};
  link_offsets_.assign(link_begin.begin(), link_begin.end());
  link_offsets_.push_back(static_cast<std::uint32_t>(problem.link_capacity.size()));
  class_offsets_.assign(class_begin.begin(), class_begin.end());
  class_offsets_.push_back(static_cast<std::uint32_t>(problem.class_flows.size()));
  solve_parts(solver, problem, problem.class_flows.size() < kMinClasses ? 1 : parts, rate);
}

void TwinParts::solve_parts(MaxMinSolver& solver, const MaxMinProblem& in, std::uint32_t parts,
                            std::span<double> rate) {
  twin_set_parts_ = 0;
  auto whole = [&] { solver.solve(in, rate); };
  if (parts < 2) return whole();
  if (!ranges_) list_parts(in, parts);

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
        if (ranges_ ? equal_runs(in, q, p) : equal(in, q, p)) {
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
  solve_first_parts(solver, in, parts, rate);
}

void TwinParts::clear_first_classes() {
  r_flows_.clear();
  r_offsets_.assign(1, 0);
  r_links_.clear();
  r_weights_.clear();
  r_cap_.clear();
}

template <class LinkMap>
void TwinParts::append_first_class(const MaxMinProblem& in, std::uint32_t c, LinkMap link_map) {
  // (Inputs read through locals: the push_backs below may alias the spans' pointers for the
  // compiler.)
  const std::span<const std::uint32_t> links = in.path_links;
  const std::span<const double> weights = in.path_weights;
  const std::uint32_t begin = in.path_offsets[c], end = in.path_offsets[c + 1];
  r_flows_.push_back(in.class_flows[c]);
  if (!in.class_cap.empty()) r_cap_.push_back(in.class_cap[c]);
  for (std::uint32_t k = begin; k < end; ++k) {
    r_links_.push_back(link_map(links[k]));
    if (!weights.empty()) r_weights_.push_back(weights[k]);
  }
  r_offsets_.push_back(static_cast<std::uint32_t>(r_links_.size()));
}

void TwinParts::solve_first_parts(MaxMinSolver& solver, const MaxMinProblem& in,
                                  std::uint32_t parts, std::span<double> rate) {
  // The problem of the first parts, links and classes in their order in the whole problem.
  // (Inputs read through locals: the push_backs below may alias the spans' and vectors' pointers
  // for the compiler.)
  if (ranges_) return solve_first_runs(solver, in, parts, rate);
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
  clear_first_classes();
  const std::uint32_t* const class_part = class_part_.data();
  for (std::uint32_t c = 0; c < nc; ++c) {
    const std::uint32_t p = class_part[c];
    if (first[p] == p) append_first_class(in, c, [reduced](std::uint32_t l) { return reduced[l]; });
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

void TwinParts::solve_first_runs(MaxMinSolver& solver, const MaxMinProblem& in, std::uint32_t parts,
                                 std::span<double> rate) {
  // As solve_first_parts, each part a run of links and of classes: the first parts' runs in
  // increasing order are their links and classes in the whole problem's order.
  r_capacity_.clear();
  clear_first_classes();
  const std::span<const double> capacity = in.link_capacity;
  const std::uint32_t* const first = first_.data();
  const std::uint32_t* const link_offsets = link_offsets_.data();
  const std::uint32_t* const class_offsets = class_offsets_.data();
  for (std::uint32_t p = 0; p < parts; ++p) {
    if (first[p] != p) continue;
    // (Link l of the part is l - link_offsets[p] + base in the first parts' problem.)
    const std::uint32_t shift =
        static_cast<std::uint32_t>(r_capacity_.size()) - link_offsets[p];  // (mod 2^32)
    r_capacity_.insert(r_capacity_.end(), capacity.begin() + link_offsets[p],
                       capacity.begin() + link_offsets[p + 1]);
    for (std::uint32_t c = class_offsets[p]; c < class_offsets[p + 1]; ++c)
      append_first_class(in, c, [shift](std::uint32_t l) { return l + shift; });
  }
  r_rate_.resize(r_flows_.size());
  solver.solve({r_capacity_, r_flows_, r_offsets_, r_links_, r_weights_, r_cap_}, r_rate_);
  std::size_t r = 0;
  for (std::uint32_t p = 0; p < parts; ++p) {
    if (first[p] != p) continue;
    for (std::uint32_t c = class_offsets[p]; c < class_offsets[p + 1]; ++c)
      rate[c] = r_rate_[r++];
  }
  assert(r == r_rate_.size());
  for (std::uint32_t p = 0; p < parts; ++p) {
    const std::uint32_t q = first[p];
    if (q == p) continue;
    const std::uint32_t classes = class_offsets[p + 1] - class_offsets[p];
    std::copy_n(rate.begin() + class_offsets[q], classes, rate.begin() + class_offsets[p]);
    twin_classes_ += classes;
  }
}

bool TwinParts::sum_loads(const MaxMinProblem& in, std::span<const double> rate,
                          std::span<double> load, bool& finite) const {
  if (twin_set_parts_ == 0) return false;
  bool same_outside = true;
  if (ranges_) {  // (each part's links a run: the runs compared bit for bit)
    for (std::uint32_t p = 0; p < twin_set_parts_ && same_outside; ++p) {
      const std::uint32_t q = first_[p];
      if (q == p) continue;
      same_outside = std::memcmp(load.data() + link_offsets_[p], load.data() + link_offsets_[q],
                                 (link_offsets_[p + 1] - link_offsets_[p]) * sizeof(double)) == 0;
    }
  } else {
    for_each_twin_link([&](std::uint32_t twin, std::uint32_t first) {
      same_outside = same_outside && bits(load[twin]) == bits(load[first]);
    });
  }
  if (!same_outside) return false;
  finite = true;
  for (std::uint32_t p = 0; p < twin_set_parts_; ++p) {
    if (first_[p] != p) continue;
    for (std::uint32_t k = class_offsets_[p]; k < class_offsets_[p + 1]; ++k) {
      const std::uint32_t c = ranges_ ? k : class_order_[k];
      finite = std::isfinite(in.add_class_load(c, rate[c], load)) && finite;
    }
  }
  if (ranges_) {
    for (std::uint32_t p = 0; p < twin_set_parts_; ++p) {
      const std::uint32_t q = first_[p];
      if (q == p) continue;
      std::copy_n(load.begin() + link_offsets_[q], link_offsets_[p + 1] - link_offsets_[p],
                  load.begin() + link_offsets_[p]);
    }
  } else {
    for_each_twin_link([&](std::uint32_t twin, std::uint32_t first) { load[twin] = load[first]; });
  }
  return true;
}

}  // namespace stepsim::engine::detail
