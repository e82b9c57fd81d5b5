#include "sim/collectives/nccl/nccl_p2p.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "sim/collectives/nccl/nccl_tuner.hpp"

namespace stepsim::collectives {
namespace {

// MAXCHANNELS (device.h).
constexpr std::uint32_t kNcclMaxChannels = 32;
// NCCL_NCHANNELS_PER_NET_PEER.
constexpr std::uint32_t kChannelsPerNetPeer = 2;
// NCCL_P2P_NVL_CHUNKSIZE and NCCL_P2P_NET_CHUNKSIZE.
constexpr std::int64_t kNvlChunk = 512 << 10;
constexpr std::int64_t kNetChunk = 128 << 10;

std::uint32_t pow2_up(std::uint32_t x) {
  return std::bit_ceil(std::max<std::uint32_t>(x, 1));
}

std::int64_t div_up(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

std::optional<NcclP2pModel> nccl_p2p_model(const GroupShape& group) {
  if (!group.nccl || group.size < 2 || !(group.scale_up_bandwidth.value() > 0)) return std::nullopt;
  const auto per_domain = group.uniform_domain_size();
  const std::uint32_t domains = group.num_domains();
  // A domain of one member has no scale-up peer to send to.
  if (per_domain && *per_domain < 2) return std::nullopt;
  const double scale_up = group.scale_up_bandwidth.gigabytes_per_second();
  const NvlinkGeneration generation = nvlink_generation(scale_up, nccl_hopper_or_later(group));
  const double links = std::max(1.0, std::round(scale_up / nvlink_line_gbps(generation)));
  // 2 channels per NVLink to a peer (ncclTopoGetNchannels); NCCL's collective channels are as
  // many, at most MAXCHANNELS.
  const auto per_peer_paths = static_cast<std::uint32_t>(2 * links);
  NcclP2pModel model;
  model.ranks = group.size;
  model.multi_node = domains > 1;
  model.channels = std::min(kNcclMaxChannels, pow2_up(std::min(kNcclMaxChannels, per_peer_paths)));
  model.channels_per_peer =
      model.multi_node ? kChannelsPerNetPeer : pow2_up(std::min(model.channels, per_peer_paths));
  model.channels_per_peer = std::min(model.channels_per_peer, model.channels);
  model.chunk = Bytes(model.multi_node ? kNetChunk : kNvlChunk);
  model.channel_bandwidth = BytesPerSecond::gigabytes(nccl_nvlink_gbps(generation));
  return model;
}

std::uint32_t nccl_p2p_peer_channels(const NcclP2pModel& model, std::int64_t bytes) {
  if (bytes <= 0) return 1;
  const std::uint32_t max_channels = std::max<std::uint32_t>(model.channels_per_peer, 1);
  std::uint32_t min_channels = max_channels;
  while (std::uint64_t{min_channels} * model.ranks > model.channels && min_channels > 1)
    min_channels /= 2;
  const std::int64_t step = model.chunk.count();
  const std::int64_t min_part = model.multi_node ? step / 2 : step / 8;
  const std::int64_t max_part = model.multi_node ? step : step * 32;
  auto channels =
      static_cast<std::uint32_t>(std::min<std::int64_t>(min_channels, div_up(bytes, min_part)));
  channels = std::max<std::uint32_t>(channels, 1);
  std::int64_t part = std::max(min_part, div_up(bytes, channels));
  while (part > max_part && channels <= max_channels / 2) {
    channels *= 2;
    part = div_up(bytes, channels);
  }
  return channels;
}

NcclP2pLimit nccl_p2p_limit(const NcclP2pModel& model, std::int64_t bytes) {
  const std::uint32_t channels = nccl_p2p_peer_channels(model, bytes);
  const std::int64_t part = div_up(std::max<std::int64_t>(bytes, 0), channels);
  const double fill_bytes = static_cast<double>(std::min(part, model.chunk.count()));
  return {model.channel_bandwidth * static_cast<double>(channels),
          Time::from_seconds(fill_bytes / model.channel_bandwidth.value())};
}

}  // namespace stepsim::collectives
