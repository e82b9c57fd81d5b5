#include "topology/node_kind.hpp"

#include <cstdint>

namespace stepsim::topology {

std::string_view to_string(NodeKind kind) {
  switch (kind) {
    case NodeKind::kAccelerator:
      return "accelerator";
    case NodeKind::kDie:
      return "die";
    case NodeKind::kCpu:
      return "cpu";
    case NodeKind::kNic:
      return "nic";
    case NodeKind::kSwitch:
      return "switch";
  }
  return "unknown";
}

std::optional<NodeKind> parse_node_kind(std::string_view text) {
  for (NodeKind kind : kAllNodeKinds) {
    if (to_string(kind) == text) return kind;
  }
  return std::nullopt;
}

}  // namespace stepsim::topology
