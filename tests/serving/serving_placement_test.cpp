// Placement of the serving pools on the topology and the KV transfer from prefill to decode
// (docs/serving.md, "Placement" and "KV transfer"): pools on distinct accelerators, by default
// prefill first then decode; a pool's ranks run where it is placed; one request's KV cache on an
// idle path takes its bytes over the path's bandwidth plus the path's latency; bad placements
// exit 2 naming the key and the value.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/common/input_error.hpp"
#include "sim/run/serve.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "topology/router.hpp"

namespace stepsim {
namespace {

using workloads::ServingPhase;

// Two DGX H100 nodes (8 GPUs each, NVLink inside, one 400 Gb/s NIC per GPU between them) and
// Llama 3 70B (80 layers, 8 KV heads of 128).
std::string two_nodes(const std::string& pools) {
  return "topology: cluster:nodes=2\nmodel: llama3-70b\ncompute: {device: h100}\n"
         "serving:\n" +
         pools;
}

ServingScenario load(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return load_serving_scenario(config::Document::parse(yaml, "placement.yaml"), "placement",
                               overrides);
}

std::vector<std::uint32_t> range(std::uint32_t first, std::uint32_t count) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < count; ++i)
    out.push_back(first + i);
  return out;
}

TEST(ServePlacement, PrefillFirstThenDecodeByDefault) {
  const ServingScenario s = load(two_nodes(
      "  prefill: {accelerators: 8, tp: 8, prompt: 2048}\n  decode: {tp: 8, context: 4096}\n"));
  EXPECT_FALSE(s.serving.colocated);
  EXPECT_EQ(s.serving.prefill->placement, range(0, 8));
  EXPECT_EQ(s.serving.decode->placement, range(8, 8));  // what is left
  EXPECT_EQ(s.serving.decode->accelerators, 8);
}

TEST(ServePlacement, NodesAndRangesPlaceThePools) {
  const ServingScenario s =
      load(two_nodes("  prefill: {nodes: '1', tp: 8, prompt: 2048}\n"
                     "  decode: {placement: '0-3,4-7', tp: 8, context: 4096}\n"));
  EXPECT_EQ(s.serving.prefill->placement, range(8, 8));
  EXPECT_EQ(s.serving.decode->placement, range(0, 8));
  // Neither pool placed: both on every accelerator, taking turns (the first slice's behaviour).
  const ServingScenario colocated =
      load(two_nodes("  prefill: {tp: 8, prompt: 2048}\n  decode: {tp: 8, context: 4096}\n"));
  EXPECT_TRUE(colocated.serving.colocated);
  EXPECT_EQ(colocated.serving.decode->placement, range(0, 16));
  EXPECT_TRUE(workloads::kv_transfers(colocated.serving).empty());
}

// The pool's ranks run where it is placed: a TP8 decode step on the 8 GPUs of node 1 takes what
// it takes on node 0 (the nodes are alike), and split over the two nodes (4 + 4 GPUs) its 161
// AllReduces cross the 400 Gb/s NICs and take longer.
TEST(ServePlacement, TheStepRunsOnThePoolsAccelerators) {
  const std::string base =
      two_nodes("  decode: {placement: '0-7', tp: 8, batch: 8, context: 4096}\n");
  const Time node0 = simulate_pass(load(base), ServingPhase::kDecode, 8).time;
  const Time node1 =
      simulate_pass(load(base, {"serving.decode.placement=8-15"}), ServingPhase::kDecode, 8).time;
  const Time split =
      simulate_pass(load(base, {"serving.decode.placement=0-3,8-11"}), ServingPhase::kDecode, 8)
          .time;
  EXPECT_EQ(node0, node1);
  EXPECT_GT(split.seconds(), 1.05 * node0.seconds());
}

