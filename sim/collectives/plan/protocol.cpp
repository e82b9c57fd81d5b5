#include "sim/collectives/plan/protocol.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace stepsim::collectives {
namespace {

// NVIDIA/nccl v2.20.3 src/graph/tuning.cc, in microseconds; [algorithm][protocol] in NCCL's order
// (Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT) x (LL, LL128, Simple). PAT (NCCL
// 2.23+) has none: its latency is a formula of its own (nccl_tuner.cpp).
constexpr double kBaseLatencyUs[7][3] = {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0},
                                         {0, 0, 0},      {0, 0, 0},        {0, 0, 0}};
constexpr double kHardwareLatencyUs[3][7][3] = {
    // NVLink
    {{.6, 1.25, 28}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 23}, {0, 0, 23}, {0, 0, 0}},
    // PCI
    {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    // Network
    {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 14}, {0, 0, 0}},
};

Time microseconds(double us) {
  return Time::from_seconds(us * 1e-6);
}

}  // namespace

std::string_view to_string(Protocol protocol) {
  switch (protocol) {
    case Protocol::kLL:
      return "LL";
    case Protocol::kLL128:
      return "LL128";
    case Protocol::kSimple:
      return "Simple";
  }
  return "?";
}

std::optional<Protocol> parse_protocol(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "ll") return Protocol::kLL;
  if (lower == "ll128") return Protocol::kLL128;
  if (lower == "simple") return Protocol::kSimple;
  return std::nullopt;
}

ProtocolTraits protocol_traits(Protocol protocol) {
  switch (protocol) {
    case Protocol::kLL:
      // union ncclLLFifoLine: {data1, flag1, data2, flag2}, 4 bytes each.
      return {2.0, Bytes(32 << 10)};
    case Protocol::kLL128:
      // NCCL_LL128_LINEELEMS 16 x 8 B, NCCL_LL128_DATAELEMS 15: one flag word per line.
      return {128.0 / 120.0, Bytes(576'000)};
    case Protocol::kSimple:
      return {1.0, Bytes(1 << 20)};
  }
  return {};
}

std::string_view to_string(NcclAlgorithm algorithm) {
  switch (algorithm) {
    case NcclAlgorithm::kTree:
      return "Tree";
    case NcclAlgorithm::kRing:
      return "Ring";
    case NcclAlgorithm::kCollNetDirect:
      return "CollNetDirect";
    case NcclAlgorithm::kCollNetChain:
      return "CollNetChain";
    case NcclAlgorithm::kNvls:
      return "NVLS";
    case NcclAlgorithm::kNvlsTree:
      return "NVLSTree";
    case NcclAlgorithm::kPat:
      return "PAT";
  }
  return "?";
}

NvlinkGeneration nvlink_generation(double scale_up_gbps, bool hopper_or_later) {
  if (scale_up_gbps >= 900.0) return NvlinkGeneration::kNvlink5;
  return hopper_or_later ? NvlinkGeneration::kNvlink4 : NvlinkGeneration::kNvlink3;
}

double nccl_nvlink_gbps(NvlinkGeneration generation) {
  constexpr double kGBps[3] = {20.0, 20.6, 40.1};
  return kGBps[static_cast<int>(generation)];
}

double nvlink_line_gbps(NvlinkGeneration generation) {
  return generation == NvlinkGeneration::kNvlink5 ? 50.0 : 25.0;
}

Time nccl_base_latency(NcclAlgorithm algorithm, Protocol protocol) {
  return microseconds(kBaseLatencyUs[static_cast<int>(algorithm)][static_cast<int>(protocol)]);
}

Time nccl_hardware_latency(NcclHardware hardware, NcclAlgorithm algorithm, Protocol protocol) {
  return microseconds(kHardwareLatencyUs[static_cast<int>(hardware)][static_cast<int>(algorithm)]
                                        [static_cast<int>(protocol)]);
}

bool nccl_supports(NcclAlgorithm algorithm, Protocol protocol) {
  return algorithm == NcclAlgorithm::kTree || algorithm == NcclAlgorithm::kRing ||
         protocol == Protocol::kSimple;
}

}  // namespace stepsim::collectives
