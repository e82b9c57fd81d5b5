// What a vertex of the topology is. The set is closed on purpose: it names the physical roles the
// analysis and the router treat differently (only accelerators run ranks; switches may reduce in
// the network; accelerators do not forward traffic unless the fabric is a direct network).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stepsim::topology {

enum class NodeKind : std::uint8_t {
  kAccelerator,  // a GPU or NPU package: the device a rank runs on
  kDie,          // one die of a multi-die accelerator package (Ascend 910C has two)
  kCpu,
  kNic,     // a network adapter joining an accelerator to the scale-out fabric
  kSwitch,  // NVSwitch, UB switch chip, InfiniBand or Ethernet switch
};

inline constexpr NodeKind kAllNodeKinds[] = {NodeKind::kAccelerator, NodeKind::kDie, NodeKind::kCpu,
                                             NodeKind::kNic, NodeKind::kSwitch};

// "accelerator", "die", "cpu", "nic", "switch".
std::string_view to_string(NodeKind kind);
std::optional<NodeKind> parse_node_kind(std::string_view text);

}  // namespace stepsim::topology