// One request (TP1 prefill on GPU 0 of node 0, TP1 decode on GPU 0 of node 1, a 2,048-token
// prompt): its KV cache is 2048 tokens x 80 layers x 8 KV heads x 2 (keys, values) x 128 x 2
// bytes = 671,088,640 bytes, one flow on an otherwise idle path GPU -> NIC -> leaf -> NIC -> GPU.
// Its time is the path's latency plus the bytes over the path's narrowest link as the flow
// network sees it (the calibrated NIC).
TEST(ServeKvTransfer, OneRequestOnAnIdlePathIsBytesOverBandwidthPlusLatency) {
  const ServingScenario s =
      load(two_nodes("  prefill: {placement: '0', tp: 1, prompt: 2048}\n"
                     "  decode: {placement: '8', tp: 1, context: 4096}\n"));
  const auto transfers = workloads::kv_transfers(s.serving);
  ASSERT_EQ(transfers.size(), 1u);
  EXPECT_EQ(transfers[0].from, 0u);
  EXPECT_EQ(transfers[0].to, 8u);
  const std::int64_t bytes = 2048LL * 80 * 8 * 2 * 128 * 2;
  EXPECT_EQ(transfers[0].bytes.count(), bytes);

  const auto kv = simulate_kv_transfer(s);
  ASSERT_TRUE(kv.has_value());
  EXPECT_EQ(kv->bytes.count(), bytes);
  EXPECT_EQ(kv->requests, 1);

  const topology::Topology& topo = s.topology;
  topology::Router router(topo);
  const topology::Path path = router.route(topo.accelerators()[0], topo.accelerators()[8]);
  ASSERT_GE(path.size(), 3u);  // leaves the node through the NICs
  const collectives::CollectiveSession session(topo, s.network.calibration, s.network.runner);
  Time latency;
  double narrowest = 1e300;
  for (const topology::LinkIndex l : path) {
    latency += topo.latency(l);
    narrowest = std::min(narrowest, session.links().bandwidth[l.value()].value());
  }
  const double expected = latency.seconds() + static_cast<double>(bytes) / narrowest;
  EXPECT_NEAR(kv->time.seconds(), expected, 1e-9 * expected + 1e-12)
      << "latency " << format_time(latency) << ", narrowest " << narrowest << " B/s";
  // About 48 GB/s: 14 ms for 671 MB.
  EXPECT_GT(kv->time.seconds(), 0.010);
  EXPECT_LT(kv->time.seconds(), 0.020);
}

// TP8 to TP8 across the nodes: rank i sends its KV head to rank i, 8 flows on 8 rails at once,
// each an eighth of the cache: the time of one request's eighth on an idle path. TTFT is the
// prefill pass plus the transfer.
TEST(ServeKvTransfer, TensorParallelRanksSendTheirHeadsOnTheirRails) {
  const ServingScenario s =
      load(two_nodes("  prefill: {nodes: '0', tp: 8, prompt: 2048}\n"
                     "  decode: {nodes: '1', tp: 8, context: 4096}\n"));
  const auto transfers = workloads::kv_transfers(s.serving);
  ASSERT_EQ(transfers.size(), 8u);
  for (std::uint32_t i = 0; i < 8; ++i) {
    EXPECT_EQ(transfers[i].from, i);
    EXPECT_EQ(transfers[i].to, 8 + i);
    EXPECT_EQ(transfers[i].bytes.count(), 2048LL * 80 * 2 * 128 * 2);
  }
  const ServingScenario one =
      load(two_nodes("  prefill: {placement: '0', tp: 1, prompt: 256}\n"
                     "  decode: {placement: '8', tp: 1, context: 4096}\n"));
  // One head's share of a 2,048-token prompt is a 256-token prompt's whole cache (8 heads).
  EXPECT_EQ(simulate_kv_transfer(s)->time, simulate_kv_transfer(one)->time);
  const ServeReport report = make_serve_report(s, std::nullopt);
  ASSERT_TRUE(report.kv_transfer.has_value());
  EXPECT_EQ(report.ttft, report.prefill->time + report.kv_transfer->time);
}

// From TP8 prefill to TP2 decode, decode rank j holds heads 4j..4j+3: it receives one head from
// each of prefill ranks 4j..4j+3. Requests of two prefill replicas go round robin to the two
// decode replicas.
TEST(ServeKvTransfer, HeadsFollowTheDecodeRanksSplit) {
  const ServingScenario s =
      load(two_nodes("  prefill: {nodes: '0', tp: 8, prompt: 100}\n"
                     "  decode: {placement: '8-11', tp: 2, context: 4096}\n"));
  const auto transfers = workloads::kv_transfers(s.serving);
  ASSERT_EQ(transfers.size(), 8u);
  for (const auto& t : transfers) {
    EXPECT_EQ(t.to, 8 + t.from / 4);
    EXPECT_EQ(t.bytes.count(), 100LL * 80 * 2 * 128 * 2);
  }
}

