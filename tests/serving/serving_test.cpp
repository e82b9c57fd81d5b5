// `stepsim serve` (docs/serving.md): a decode step of a dense model at batch 1 is memory-bound
// and sits at its roofline (weights and KV cache over the HBM bandwidth, plus the tensor-parallel
// collectives timed by the same collective model); the TPOT search brackets its answer; bad
// serving sections exit 2 with a message naming the key and the value.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.hpp"
#include "sim/executor/executor.hpp"
#include "sim/run/serve.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "tests/serving/collectives_alone.hpp"
#include "workloads/model.hpp"
#include "workloads/op_graph_builder.hpp"
#include "workloads/workload.hpp"

namespace stepsim {
namespace {

using workloads::ServingPhase;

const std::string kExample =
    std::string(STEPSIM_SOURCE_DIR) + "/examples/llama3-70b-decode-h100.yaml";

ServingScenario load_example(const std::vector<std::string>& overrides = {}) {
  return load_serving_scenario(kExample, overrides);
}

Time collectives_alone(const ServingScenario& s, CollectiveKind kind, workloads::Communicator group,
                       workloads::ParallelDim dim, int count, std::int64_t bytes) {
  return test::collectives_alone(s, workloads::OpName::kTpAllReduce, kind, group, dim, count,
                                 bytes);
}

Time tp_all_reduces(const ServingScenario& s, int count, std::int64_t bytes) {
  return collectives_alone(s, CollectiveKind::kAllReduce, workloads::Communicator::kTensor,
                           workloads::ParallelDim::kTp, count, bytes);
}

// The decode program is the training forward of one micro-batch without the loss: per layer 7
// kernels (2 norms, QKV, attention, output, MLP up and down) and 2 AllReduces, plus the embedding
// and its AllReduce, the final norm and the logits: 563 kernels and 161 AllReduces for 80 layers.
// Each attention core reads B x 4096 tokens x 512 bytes of KV cache (1 KV head of 128, keys and
// values, BF16) beside its Q, K, V and output: B x (8192 + 1024 + 2 x 8192) / 8 x 2 bytes.
TEST(ServeProgram, DecodeIsTheForwardWithKvCacheReads) {
  const ServingScenario s = load_example();
  const std::int64_t batch = 4;
  const auto spec = workloads::serving_workload(s.serving, ServingPhase::kDecode, batch);
  const workloads::Program program = workloads::generate_forward_program(
      spec, workloads::serving_forward_pass(s.serving, ServingPhase::kDecode, batch));
  int kernels = 0;
  int all_reduces = 0;
  int attention = 0;
  for (const workloads::Op& op : program.ops) {
    EXPECT_NE(op.name, workloads::OpName::kLoss);
    EXPECT_EQ(op.phase, workloads::Phase::kForward);
    if (op.kind == workloads::OpKind::kCompute) ++kernels;
    if (op.kind == workloads::OpKind::kCollective) {
      EXPECT_EQ(op.collective, CollectiveKind::kAllReduce);
      EXPECT_EQ(op.bytes, batch * 8192 * 2);
      ++all_reduces;
    }
    if (op.name == workloads::OpName::kAttentionCore) {
      EXPECT_EQ(op.bytes, batch * (8192 + 1024 + 2 * 8192) / 8 * 2 + batch * 4096 * 512);
      ++attention;
    }
  }
  EXPECT_EQ(kernels, 563);
  EXPECT_EQ(all_reduces, 161);
  EXPECT_EQ(attention, 80);
}

// A prefill pass computes the logits of the last token of each prompt only: batch x 2 x hidden x
// vocabulary / tp FLOPs, not x prompt.
TEST(ServeProgram, PrefillProjectsOnlyTheLastToken) {
  const ServingScenario s = load_example();
  const auto spec = workloads::serving_workload(s.serving, ServingPhase::kPrefill, 2);
  const workloads::Program program = workloads::generate_forward_program(
      spec, workloads::serving_forward_pass(s.serving, ServingPhase::kPrefill, 2));
  int logits = 0;
  for (const workloads::Op& op : program.ops) {
    if (op.name != workloads::OpName::kLogits) continue;
    EXPECT_DOUBLE_EQ(op.flops, 2.0 * 2 * 8192 * 128256 / 8);
    ++logits;
  }
  EXPECT_EQ(logits, 1);
}

// Llama 3 70B, TP8 on one DGX H100, batch 1, context 4096, BF16, no launch overhead: the step
// reads each rank's weights (all but the input embedding, of which one row is looked up) and
// its KV cache once, at the H100's 3.35 TB/s x the serving HBM efficiency, and runs 2 AllReduces
// of one token's hidden state (8192 x 2 bytes) per layer plus one after the vocabulary-parallel
// embedding. The simulated step must be within 5% of that sum.
TEST(ServeDecode, BatchOneSitsAtTheMemoryRoofline) {
  const ServingScenario s = load_example({"compute.launch_overhead=0us"});
  const PassReport decode = simulate_pass(s, ServingPhase::kDecode, 1);
  const workloads::ModelSpec& m = s.serving.model;
  const workloads::ParameterCount c = workloads::count_parameters(m);
  const double tp = 8;
  const double replicated = static_cast<double>(m.layers) * c.norms + c.final_norm;
  const double weight_bytes = ((c.total - c.embedding - replicated) / tp + replicated) * 2.0;
  // Keys and values of 1 KV head per rank (8 heads / tp 8), head size 128, BF16, 80 layers.
  const double kv_bytes = 4096.0 * 80 * 2 * 128 * 2;
  const double bandwidth = 3.35e12 * workloads::kDefaultServingHbmEfficiency;
  const Time collectives = tp_all_reduces(s, 2 * 80 + 1, 8192 * 2);
  const double roofline = (weight_bytes + kv_bytes) / bandwidth + collectives.seconds();
  EXPECT_NEAR(decode.time.seconds(), roofline, 0.05 * roofline)
      << "weights " << weight_bytes << " B, KV " << kv_bytes << " B, collectives "
      << format_time(collectives);
  // Weights are about 17.6 GB per rank: the step is at least their read time.
  EXPECT_GT(weight_bytes, 17e9);
  EXPECT_LT(weight_bytes, 18e9);
  // The collectives are what rank 0 waits for besides its kernels.
  const auto tp_dim = static_cast<std::size_t>(workloads::ParallelDim::kTp);
  EXPECT_NEAR(decode.breakdown.exposed[tp_dim].seconds(), collectives.seconds(),
              0.05 * collectives.seconds());
}

// Memory-bound by the weights: a second sequence adds only its KV cache and activations (0.17 GB
// against 17.6 GB of weights), so the step grows by less than 3%.
TEST(ServeDecode, SecondSequenceCostsOnlyItsCache) {
  const ServingScenario s = load_example({"compute.launch_overhead=0us"});
  const Time one = simulate_pass(s, ServingPhase::kDecode, 1).time;
  const Time two = simulate_pass(s, ServingPhase::kDecode, 2).time;
  EXPECT_GT(two, one);
  EXPECT_LT(two.seconds(), 1.03 * one.seconds());
}

// The KV cache per accelerator is batch x context x layers x 2 x (KV heads / tp) x head size x
// 2 bytes, and the largest batch that fits is the largest whose total stays within 80 GB.
TEST(ServeMemory, KvCacheAndLargestBatch) {
  const ServingScenario s = load_example();
  const auto m = workloads::serving_memory(s.serving, ServingPhase::kDecode, 10);
  EXPECT_EQ(m.kv_cache.count(), 10LL * 4096 * 80 * 2 * 1 * 128 * 2);
  EXPECT_EQ(m.capacity.count(), 80'000'000'000LL);
  const auto at_max = workloads::serving_memory(s.serving, ServingPhase::kDecode, m.max_batch);
  const auto past = workloads::serving_memory(s.serving, ServingPhase::kDecode, m.max_batch + 1);
  EXPECT_LE(at_max.total(), at_max.capacity);
  EXPECT_GT(past.total(), past.capacity);
  EXPECT_GT(m.max_batch, 300);  // about 62 GB free over about 0.17 GB per sequence
  EXPECT_LT(m.max_batch, 400);
}

// The search returns a batch whose TPOT meets the limit and whose next batch does not; both are
// simulated again independently and give the same times.
TEST(ServeSearch, LargestBatchMeetsTheLimitAndTheNextDoesNot) {
  const ServingScenario s = load_example();
  const Time limit = simulate_pass(s, ServingPhase::kDecode, 1).time * 2;
  const TpotSearch search = search_tpot(s, limit);
  ASSERT_TRUE(search.best.has_value());
  ASSERT_TRUE(search.next.has_value());
  EXPECT_GT(search.best->batch, 1);
  EXPECT_EQ(search.next->batch, search.best->batch + 1);
  const Time best = simulate_pass(s, ServingPhase::kDecode, search.best->batch).time;
  const Time next = simulate_pass(s, ServingPhase::kDecode, search.next->batch).time;
  EXPECT_EQ(best, search.best->time);
  EXPECT_EQ(next, search.next->time);
  EXPECT_LE(best, limit);
  EXPECT_GT(next, limit);
  // Bisection: about log2(largest batch that fits) + 2 steps, not one per batch.
  EXPECT_LE(search.simulated, 12);
}

// Under a loose limit memory decides: the answer is the largest batch that fits, with no next.
TEST(ServeSearch, LooseLimitStopsAtTheLargestBatchThatFits) {
  const ServingScenario s = load_example();
  const TpotSearch search = search_tpot(s, Time::ms(1000));
  ASSERT_TRUE(search.best.has_value());
  EXPECT_FALSE(search.next.has_value());
  EXPECT_EQ(search.best->batch,
            workloads::serving_memory(s.serving, ServingPhase::kDecode, 1).max_batch);
  EXPECT_EQ(search.simulated, 2);
}

TEST(ServeSearch, LimitBelowBatchOneFindsNone) {
  const ServingScenario s = load_example();
  const TpotSearch search = search_tpot(s, Time::us(100));
  EXPECT_FALSE(search.best.has_value());
  ASSERT_TRUE(search.next.has_value());
  EXPECT_EQ(search.next->batch, 1);
}

TEST(ServeCommand, PrintsTtftTpotAndWritesTheReport) {
  const auto report = std::filesystem::temp_directory_path() / "stepsim_serve_test_report.json";
  std::ostringstream out, err;
  const int code =
      cli::run({"serve", kExample, "--report", report.string(), "--tpot", "50ms"}, out, err);
  ASSERT_EQ(code, 0) << err.str();
  for (const char* part : {"time to first token (TTFT)", "time per output token (TPOT)",
                           "largest batch that fits", "TPOT limit 50"}) {
    EXPECT_NE(out.str().find(part), std::string::npos) << part << "\n" << out.str();
  }
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"tpot_s\""), std::string::npos);
  EXPECT_NE(text.str().find("\"ttft_s\""), std::string::npos);
  std::filesystem::remove(report);
}

// DeepSeek-V3's shapes (8 layers: 3 dense, 5 MoE) decoding with 32-way expert parallelism over
// 4 DGX H100 nodes (400 Gb/s per GPU between nodes), FP8: at batch B each rank dispatches
// B tokens x top-8 x 7168 bytes, B x 1.8 KB per peer, and combines as much back. With a time
// T = L + S/B, doubling the bytes S changes T by the share 1 - L/T: the all-to-alls are
// latency-bound (L/T > 1/2) when that change is less than the latency share L/T.
const char* const kMoeDecode = R"(
name: moe-decode
topology: cluster:nodes=4
model: {preset: deepseek-v3, layers: 8}
compute: {device: h100}
serving:
  precision: fp8
  decode: {tp: 1, ep: 32, batch: 1, context: 4096}
)";

