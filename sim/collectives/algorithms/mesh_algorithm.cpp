// "mesh": AllReduce, AllGather and ReduceScatter on a full mesh of d dimensions (GroupShape::mesh,
// UB-Mesh's nD-FullMesh, arXiv 2503.20377), using every mesh link at once.
//
// Reduce-scatter, dimension after dimension: in each line of the dimension (a_k members joined
// pairwise by direct links) every member sends 1/a_k of the data it holds to each of the a_k - 1
// others at once, each over its own link, and keeps the 1/a_k that they send it; after the last
// dimension each member holds 1/n of the result. The all-gather runs the dimensions in reverse,
// each member sending what it holds to every other member of its line. A member starts a step
// once it has received everything of the step before (a join).
//
// One order of dimensions would keep one dimension's links busy and the others idle, so the data
// is cut into d parts and part j takes the dimensions in the rotated order j, j+1, ..., j+d-1
// (mod d), as multi-dimensional torus and mesh AllReduce algorithms do: at every step each
// dimension carries one part. The parts are equal when the dimensions are alike, and weighed to
// load every dimension's links for the same time when they are not (part_sizes). Every transfer
// crosses one direct link, so routing never has a choice and nothing crosses a third member. No
// chunks: with the rotation every link already works at every step, and chunking would only add
// steps.
//
// Uncontended closed form, every dimension of size m and link bandwidth B per direction, n = m^d
// members, L = d(m-1) links per member, per-step latency a (step latency + link latency), o once:
//   AllReduce  o + 2d·a + 2(n-1)/n·S/(L·B)
//   AllGather, ReduceScatter  o + d·a + (n-1)/n·S/(L·B)
// At step s of the reduce-scatter each link carries S/(d·m^(s+1)), and the d steps add up to
// (n-1)/n·S/(d(m-1)) per link: every byte a member must send, spread evenly over all its links
// (tests/collectives/mesh_algorithm_test.cpp). A single line (d = 1) is the direct algorithm:
// o + 2a + 2S/(nB). With dimensions of different sizes the parts drift out of step and share the
// links of a dimension where they meet (max-min fairly); no closed form then.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/ring_phases.hpp"
#include "sim/common/input_error.hpp"

namespace stepsim::collectives {
namespace {

using Lines = std::vector<std::vector<std::uint32_t>>;

// One step in every line of a dimension: each member sends to every other member of its line at
// once, bytes_of(line, x, y) from position x to position y; then each member's frontier is what it
// received. `received` is scratch space, one empty list per member.
template <typename BytesOf>
void exchange_in_lines(PlanBuilder& builder, const Lines& lines, BytesOf bytes_of,
                       const PlanOptions& options, Frontier& frontier,
                       std::vector<std::vector<TransferId>>& received) {
  for (const auto& line : lines)
    for (std::uint32_t x = 0; x < line.size(); ++x)
      for (std::uint32_t y = 0; y < line.size(); ++y) {
        if (x == y) continue;
        const Time extra = detail::start_latency(frontier, line[x], options.step_latency, options);
        received[line[y]].push_back(builder.add(
            {Endpoint::member(line[x]), Endpoint::member(line[y]), bytes_of(line, x, y), extra, 1},
            frontier.deps(line[x])));
      }
  for (const auto& line : lines)
    for (std::uint32_t member : line) {
      frontier.set_all(builder, member, received[member]);
      received[member].clear();
    }
}

// After a reduce-scatter step the member at position y of a line holds part y of what the line
// held (`held`, bytes per member).
void scatter(const Lines& lines, std::vector<Bytes>& held) {
  for (const auto& line : lines) {
    const Bytes whole = held[line.front()];
    const auto size = static_cast<std::uint32_t>(line.size());
    for (std::uint32_t y = 0; y < size; ++y)
      held[line[y]] = detail::share(whole, size, y);
  }
}

// After an all-gather step every member of a line holds what the whole line held.
void gather(const Lines& lines, std::vector<Bytes>& held) {
  for (const auto& line : lines) {
    Bytes whole;
    for (std::uint32_t member : line)
      whole += held[member];
    for (std::uint32_t member : line)
      held[member] = whole;
  }
}

// The data of each part. Part j's reduce-scatter puts f(j, k) = 1/(a_k x the sizes of the
// dimensions it crossed before k) of its data on each link of dimension k (its all-gather as much
// again), so with shares w_j the links of dimension k are busy for sum_j w_j·f(j, k) / B_k. The
// shares that make this the same for every dimension let all links work to the end, the least
// time their load allows (the busiest link sets the time); equal shares do that when the
// dimensions are alike (by symmetry), not on the pod's 8 x 8 x 4 x 4, where the parts that start
// on a 4-member dimension would load its links with twice the others' bytes. No positive solution
// (very unequal bandwidths): equal shares.
std::vector<Bytes> part_sizes(const MeshShape& mesh, Bytes total) {
  const std::size_t d = mesh.dimensions();
  std::vector<Bytes> sizes(d);
  auto equal = [&] {
    for (std::size_t j = 0; j < d; ++j)
      sizes[j] = detail::share(total, static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(j));
    return sizes;
  };
  const bool alike = std::adjacent_find(mesh.sizes.begin(), mesh.sizes.end(),
                                        std::not_equal_to<>()) == mesh.sizes.end() &&
                     std::adjacent_find(mesh.bandwidth.begin(), mesh.bandwidth.end(),
                                        std::not_equal_to<>()) == mesh.bandwidth.end();
  if (alike) return equal();
  // Row k, column j: f(j, k); the last column the dimension's bandwidth (relative to the first).
  // Row-major, d rows of d + 1 (one allocation: GCC 12 at -O3 misreads a vector of vectors'
  // sizes as overflowing, -Walloc-size-larger-than).
  const std::size_t w = d + 1;
  std::vector<double> m(d * w);
  for (std::size_t j = 0; j < d; ++j) {
    double crossed = 1;
    for (std::size_t s = 0; s < d; ++s) {
      const std::size_t k = (j + s) % d;
      m[k * w + j] = 1 / (mesh.sizes[k] * crossed);
      crossed *= mesh.sizes[k];
    }
  }
  for (std::size_t k = 0; k < d; ++k)
    m[k * w + d] = mesh.bandwidth[k].value() / mesh.bandwidth[0].value();
  // Gaussian elimination with partial pivoting (d <= 6 or so).
  for (std::size_t c = 0; c < d; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < d; ++r)
      if (std::abs(m[r * w + c]) > std::abs(m[pivot * w + c])) pivot = r;
    std::swap_ranges(m.begin() + static_cast<std::ptrdiff_t>(c * w),
                     m.begin() + static_cast<std::ptrdiff_t>(c * w + w),
                     m.begin() + static_cast<std::ptrdiff_t>(pivot * w));
    if (!(std::abs(m[c * w + c]) > 0)) return equal();
    for (std::size_t r = 0; r < d; ++r) {
      if (r == c) continue;
      const double factor = m[r * w + c] / m[c * w + c];
      for (std::size_t x = c; x <= d; ++x)
        m[r * w + x] -= factor * m[c * w + x];
    }
  }
  std::vector<double> share(d);
  double sum = 0;
  for (std::size_t j = 0; j < d; ++j) {
    share[j] = m[j * w + d] / m[j * w + j];
    if (!(share[j] > 0) || !std::isfinite(share[j])) return equal();
    sum += share[j];
  }
  // Whole bytes that add up to the total: cut at the rounded running sums.
  double running = 0;
  std::int64_t cut = 0;
  for (std::size_t j = 0; j < d; ++j) {
    running += share[j] / sum;
    const std::int64_t next =
        j + 1 == d
            ? total.count()
            : static_cast<std::int64_t>(std::llround(running * static_cast<double>(total.count())));
    sizes[j] = Bytes(std::max(next, cut) - cut);
    cut = std::max(next, cut);
  }
  return sizes;
}

class MeshAlgorithm final : public Algorithm {
 public:
  std::string_view name() const override { return "mesh"; }