// CloudMatrix384: inside the supernode the UB plane (392 GB/s per NPU) carries a request's cache
// far faster than the RDMA plane (400 Gb/s per NPU), which kv_transfer_plane: scale-out selects.
// DeepSeek-V3's MLA cache is (512 + 64) x 2 bytes per token and layer in BF16, 61 layers.
TEST(ServeKvTransfer, ThePlaneIsAParameter) {
  const std::string yaml =
      "topology: cloudmatrix384\nmodel: deepseek-v3\ncompute: {device: ascend-910c}\n"
      "serving:\n  precision: bf16\n"
      "  prefill: {placement: '0', prompt: 4096}\n"
      "  decode: {placement: '8', context: 4096}\n";
  const ServingScenario ub = load(yaml);
  const ServingScenario rdma = load(yaml, {"serving.kv_transfer_plane=scale-out"});
  const auto up = simulate_kv_transfer(ub);
  const auto out = simulate_kv_transfer(rdma);
  ASSERT_TRUE(up && out);
  EXPECT_EQ(up->bytes.count(), 4096LL * 61 * 576 * 2);
  EXPECT_EQ(out->bytes, up->bytes);
  EXPECT_GT(out->time.seconds(), 5 * up->time.seconds());
  // Over 400 Gb/s at most: at least bytes / 50 GB/s.
  EXPECT_GT(out->time.seconds(), static_cast<double>(out->bytes.count()) / 50e9);
}

// A direct network without NICs (UB-Mesh's rack: 64 NPUs in a 2D full mesh) has no scale-out
// plane: asking for it is an input error naming the key, before anything runs.
TEST(ServeKvTransfer, ScaleOutNeedsNics) {
  const std::string yaml =
      "topology: ub-mesh-rack\nmodel: llama3-70b\ncompute: {device: h100}\nserving:\n"
      "  kv_transfer_plane: scale-out\n"
      "  prefill: {placement: '0-7', tp: 8, prompt: 64}\n"
      "  decode: {placement: '8-15', tp: 8, context: 64}\n";
  try {
    load(yaml);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("serving.kv_transfer_plane"), std::string::npos) << what;
    EXPECT_NE(what.find("has no NIC"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(load(yaml, {"serving.kv_transfer_plane=scale-up"}));
}

struct BadPlacement {
  std::string name;
  std::string pools;
  std::vector<std::string> gist;
};

class BadPlacementTest : public ::testing::TestWithParam<BadPlacement> {};

TEST_P(BadPlacementTest, ExitsWithTwoAndNamesTheKey) {
  const BadPlacement& c = GetParam();
  const auto file = std::filesystem::temp_directory_path() / ("stepsim_bad_" + c.name + ".yaml");
  {
    std::ofstream f(file);
    f << two_nodes(c.pools);
  }
  std::ostringstream out, err;
  EXPECT_EQ(cli::run({"serve", file.string()}, out, err), 2) << err.str();
  for (const auto& part : c.gist)
    EXPECT_NE(err.str().find(part), std::string::npos) << part << " in:\n" << err.str();
  std::filesystem::remove(file);
}

std::vector<BadPlacement> bad_placements() {
  const std::string decode = "  decode: {tp: 8, context: 4096}\n";
  return {
      {"overlap",
       "  prefill: {placement: '0-7', tp: 8, prompt: 64}\n"
       "  decode: {placement: '4-11', tp: 8, context: 64}\n",
       {"serving.decode.placement", "accelerator 4", "serving.prefill"}},
      {"beyond",
       "  prefill: {placement: '8-16', tp: 1, prompt: 64}\n" + decode,
       {"serving.prefill.placement", "accelerator 16", "has 16"}},
      {"node_beyond",
       "  prefill: {nodes: '2', tp: 8, prompt: 64}\n" + decode,
       {"serving.prefill.nodes", "node 2"}},
      {"not_multiple_of_tp",
       "  prefill: {placement: '0-5', tp: 4, prompt: 64}\n" + decode,
       {"serving.prefill", "tp 4", "6 accelerators"}},
      {"twice",
       "  prefill: {placement: '0-3,3', tp: 1, prompt: 64}\n" + decode,
       {"serving.prefill.placement", "accelerator 3", "twice"}},
      {"both_keys",
       "  prefill: {placement: '0-7', nodes: '0', tp: 8, prompt: 64}\n" + decode,
       {"serving.prefill.nodes", "not both"}},
      {"count_mismatch",
       "  prefill: {accelerators: 4, placement: '0-7', tp: 4, prompt: 64}\n" + decode,
       {"serving.prefill.accelerators", "names 8"}},
      {"bad_range",
       "  prefill: {placement: '7-3', tp: 1, prompt: 64}\n" + decode,
       {"serving.prefill.placement", "7-3"}},
      {"nothing_left",
       "  prefill: {accelerators: 16, tp: 8, prompt: 64}\n" + decode,
       {"serving.decode", "0 of the topology's 16"}},
      {"plane", "  kv_transfer_plane: nvlink\n" + decode, {"serving.kv_transfer_plane", "nvlink"}},
  };
}

INSTANTIATE_TEST_SUITE_P(Serving, BadPlacementTest, ::testing::ValuesIn(bad_placements()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace stepsim
