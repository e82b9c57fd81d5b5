#include "topology/graph_reader.hpp"

#include <fmt/format.h>

#include "sim/common/input_error.hpp"
#include "topology/topology_builder.hpp"

namespace stepsim::topology {
namespace {

std::vector<std::string> kind_names() {
  std::vector<std::string> out;
  for (NodeKind k : kAllNodeKinds)
    out.emplace_back(to_string(k));
  return out;
}

std::vector<std::string> group_kind_names() {
  std::vector<std::string> out;
  for (GroupKind k : kAllGroupKinds)
    out.emplace_back(to_string(k));
  return out;
}

// Resolves a node name used in a link or a group, suggesting a close name when it is unknown.
NodeId resolve(const TopologyBuilder& b, const std::vector<std::string>& names,
               const config::Node& where) {
  const std::string name = where.as_string();
  if (auto id = b.find(name)) return *id;
  const std::string suggestion = config::closest_match(name, names);
  where.fail_with(
      fmt::format("no node named '{}'{}", name,
                  suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion)));
}

}  // namespace

Topology read_graph(const config::Node& node) {
  node.allow_keys(
      {"name", "nodes", "links", "groups", "efficiency", "multipath", "collective_library"});
  const std::string name = node.has("name") ? node.at("name").as_string() : "graph";
  TopologyBuilder b(name);
  std::vector<std::string> names;
  std::vector<std::string> where_defined;

  for (const config::Node& n : node.at("nodes").items()) {
    n.allow_keys({"name", "kind", "count", "in_network_reduction", "forwards", "owner"});
    const std::string pattern = n.at("name").as_string();
    const NodeKind kind = *parse_node_kind(n.at("kind").as_choice(kind_names()));
    const std::int64_t count = n.has("count") ? n.at("count").as_int(1, 10'000'000) : 0;
    if (count > 0 && pattern.find("{}") == std::string::npos) {
      n.at("name").fail("a name with '{}' where the index goes, since 'count' is given");
    }
    NodeOptions options;
    if (auto v = n.find("in_network_reduction")) options.in_network_reduction = v->as_bool();
    if (auto v = n.find("forwards")) options.forwards = v->as_bool();
    if (auto v = n.find("owner")) options.owner = resolve(b, names, *v);
    for (std::int64_t i = 0; i < std::max<std::int64_t>(count, 1); ++i) {
      std::string full = pattern;
      if (count > 0) full.replace(full.find("{}"), 2, std::to_string(i));
      if (full.empty()) n.at("name").fail("a non-empty node name");
      if (auto existing = b.find(full)) {
        n.at("name").fail_with(fmt::format("duplicate node name '{}' (first defined at {})", full,
                                           where_defined[existing->value()]));
      }
      b.add_node(full, kind, options);
      names.push_back(full);
      where_defined.push_back(n.location());
    }
  }

  if (auto links = node.find("links")) {
    for (const config::Node& l : links->items()) {
      l.allow_keys({"from", "to", "bandwidth", "latency", "class", "duplex"});
      const NodeId from = resolve(b, names, l.at("from"));
      const NodeId to = resolve(b, names, l.at("to"));
      if (from == to) l.at("to").fail_with("a link must join two different nodes");
      const BytesPerSecond bandwidth = l.at("bandwidth").as_bandwidth();
      const Time latency = l.has("latency") ? l.at("latency").as_time() : Time::zero();
      const std::uint16_t cls = b.link_class(l.has("class") ? l.at("class").as_string() : "link");
      const bool duplex = l.has("duplex") && l.at("duplex").as_bool();
      if (duplex) {
        b.add_duplex(from, to, bandwidth, latency, cls);
      } else {
        b.add_link(from, to, bandwidth, latency, cls);
      }
    }
  }

  if (auto groups = node.find("groups")) {
    for (const config::Node& g : groups->items()) {
      g.allow_keys({"kind", "name", "members"});
      const GroupKind kind = *parse_group_kind(g.at("kind").as_choice(group_kind_names()));
      std::vector<NodeId> members;
      for (const config::Node& m : g.at("members").items()) {
        const NodeId id = resolve(b, names, m);
        if (auto other = b.group_of(id, kind)) {
          m.fail_with(fmt::format("node '{}' is already in another {} group", names[id.value()],
                                  to_string(kind)));
        }
        if (std::find(members.begin(), members.end(), id) != members.end()) {
          m.fail_with(fmt::format("node '{}' is listed twice", names[id.value()]));
        }
        members.push_back(id);
      }
      b.add_group(kind, g.at("name").as_string(), std::move(members));
    }
  }

  try {
    return std::move(b).build();
  } catch (const InputError& e) {
    node.fail_with(e.what());
  }
}

}  // namespace stepsim::topology