  std::optional<std::string> unsupported(const Operation& op,
                                         const GroupShape& group) const override {
    if (op.kind != CollectiveKind::kAllReduce && op.kind != CollectiveKind::kAllGather &&
        op.kind != CollectiveKind::kReduceScatter)
      return std::string(to_string(op.kind)) + " has no mesh form (use 'direct')";
    if (!group.mesh)
      return "the group is not a full mesh (a grid whose every line is a clique of direct links "
             "of one class per dimension)";
    return std::nullopt;
  }

  Plan plan(const Operation& op, const GroupShape& group,
            const PlanOptions& options) const override {
    if (auto why = unsupported(op, group)) throw InputError("mesh: " + *why);
    const MeshShape& mesh = *group.mesh;
    const auto d = static_cast<std::uint32_t>(mesh.dimensions());
    const std::uint32_t n = group.size;
    std::vector<Lines> lines(d);
    for (std::uint32_t k = 0; k < d; ++k)
      lines[k] = mesh.lines(k);
    const bool reduce = op.kind != CollectiveKind::kAllGather;
    const bool all_gather = op.kind != CollectiveKind::kReduceScatter;
    // Per part and phase, every member sends sum(a_k - 1) transfers and joins once per dimension.
    const std::size_t links =
        std::accumulate(mesh.sizes.begin(), mesh.sizes.end(), std::size_t{0},
                        [](std::size_t sum, std::uint32_t a) { return sum + a - 1; });
    const std::size_t phases = (reduce ? 1 : 0) + (all_gather ? 1 : 0);
    PlanBuilder builder;
    builder.reserve(phases * d * n * (links + d), 2 * phases * d * n * links);

    std::vector<std::vector<TransferId>> received(n);
    const std::vector<Bytes> parts = part_sizes(mesh, op.size);
    for (std::uint32_t part = 0; part < d; ++part) {
      auto dimension = [&](std::uint32_t step) { return (part + step) % d; };
      std::vector<Bytes> held(n, parts[part]);
      Frontier frontier(n);
      for (std::uint32_t s = 0; s < d; ++s) {
        const Lines& in = lines[dimension(s)];
        if (reduce)
          exchange_in_lines(
              builder, in,
              [&](const std::vector<std::uint32_t>& line, std::uint32_t x, std::uint32_t y) {
                return detail::share(held[line[x]], static_cast<std::uint32_t>(line.size()), y);
              },
              options, frontier, received);
        // An AllGather starts from the pieces a reduce-scatter would leave.
        scatter(in, held);
      }
      if (!all_gather) continue;
      for (std::uint32_t s = d; s-- > 0;) {
        const Lines& in = lines[dimension(s)];
        exchange_in_lines(
            builder, in,
            [&](const std::vector<std::uint32_t>& line, std::uint32_t x, std::uint32_t) {
              return held[line[x]];
            },
            options, frontier, received);
        gather(in, held);
      }
    }
    return std::move(builder).finish(member_reduction(op.kind));
  }
};

}  // namespace

void register_mesh_algorithm(AlgorithmRegistry& registry) {
  registry.add("mesh",
               "full meshes (UB-Mesh): per-dimension direct reduce-scatter and all-gather, the "
               "data in one part per dimension, each taking the dimensions in a rotated order",
               [](const AlgorithmRegistry&) { return std::make_unique<MeshAlgorithm>(); });
}

}  // namespace stepsim::collectives
