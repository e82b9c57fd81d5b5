// What `stepsim serve` writes beside its summary (docs/serving.md): the Chrome trace has every
// rank of both pools, named with the accelerator it runs on, and ends where the report's passes
// end; the HTML report shows both passes; `stepsim compare` of serving scenarios gives the figures
// `serve` gives. Speculative decoding with MTP (serving.mtp): the step runs 1 + depth tokens per
// sequence through the model and one more block per depth, and yields 1 + a + ... + a^depth
// tokens per sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.hpp"
#include "sim/common/input_error.hpp"
#include "sim/run/serve.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "workloads/operation.hpp"
#include "workloads/step_generator.hpp"

namespace stepsim {
namespace {

using json = nlohmann::json;
using workloads::ServingPhase;

const std::string kExample =
    std::string(STEPSIM_SOURCE_DIR) + "/examples/llama3-70b-decode-h100.yaml";

// The example's pools apart on two DGX H100 nodes: prefill on node 0, decode on node 1, a short
// prompt to keep the test quick.
const std::vector<std::string> kApart = {"-o", "topology=dgx-h100-superpod:nodes=2",
                                         "-o", "serving.prefill.nodes=0",
                                         "-o", "serving.decode.nodes=1",
                                         "-o", "serving.prefill.prompt=128"};

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("issue20-serve3-" + name);
}

std::vector<std::string> serve_args(std::vector<std::string> extra) {
  std::vector<std::string> args{"serve", kExample};
  args.insert(args.end(), kApart.begin(), kApart.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The trace holds one process per rank of each pool, "prefill: rank r (node0.gpuR) ..." and
// "decode: rank r (node1.gpuR) ...", each with operations, and each pass's last operation ends at
// the pass's time in the JSON report (to the nanosecond the trace keeps).
TEST(ServeTrace, HasEveryRankOfBothPoolsAndEndsWithEachPass) {
  const auto trace = temp_path("trace.json");
  const auto report = temp_path("trace-report.json");
  std::ostringstream out, err;
  ASSERT_EQ(
      cli::run(serve_args({"--trace", trace.string(), "--report", report.string()}), out, err), 0)
      << err.str();
  const json events = json::parse(read_text(trace)).at("traceEvents");
  const json figures = json::parse(read_text(report));
  std::map<int, std::string> names;
  std::map<int, double> last_end_us;
  std::map<int, int> operations;
  for (const json& e : events) {
    const int pid = e.at("pid").get<int>();
    if (e.at("ph") == "M" && e.at("name") == "process_name") {
      names[pid] = e.at("args").at("name").get<std::string>();
    } else if (e.at("ph") == "X") {
      ++operations[pid];
      last_end_us[pid] =
          std::max(last_end_us[pid], e.at("ts").get<double>() + e.at("dur").get<double>());
    }
  }
  double prefill_end = 0;
  double decode_end = 0;
  for (int r = 0; r < 8; ++r) {
    for (const auto& [prefix, node, first_pid] :
         {std::tuple{"prefill: ", "node0", 0}, std::tuple{"decode: ", "node1", 9}}) {
      const int pid = first_pid + r;
      ASSERT_TRUE(names.contains(pid)) << "process " << pid;
      const std::string expected =
          std::string(prefix) + "rank " + std::to_string(r) + " (" + node + ".gpu";
      EXPECT_EQ(names[pid].rfind(expected, 0), 0u) << names[pid] << " should start " << expected;
      EXPECT_GT(operations[pid], 0) << names[pid];
    }
    prefill_end = std::max(prefill_end, last_end_us[r]);
    decode_end = std::max(decode_end, last_end_us[9 + r]);
  }
  EXPECT_EQ(names[8], "prefill: busiest links");
  EXPECT_EQ(names[17], "decode: busiest links");
  EXPECT_EQ(names.size(), 18u);
  EXPECT_NEAR(prefill_end, figures.at("prefill").at("time_s").get<double>() * 1e6, 1e-3);
  EXPECT_NEAR(decode_end, figures.at("decode").at("time_s").get<double>() * 1e6, 1e-3);
  // The trace changes nothing: the same figures as without it.
  std::ostringstream plain, plain_err;
  ASSERT_EQ(cli::run(serve_args({}), plain, plain_err), 0) << plain_err.str();
  EXPECT_EQ(plain.str(), out.str());
  std::filesystem::remove(trace);
  std::filesystem::remove(report);
}

TEST(ServeTrace, BadTraceRanksExitTwo) {
  std::ostringstream out, err;
  EXPECT_EQ(
      cli::run(serve_args({"--trace", temp_path("bad.json").string(), "--trace-ranks", "0-99"}),
               out, err),
      2);
  EXPECT_NE(err.str().find("--trace-ranks"), std::string::npos) << err.str();
  EXPECT_FALSE(std::filesystem::exists(temp_path("bad.json")));
}

// The HTML report has both passes' timelines and links, the memory chart and the figures the
// summary prints.
TEST(ServeHtml, ShowsBothPassesAndTheSummaryFigures) {
  const auto html = temp_path("report.html");
  std::ostringstream out, err;
  ASSERT_EQ(cli::run(serve_args({"--html", html.string()}), out, err), 0) << err.str();
  const std::string page = read_text(html);
  for (const char* part : {"prefill-timeline", "decode-timeline", "prefill-links", "decode-links",
                           "data-chart=\"memory\"", "time to first token (TTFT)",
                           "time per output token (TPOT)", "KV transfer to decode"}) {
    EXPECT_NE(page.find(part), std::string::npos) << part;
  }
  // The TPOT the summary prints is on the page.
  const std::string& summary = out.str();
  const auto at = summary.find("time per output token (TPOT)");
  ASSERT_NE(at, std::string::npos);
  const auto line_end = summary.find('\n', at);
  const std::string tpot = summary.substr(at + 34, line_end - at - 34);  // "11.783 ms"
  EXPECT_NE(page.find(tpot), std::string::npos) << tpot;
  std::filesystem::remove(html);
}

// compare over serving scenarios: each variant's TTFT and TPOT are those `serve` reports, in the
// table and the JSON; a training scenario beside a serving one exits 2.
TEST(ServeCompare, GivesTheFiguresServeGives) {
  const auto report = temp_path("compare.json");
  std::vector<std::string> args{"compare", kExample};
  args.insert(args.end(), kApart.begin(), kApart.end());
  for (const char* v : {"--variant", "serving.decode.batch=1", "--variant",
                        "serving.decode.batch=16 serving.decode.context=1024"})
    args.emplace_back(v);
  args.insert(args.end(), {"--json", report.string()});
  std::ostringstream out, err;
  ASSERT_EQ(cli::run(args, out, err), 0) << err.str();
  const json rows = json::parse(read_text(report));
  ASSERT_EQ(rows.size(), 2u);
  std::vector<std::string> overrides;
  for (std::size_t i = 1; i < kApart.size(); i += 2)
    overrides.push_back(kApart[i]);
  for (const auto& [row, extra] :
       {std::pair{0, std::vector<std::string>{"serving.decode.batch=1"}},
        std::pair{1, std::vector<std::string>{"serving.decode.batch=16",
                                              "serving.decode.context=1024"}}}) {
    std::vector<std::string> o = overrides;
    o.insert(o.end(), extra.begin(), extra.end());
    const ServeReport expected = make_serve_report(load_serving_scenario(kExample, o), {});
    const json& got = rows[static_cast<std::size_t>(row)].at("report");
    EXPECT_EQ(got.at("decode").at("time_ps").get<std::int64_t>(),
              expected.decode->time.picoseconds());
    EXPECT_DOUBLE_EQ(got.at("ttft_s").get<double>(), expected.ttft.seconds());
    EXPECT_NE(out.str().find(format_time(expected.decode->time)), std::string::npos) << out.str();
  }
  // Batch 16 at a shorter context: a slower step, more tokens per second.
  EXPECT_GT(rows[1]["report"]["decode"]["time_s"].get<double>(),
            rows[0]["report"]["decode"]["time_s"].get<double>());
  EXPECT_GT(rows[1]["report"]["decode"]["tokens_per_s_per_accelerator"].get<double>(),
            rows[0]["report"]["decode"]["tokens_per_s_per_accelerator"].get<double>());
  std::filesystem::remove(report);

  std::ostringstream mixed, mixed_err;
  EXPECT_EQ(
      cli::run({"compare", kExample, std::string(STEPSIM_SOURCE_DIR) + "/examples/quickstart.yaml"},
               mixed, mixed_err),
      2);
  EXPECT_NE(mixed_err.str().find("serving scenario"), std::string::npos) << mixed_err.str();
}

// --- MTP ---

const char* const kDense = R"(
name: mtp-dense
topology: dgx-h100-superpod:nodes=1
model: {preset: llama3-70b, layers: 8}
compute: {device: h100}
serving:
  decode: {tp: 8, batch: 4, context: 4096}
)";

ServingScenario from_text(const char* text, const std::vector<std::string>& overrides) {
  return load_serving_scenario(config::Document::parse(text, "mtp.yaml"), "mtp", overrides);
}

// Tokens per step: 1 + a for depth 1, 1 + a + a^2 for depth 2; the TPOT is the step over them and
// the tokens/s per accelerator batch x tokens per step / (step x tp).
TEST(ServeMtp, TokensPerStepIsOnePlusTheAcceptedDrafts) {
  for (const auto& [depth, acceptance, tokens] :
       {std::tuple{1, 0.85, 1.85}, std::tuple{2, 0.5, 1.75}, std::tuple{1, 0.0, 1.0}}) {
    const ServingScenario s =
        from_text(kDense, {"serving.mtp.depth=" + std::to_string(depth),
                           "serving.mtp.acceptance=" + std::to_string(acceptance)});
    EXPECT_DOUBLE_EQ(s.serving.mtp.tokens_per_step(), tokens);
    const PassReport p = simulate_pass(s, ServingPhase::kDecode, 4);
    EXPECT_DOUBLE_EQ(p.tokens_per_step, tokens);
    EXPECT_NEAR(p.time.seconds(), p.step.seconds() / tokens, 1e-12);
    EXPECT_NEAR(p.tokens_per_s_per_accelerator, 4 * tokens / (p.step.seconds() * 8), 1e-6);
  }
}

// A decode step with MTP depth 1 at batch B is the 8-layer model's step plus one more block, at
// 2B tokens: its program has the operations of the 9-layer model at batch 2B, with the same
// FLOPs and bytes, except that each attention core reads the KV cache of B sequences (the draft
// is scored against the cache its sequence already has). Memory: the 9-layer model's weights and
// KV cache.
TEST(ServeMtp, StepIsTheModelWithOneMoreBlockAtTwiceTheTokens) {
  const ServingScenario mtp =
      from_text(kDense, {"serving.mtp.depth=1", "serving.mtp.acceptance=0.85"});
  const ServingScenario deeper = from_text(kDense, {"model.layers=9"});
  const std::int64_t batch = 4;
  const workloads::Program a =
      workloads::serving_program(mtp.serving, ServingPhase::kDecode, batch);
  const workloads::Program b =
      workloads::serving_program(deeper.serving, ServingPhase::kDecode, 2 * batch);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  const double kv_per_sequence = 4096.0 * 512;  // 1 KV head of 128 per rank, keys and values, BF16
  int attention = 0;
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    ASSERT_EQ(a.ops[i].name, b.ops[i].name) << i;
    EXPECT_DOUBLE_EQ(a.ops[i].flops, b.ops[i].flops) << i;
    if (a.ops[i].name == workloads::OpName::kAttentionCore) {
      EXPECT_EQ(b.ops[i].bytes - a.ops[i].bytes,
                static_cast<std::int64_t>(batch * kv_per_sequence));
      ++attention;
    } else {
      EXPECT_EQ(a.ops[i].bytes, b.ops[i].bytes) << i;
    }
  }
  EXPECT_EQ(attention, 9);
  const auto m_mtp = workloads::serving_memory(mtp.serving, ServingPhase::kDecode, batch);
  const auto m_deeper = workloads::serving_memory(deeper.serving, ServingPhase::kDecode, batch);
  EXPECT_EQ(m_mtp.weights, m_deeper.weights);
  EXPECT_EQ(m_mtp.kv_cache, m_deeper.kv_cache);
}

TEST(ServeMtp, NeedsADecodePool) {
  const std::string text = R"(
topology: dgx-h100-superpod:nodes=1
model: llama3-70b
compute: {device: h100}
serving:
  mtp: {acceptance: 0.8}
  prefill: {tp: 8, prompt: 128}
)";
  try {
    load_serving_scenario(config::Document::parse(text, "mtp.yaml"), "mtp", {});
    FAIL() << "a prefill-only scenario with MTP loaded";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("mtp.yaml:6"), std::string::npos) << what;
    EXPECT_NE(what.find("serving.mtp"), std::string::npos) << what;
    EXPECT_NE(what.find("'decode' pool"), std::string::npos) << what;
  }
}

TEST(ServeMtp, PrintsTheStepAndTheTokensPerStep) {
  std::ostringstream out, err;
  ASSERT_EQ(cli::run({"serve", kExample, "-o", "serving.mtp.acceptance=0.85"}, out, err), 0)
      << err.str();
  EXPECT_NE(out.str().find("Speculative decoding: MTP depth 1, acceptance 0.85"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("(1.850 tokens per sequence on average)"), std::string::npos)
      << out.str();
}

}  // namespace
}  // namespace stepsim
