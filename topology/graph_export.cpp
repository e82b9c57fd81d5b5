#include "topology/graph_export.hpp"

#include <fmt/format.h>
#include <boost/graph/graphml.hpp>
#include <boost/graph/graphviz.hpp>
#include <boost/property_map/dynamic_property_map.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <ostream>

namespace stepsim::topology {
namespace {

using Edge = boost::graph_traits<Graph>::edge_descriptor;

LinkIndex index_of(const Topology& t, const Edge& e) {
  return LinkIndex(boost::get(boost::edge_index, t.graph(), e));
}

}  // namespace

void write_dot(std::ostream& out, const Topology& t) {
  const auto vertex_writer = [&t](std::ostream& os, std::uint32_t v) {
    const NodeInfo& n = t.node(NodeId(v));
    os << fmt::format("[label=\"{}\",kind=\"{}\"{}]", n.name, to_string(n.kind),
                      n.kind == NodeKind::kSwitch ? ",shape=box" : "");
  };
  const auto edge_writer = [&t](std::ostream& os, const Edge& e) {
    const LinkIndex l = index_of(t, e);
    os << fmt::format("[label=\"{}\",class=\"{}\",latency_ps={}]", format_bandwidth(t.bandwidth(l)),
                      t.link_class(l).name, t.latency(l).picoseconds());
  };
  boost::write_graphviz(out, t.graph(), vertex_writer, edge_writer);
}

void write_graphml(std::ostream& out, const Topology& t) {
  boost::dynamic_properties dp;
  const Graph& g = t.graph();
  dp.property("name", boost::make_function_property_map<std::uint32_t, std::string>(
                          [&t](std::uint32_t v) { return t.name(NodeId(v)); }));
  dp.property("kind",
              boost::make_function_property_map<std::uint32_t, std::string>(
                  [&t](std::uint32_t v) { return std::string(to_string(t.kind(NodeId(v)))); }));
  dp.property("bandwidth_bytes_per_second",
              boost::make_function_property_map<Edge, double>(
                  [&t](const Edge& e) { return t.bandwidth(index_of(t, e)).value(); }));
  dp.property("latency_ps",
              boost::make_function_property_map<Edge, std::int64_t>(
                  [&t](const Edge& e) { return t.latency(index_of(t, e)).picoseconds(); }));
  dp.property("class", boost::make_function_property_map<Edge, std::string>(
                           [&t](const Edge& e) { return t.link_class(index_of(t, e)).name; }));
  boost::write_graphml(out, g, boost::get(boost::vertex_index, g), dp, true);
}

}  // namespace stepsim::topology
