// The request mix (serving.requests, docs/serving.md "Request mix"): the decode batch that keeps
// up by Little's law, B >= rate x output x TPOT(B) / (replicas x share), found by bisection; the
// overloaded pool and its sustainable rate; the prefill pool's utilisation, rate x pass /
// (batch x replicas).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.hpp"
#include "sim/run/serve.hpp"
#include "sim/scenario/serving_scenario.hpp"

namespace stepsim {
namespace {

using workloads::ServingPhase;

const std::string kExample =
    std::string(STEPSIM_SOURCE_DIR) + "/examples/llama3-70b-decode-h100.yaml";

// 10 ms + 0.1 ms per sequence.
Time linear_tpot(std::int64_t batch) {
  return Time::us(10'000) + Time::us(100) * batch;
}

void expect_load(const DecodeLoad& load, bool overloaded, std::int64_t batch, double in_flight) {
  EXPECT_EQ(load.overloaded, overloaded);
  EXPECT_EQ(load.batch, batch);
  EXPECT_NEAR(load.in_flight, in_flight, 1e-9);
}

// A fixed TPOT T: the sequences in flight are rate x output x T / replicas whatever the batch,
// and the batch is the smallest integer at least that: 4/s x 512 x 25 ms / 2 = 25.6 -> 26.
TEST(RequestMix, FixedTpotGivesTheBatchOfLittlesLaw) {
  const Time tpot = Time::ms(25);
  const DecodeLoad load =
      size_decode_batch(4.0, 512, 2, 0.0, 1000, [&](std::int64_t) { return tpot; });
  expect_load(load, false, 26, 25.6);
  EXPECT_EQ(load.tpot, tpot);
  // The largest batch, 1000, at 25 ms: 1000 x 2 / (512 x 25 ms) = 156.25 requests per second.
  EXPECT_DOUBLE_EQ(load.sustainable_rate_per_s, 156.25);
  // Bisection, not a walk over the batches: log2(1000) + 2 evaluations.
  EXPECT_LE(load.simulated, 12);
}

// TPOT(B) = 10 ms + 0.1 ms x B with rate x output / replicas = 1000 sequences per second of TPOT:
// the fixed point of B = 10 + 0.1 B is 11.11, so 12 keeps up and 11 does not. A colocated
// prefill of 0.3 s per request takes 0.6 of the time at 2/s and leaves decode a share of 0.4:
// B = 25 + 0.25 B, 33.33, so 34.
TEST(RequestMix, LinearTpotGivesTheFixedPoint) {
  expect_load(size_decode_batch(2.0, 500, 1, 0.0, 4096, linear_tpot), false, 12, 11.2);
  const DecodeLoad shared = size_decode_batch(2.0, 500, 1, 0.3, 4096, linear_tpot);
  EXPECT_NEAR(shared.share, 0.4, 1e-12);
  expect_load(shared, false, 34, 33.5);
  // A light load: batch 1 keeps up (0.1/s x 500 x 10.1 ms = 0.505 sequences in flight).
  expect_load(size_decode_batch(0.1, 500, 1, 0.0, 4096, linear_tpot), false, 1, 0.505);
}

// When the largest batch that fits cannot keep up, the pool is overloaded: a result, with the
// batch at that largest one and the rate it sustains there.
TEST(RequestMix, OverloadedWhenTheLargestBatchCannotKeepUp) {
  // 20/s x 500 x TPOT(64) = 10,000 x 16.4 ms = 164 sequences in flight > 64.
  const DecodeLoad load = size_decode_batch(20.0, 500, 1, 0.0, 64, linear_tpot);
  expect_load(load, true, 64, 164.0);
  EXPECT_NEAR(load.sustainable_rate_per_s, 64.0 / (500 * 0.0164), 1e-9);
  // At that rate the largest batch just keeps up.
  const DecodeLoad at =
      size_decode_batch(load.sustainable_rate_per_s * (1 - 1e-12), 500, 1, 0.0, 64, linear_tpot);
  expect_load(at, false, 64, 64.0);
  // The weights alone do not fit: overloaded, nothing sustained.
  const DecodeLoad none = size_decode_batch(1.0, 500, 1, 0.0, 0, linear_tpot);
  EXPECT_TRUE(none.overloaded);
  EXPECT_EQ(none.sustainable_rate_per_s, 0.0);
}

// The example's pools apart on two DGX H100 nodes with 128-token prompts and 256-token outputs
// at 3 requests per second: the decode context is the average over a request's decode (128 +
// 256 / 2 = 256); the batch keeps up on simulated steps and the one below it does not; the
// prefill's utilisation is rate x pass / (batch x replicas).
const std::vector<std::string> kApartMix = {"topology=dgx-h100-superpod:nodes=2",
                                            "serving.prefill.nodes=0",
                                            "serving.decode.nodes=1",
                                            "serving.prefill.prompt=128",
                                            "serving.decode.context=256",
                                            "serving.requests.input_tokens=128",
                                            "serving.requests.output_tokens=256",
                                            "serving.requests.rate=3/s"};

TEST(RequestMix, SimulatedBatchKeepsUpAndTheOneBelowDoesNot) {
  // The pools without their lengths: the prompt is the requests' input, the context the average.
  std::vector<std::string> overrides = kApartMix;
  overrides.push_back("serving.prefill={tp: 8, nodes: 0}");
  overrides.push_back("serving.decode={tp: 8, nodes: 1}");
  const ServingScenario s = load_serving_scenario(kExample, overrides);
  EXPECT_EQ(s.serving.decode->tokens, 256);
  EXPECT_EQ(s.serving.prefill->tokens, 128);
  const ServeReport r = make_serve_report(s, std::nullopt);
  ASSERT_TRUE(r.load && r.load->prefill && r.load->decode);
  const PrefillLoad& p = *r.load->prefill;
  EXPECT_DOUBLE_EQ(p.utilisation, 3.0 * r.prefill->time.seconds() / 1.0);
  EXPECT_EQ(p.ttft_at_least, r.prefill->time + r.kv_transfer->time);
  const DecodeLoad& d = *r.load->decode;
  EXPECT_FALSE(d.overloaded);
  EXPECT_EQ(d.share, 1.0);
  ASSERT_GT(d.batch, 1);
  auto in_flight = [](Time tpot) { return 3.0 * 256 * tpot.seconds() / 1.0; };
  const Time at = simulate_pass(s, ServingPhase::kDecode, d.batch).time;
  const Time below = simulate_pass(s, ServingPhase::kDecode, d.batch - 1).time;
  EXPECT_EQ(at, d.tpot);
  EXPECT_LE(in_flight(at), static_cast<double>(d.batch));
  EXPECT_GT(in_flight(below), static_cast<double>(d.batch - 1));
  EXPECT_LE(d.simulated, 16);
}

// Colocated pools (the example as it is) take turns: decode has the time prefill leaves.
TEST(RequestMix, ColocatedDecodeHasTheTimePrefillLeaves) {
  const ServingScenario s = load_serving_scenario(
      kExample, {"serving.prefill.prompt=128", "serving.requests.input_tokens=128",
                 "serving.requests.output_tokens=256", "serving.requests.rate=2/s"});
  const ServeReport r = make_serve_report(s, std::nullopt);
  ASSERT_TRUE(r.load && r.load->prefill && r.load->decode);
  EXPECT_GT(r.load->prefill->utilisation, 0.0);
  EXPECT_DOUBLE_EQ(r.load->decode->share, 1.0 - r.load->prefill->utilisation);
  EXPECT_EQ(r.load->prefill->kv_transfer, Time::zero());
  // The sustainable rate fills the largest batch with the share that rate leaves: at it,
  // max_batch sequences are in flight.
  const DecodeLoad& d = *r.load->decode;
  const double p = r.prefill->time.seconds();  // one prompt per pass, one replica
  const double rate = d.sustainable_rate_per_s;
  EXPECT_NEAR(rate * 256 * d.max_batch_tpot.seconds() / (1.0 - rate * p),
              static_cast<double>(d.max_batch), 1e-6 * static_cast<double>(d.max_batch));
}

// A rate beyond both pools: each says OVERLOADED with the rate it sustains; the command still
// succeeds (a result, not an error) and the JSON and HTML reports carry the figures.
TEST(RequestMix, OverloadedPoolsAreAResult) {
  const auto report = std::filesystem::temp_directory_path() / "issue20-mix-overloaded.json";
  const auto html = std::filesystem::temp_directory_path() / "issue20-mix-overloaded.html";
  std::vector<std::string> args{"serve",         kExample, "--report",
                                report.string(), "--html", html.string()};
  for (const std::string& o : kApartMix) {
    args.push_back("-o");
    args.push_back(o == "serving.requests.rate=3/s" ? "serving.requests.rate=60000/min" : o);
  }
  std::ostringstream out, err;
  ASSERT_EQ(cli::run(args, out, err), 0) << err.str();
  for (const char* part :
       {"Request mix: 128 input and 256 output tokens per request, 60000/min",
        "prefill utilisation", ": OVERLOADED (sustains",
        "TTFT at this load                 unbounded", "decode batch per replica",
        "OVERLOADED: at the largest batch that fits", "decode sustains up to"}) {
    EXPECT_NE(out.str().find(part), std::string::npos) << part << "\n" << out.str();
  }
  std::ifstream in(report);
  const auto j = nlohmann::json::parse(in);
  const auto& requests = j.at("requests");
  EXPECT_DOUBLE_EQ(requests.at("rate_per_s").get<double>(), 1000.0);
  EXPECT_TRUE(requests.at("prefill").at("overloaded").get<bool>());
  const auto& decode = requests.at("decode");
  EXPECT_TRUE(decode.at("overloaded").get<bool>());
  EXPECT_EQ(decode.at("batch_per_replica").get<std::int64_t>(),
            decode.at("max_batch").get<std::int64_t>());
  // The sustainable rate is the largest batch over the output tokens' time at its TPOT.
  EXPECT_NEAR(
      decode.at("sustainable_rate_per_s").get<double>(),
      decode.at("max_batch").get<double>() / (256 * decode.at("max_batch_tpot_s").get<double>()),
      1e-9);
  EXPECT_LT(decode.at("sustainable_rate_per_s").get<double>(), 1000.0);
  std::filesystem::remove(report);
  // The HTML report's summary has the same lines.
  std::ifstream page_in(html);
  std::stringstream page;
  page << page_in.rdbuf();
  for (const char* part : {"request mix", "prefill utilisation", "decode sustains up to"})
    EXPECT_NE(page.str().find(part), std::string::npos) << part;
  std::filesystem::remove(html);
}

}  // namespace
}  // namespace stepsim