// The relative change of the time of a decode step's dispatch all-to-all (the bytes its
// forward pass gives it at `batch`) when its bytes double.
double all_to_all_growth(const ServingScenario& s, std::int64_t batch) {
  const auto pass = workloads::serving_forward_pass(s.serving, ServingPhase::kDecode, batch);
  const std::int64_t bytes =
      pass.shape.routed_tokens * s.serving.model.hidden * pass.shape.element_bytes;
  EXPECT_EQ(bytes, batch * 8 * 7168);
  auto time = [&](std::int64_t b) {
    return collectives_alone(s, CollectiveKind::kAllToAll, workloads::Communicator::kExpert,
                             workloads::ParallelDim::kEp, 1, b);
  };
  const Time one = time(bytes);
  const Time two = time(2 * bytes);
  EXPECT_GT(one, Time::zero());
  EXPECT_GE(two, one);
  return (two - one).seconds() / one.seconds();
}

TEST(ServeDecode, ExpertAllToAllsOfKilobytesAreLatencyBound) {
  const ServingScenario s =
      load_serving_scenario(config::Document::parse(kMoeDecode, "moe-decode.yaml"), "moe", {});
  // Batch 1 -> 2: 1.8 KB -> 3.6 KB per peer.
  const double small = all_to_all_growth(s, 1);
  EXPECT_LT(small, 1.0 - small);
  // Batch 16 -> 32: 29 KB -> 57 KB per peer, 1.8 MB per rank at batch 32, 3/4 of it (24 of 32
  // peers on other nodes) over a 50 GB/s NIC, 28 us, against microseconds of latency.
  const double large = all_to_all_growth(s, 16);
  EXPECT_GT(large, 1.0 - large);
}

