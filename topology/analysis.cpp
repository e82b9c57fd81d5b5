#include "topology/analysis.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <cmath>
#include <limits>

namespace stepsim::topology {
namespace {

// Capacities are integers in kilobytes per second: exact for every rate a preset uses, and immune
// to the floating-point tolerance issues of push-relabel.
constexpr double kUnit = 1e3;

using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<
        boost::edge_capacity_t, std::int64_t,
        boost::property<boost::edge_residual_capacity_t, std::int64_t,
                        boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;

void add_arc(FlowGraph& g, std::size_t u, std::size_t v, std::int64_t capacity) {
  auto cap = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  const auto e = boost::add_edge(u, v, g).first;
  const auto r = boost::add_edge(v, u, g).first;
  cap[e] = capacity;
  cap[r] = 0;
  rev[e] = r;
  rev[r] = e;
}

// Owning accelerator of each node (itself for accelerators), or invalid.
std::vector<NodeId> owners(const Topology& t) {
  std::vector<NodeId> owner(t.num_nodes());
  for (std::uint32_t v = 0; v < t.num_nodes(); ++v) {
    const NodeInfo& n = t.node(NodeId(v));
    owner[v] = n.kind == NodeKind::kAccelerator ? NodeId(v) : n.owner;
  }
  return owner;
}

}  // namespace

BytesPerSecond max_flow_bisection(const Topology& t) {
  const std::size_t n = t.num_nodes();
  const auto& acc = t.accelerators();
  const std::size_t half = acc.size() / 2;
  if (half == 0) return BytesPerSecond(0);
  // 0 = not an endpoint, 1 = source side, 2 = sink side.
  std::vector<std::uint8_t> side(n, 0);
  for (std::size_t i = 0; i < acc.size(); ++i)
    side[acc[i].value()] = i < half ? 1 : 2;
  FlowGraph g(n + 2);
  const std::size_t source = n;
  const std::size_t sink = n + 1;
  // The source and sink arcs must never be the cut, yet push-relabel adds excesses up: an
  // "infinite" near INT64_MAX overflows (UBSan caught it). Every link's capacity together, plus
  // one, is enough and cannot overflow.
  std::int64_t infinite = 1;
  for (std::uint32_t l = 0; l < t.num_links(); ++l) {
    const LinkInfo& info = t.link(LinkIndex(l));
    const std::uint32_t u = info.source.value();
    const std::uint32_t v = info.target.value();
    // A node that does not forward may only start flow (source side) or end it (sink side).
    if (!t.node(info.source).forwards && side[u] != 1) continue;
    if (!t.node(info.target).forwards && side[v] != 2) continue;
    const auto capacity = static_cast<std::int64_t>(std::llround(info.bandwidth.value() / kUnit));
    add_arc(g, u, v, capacity);
    infinite += capacity;
  }
  for (std::size_t i = 0; i < acc.size(); ++i) {
    if (i < half) {
      add_arc(g, source, acc[i].value(), infinite);
    } else {
      add_arc(g, acc[i].value(), sink, infinite);
    }
  }
  const std::int64_t flow = boost::push_relabel_max_flow(g, source, sink);
  return BytesPerSecond(static_cast<double>(flow) * kUnit);
}

std::uint32_t eccentricity_max(const Topology& t, const std::vector<NodeId>& sources) {
  std::vector<std::uint32_t> dist(t.num_nodes());
  std::vector<std::uint32_t> queue;
  std::uint32_t worst = 0;
  constexpr std::uint32_t kUnreached = std::numeric_limits<std::uint32_t>::max();
  for (NodeId s : sources) {
    std::fill(dist.begin(), dist.end(), kUnreached);
    queue.assign(1, s.value());
    dist[s.value()] = 0;
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const std::uint32_t u = queue[head];
      if (u != s.value() && !t.node(NodeId(u)).forwards) continue;
      const auto range = t.out_links(NodeId(u));
      for (std::uint32_t i = range.first; i < range.first + range.count; ++i) {
        const std::uint32_t v = t.target(LinkIndex(i)).value();
        if (dist[v] != kUnreached) continue;
        dist[v] = dist[u] + 1;
        queue.push_back(v);
      }
    }
    for (NodeId a : t.accelerators())
      worst = std::max(worst, dist[a.value()]);
  }
  return worst;
}

Analysis analyze(const Topology& t, const AnalysisOptions& options) {
  Analysis a;
  for (NodeKind k : kAllNodeKinds)
    a.counts.emplace_back(k, t.count(k));
  a.links = t.num_links();

  const std::vector<NodeId> owner = owners(t);
  const std::size_t classes = t.link_classes().size();
  const std::size_t accs = t.accelerators().size();
  std::vector<double> sum(classes * accs, 0.0);
  for (std::uint32_t l = 0; l < t.num_links(); ++l) {
    const LinkInfo& info = t.link(LinkIndex(l));
    const NodeId o = owner[info.source.value()];
    if (!o.valid() || owner[info.target.value()] == o) continue;
    sum[info.link_class * accs + *t.accelerator_index(o)] += info.bandwidth.value();
  }
  for (std::size_t c = 0; c < classes; ++c) {
    const auto begin = sum.begin() + static_cast<std::ptrdiff_t>(c * accs);
    const auto [lo, hi] = std::minmax_element(begin, begin + static_cast<std::ptrdiff_t>(accs));
    if (*hi == 0) continue;
    a.per_accelerator.push_back(
        ClassBandwidth{t.link_classes()[c].name, BytesPerSecond(*lo), BytesPerSecond(*hi)});
  }

  std::size_t domains = 0;
  for (const Group& g : t.groups())
    domains += g.kind == GroupKind::kScaleUp ? 1 : 0;
  if (t.num_links() <= options.max_flow_link_limit) {
    a.bisection = {true, max_flow_bisection(t),
                   "max-flow (Boost push-relabel) from the first half of the accelerators in "
                   "topology order to the second half"};
  } else if (t.fabrics().size() == 1 && domains > 1) {
    const FabricSummary& f = t.fabrics().front();
    a.bisection = {true, f.bisection,
                   fmt::format("{} of the '{}' fabric (the graph is too large for max-flow)",
                               f.bisection_method, f.name)};
  } else {
    a.bisection = {false, BytesPerSecond(0),
                   fmt::format("not computed: {} links exceed the max-flow limit of {} and no "
                               "closed form applies",
                               t.num_links(), options.max_flow_link_limit)};
  }

  std::vector<NodeId> sources;
  const std::size_t want = std::max<std::size_t>(1, options.diameter_sources);
  if (accs <= want) {
    sources = t.accelerators();
  } else {
    for (std::size_t i = 0; i < want; ++i)
      sources.push_back(t.accelerators()[i * accs / want]);
  }
  a.diameter = {eccentricity_max(t, sources), sources.size(), sources.size() == accs};
  return a;
}

}  // namespace stepsim::topology