struct BadServing {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> gist;  // each must appear in stderr
};

class BadServingTest : public ::testing::TestWithParam<BadServing> {};

TEST_P(BadServingTest, ExitsWithTwoAndNamesTheKey) {
  const BadServing& c = GetParam();
  std::ostringstream out, err;
  EXPECT_EQ(cli::run(c.args, out, err), 2) << err.str();
  for (const auto& part : c.gist)
    EXPECT_NE(err.str().find(part), std::string::npos) << part << " in:\n" << err.str();
}

std::vector<BadServing> bad_cases() {
  auto serve = [](std::string override) {
    return std::vector<std::string>{"serve", kExample, "-o", std::move(override)};
  };
  const std::string quickstart = std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml";
  return {
      {"tp_not_dividing_heads", serve("serving.decode.tp=3"), {"serving.decode.tp", "tp 3"}},
      {"ep_on_dense", serve("serving.decode.ep=2"), {"serving.decode.ep", "dense"}},
      {"context_zero", serve("serving.decode.context=0"), {"serving.decode.context", "'0'"}},
      {"batch_text", serve("serving.decode.batch=many"), {"serving.decode.batch", "'many'"}},
      {"unknown_key", serve("serving.decode.batchsize=4"), {"batchsize"}},
      {"kv_dtype", serve("serving.kv_cache_dtype=int3"), {"serving.kv_cache_dtype", "int3"}},
      {"too_many_accelerators",
       serve("serving.prefill.accelerators=16"),
       {"serving.prefill.accelerators", "16 accelerators", "has 8"}},
      {"hbm_efficiency", serve("serving.hbm_efficiency=1.5"), {"serving.hbm_efficiency", "1.5"}},
      {"tpot_text", {"serve", kExample, "--tpot", "soon"}, {"--tpot 'soon'"}},
      {"tpot_zero", {"serve", kExample, "--tpot", "0ms"}, {"--tpot '0ms'"}},
      {"training_scenario", {"serve", quickstart}, {"stepsim run"}},
      {"serving_scenario_run", {"run", kExample}, {"serving", "stepsim serve"}},
      {"mtp_acceptance_above_one",
       serve("serving.mtp.acceptance=1.5"),
       {"serving.mtp.acceptance", "1.5"}},
      {"mtp_without_acceptance", serve("serving.mtp.depth=1"), {"serving.mtp", "acceptance"}},
      {"mtp_depth_zero",
       {"serve", kExample, "-o", "serving.mtp.depth=0", "-o", "serving.mtp.acceptance=0.8"},
       {"serving.mtp.depth", "'0'"}},
      {"mtp_unknown_key", serve("serving.mtp.accept=0.8"), {"serving.mtp", "accept"}},
      {"mtp_not_a_map", serve("serving.mtp=yes"), {"serving.mtp", "depth"}},
      {"requests_rate_without_unit",
       serve("serving.requests={input_tokens: 2048, output_tokens: 256, rate: 12}"),
       {"serving.requests.rate", "'12'", "12/s"}},
      {"requests_rate_unknown_unit",
       serve("serving.requests={input_tokens: 2048, output_tokens: 256, rate: 12/day}"),
       {"serving.requests.rate", "'12/day'"}},
      {"requests_rate_negative",
       serve("serving.requests={input_tokens: 2048, output_tokens: 256, rate: -3/s}"),
       {"serving.requests.rate", "'-3/s'"}},
      {"requests_rate_too_high",
       serve("serving.requests={input_tokens: 2048, output_tokens: 256, rate: 1e300/s}"),
       {"serving.requests.rate", "1e300/s", "at most"}},
      {"requests_output_zero",
       serve("serving.requests={input_tokens: 2048, output_tokens: 0, rate: 1/s}"),
       {"serving.requests.output_tokens", "'0'"}},
      {"requests_unknown_key",
       serve("serving.requests={input_tokens: 2048, output_tokens: 256, rate: 1/s, qps: 3}"),
       {"serving.requests", "qps"}},
      {"requests_missing_rate",
       serve("serving.requests={input_tokens: 2048, output_tokens: 256}"),
       {"serving.requests", "rate"}},
      {"requests_prompt_differs",
       serve("serving.requests={input_tokens: 1024, output_tokens: 256, rate: 1/s}"),
       {"serving.prefill.prompt", "2048", "input_tokens 1024"}},
      {"requests_not_a_map", serve("serving.requests=12/s"), {"serving.requests", "12/s"}},
      {"compare_serving_search",
       {"compare", kExample, "--search"},
       {"--search", "serving scenario"}},
  };
}

INSTANTIATE_TEST_SUITE_P(Serving, BadServingTest, ::testing::ValuesIn(bad_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace stepsim
