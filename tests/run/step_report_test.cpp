// The --report JSON (sim/run/step_report.cpp) against its documentation: every key listed in
// docs/report-schema.md is in the report with the documented type, and the report has no key the
// page does not list. Then its figures against closed forms for a small pipeline.
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "stepsim/version.hpp"
#include "tests/run/run_test_support.hpp"

namespace stepsim {
namespace {

using json = nlohmann::ordered_json;
using testing::output_path;
using testing::read_file;
using testing::run_stepsim;
using testing::source_file;

constexpr const char* kPipeline = "tests/inputs/good/pipeline.yaml";

// The tables of docs/report-schema.md: section heading -> key -> type. Rows look like
// "| `key` | type | unit | meaning |".
std::map<std::string, std::map<std::string, std::string>> documented_keys() {
  std::istringstream page(read_file(source_file("docs/report-schema.md")));
  const std::set<std::string> types{"string", "integer", "number", "boolean", "object", "array"};
  std::map<std::string, std::map<std::string, std::string>> sections;
  std::string section;
  std::string line;
  while (std::getline(page, line)) {
    if (line.starts_with("## ")) {
      section = line.substr(3);
      continue;
    }
    // (No std::regex: GCC 12's <regex> trips -Wmaybe-uninitialized in the sanitizer build.)
    if (!line.starts_with("| `")) continue;
    const auto key_end = line.find('`', 3);
    const auto type_begin = line.find("| ", key_end);
    if (key_end == std::string::npos || type_begin == std::string::npos) continue;
    const auto type_end = line.find(" |", type_begin + 2);
    const std::string type = line.substr(type_begin + 2, type_end - type_begin - 2);
    if (types.contains(type)) sections[section][line.substr(3, key_end - 3)] = type;
  }
  return sections;
}

bool has_type(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  return false;
}

// `object` has exactly the keys of `documented`, each with its type.
void expect_documented(const json& object, const std::map<std::string, std::string>& documented,
                       const std::string& where) {
  ASSERT_TRUE(object.is_object()) << where;
  ASSERT_FALSE(documented.empty()) << where << ": no table found in docs/report-schema.md";
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) {
    keys.insert(key);
    const auto doc = documented.find(key);
    if (doc == documented.end()) {
      ADD_FAILURE() << where << "." << key << " is not in docs/report-schema.md";
      continue;
    }
    EXPECT_TRUE(has_type(value, doc->second))
        << where << "." << key << " should be " << doc->second << ", is " << value.dump();
  }
  for (const auto& [key, type] : documented)
    EXPECT_TRUE(keys.contains(key)) << where << "." << key << " is documented but missing";
}

// Parsed keeping the file's key order, which the schema fixes.
json report_of(const std::string& scenario, std::vector<std::string> extra = {}) {
  const auto path = output_path("report.json");
  std::vector<std::string> args{"run", source_file(scenario), "--report", path.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_stepsim(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(read_file(path));
}

TEST(Report, HasEveryDocumentedKeyWithItsTypeAndNoOther) {
  const auto docs = documented_keys();
  const json report = report_of(kPipeline);
  expect_documented(report, docs.at("Top level"), "report");
  ASSERT_EQ(report.at("breakdown").size(), 2u);  // first and last of 2 stages
  for (const json& b : report.at("breakdown")) {
    expect_documented(b, docs.at("`breakdown[]`"), "breakdown[]");
    std::set<std::string> dims;
    for (const auto& [key, value] : b.at("exposed_communication_s").items()) {
      dims.insert(key);
      EXPECT_TRUE(value.is_number());
    }
    EXPECT_EQ(dims, (std::set<std::string>{"tp", "sp", "cp", "ep", "pp", "dp"}));
  }
  // tp 2 with sequence parallelism: the tensor-parallel traffic is counted as "sp"; pp 2; dp 2.
  std::vector<std::string> dims;
  for (const auto& [key, value] : report.at("communication").items()) {
    dims.push_back(key);
    expect_documented(value, docs.at("`communication`"), "communication." + key);
  }
  EXPECT_EQ(dims, (std::vector<std::string>{"sp", "pp", "dp"}));
  ASSERT_FALSE(report.at("busiest_links").empty());
  EXPECT_LE(report.at("busiest_links").size(), 10u);
  for (const json& l : report.at("busiest_links"))
    expect_documented(l, docs.at("`busiest_links[]`"), "busiest_links[]");
  ASSERT_EQ(report.at("memory").size(), 2u);  // one per stage
  for (const json& m : report.at("memory"))
    expect_documented(m, docs.at("`memory[]`"), "memory[]");
  const json& sim = report.at("simulation");
  EXPECT_EQ(sim.size(), 4u);
  for (const char* key : {"operations", "transfers", "events"})
    EXPECT_TRUE(sim.at(key).is_number_integer()) << key;
  EXPECT_EQ(sim.at("idle_tolerance"), 0.0) << "exact max-min unless the scenario asks";
}

TEST(Report, FiguresFollowFromTheScenario) {
  const json r = report_of(kPipeline);
  EXPECT_EQ(r.at("stepsim_version"), kVersion);
  EXPECT_EQ(r.at("scenario"), "pipeline");
  EXPECT_EQ(r.at("world_size"), 8);
  // Global batch 8 of sequences of 2,048 tokens.
  EXPECT_EQ(r.at("tokens_per_step"), 8 * 2048);
  EXPECT_EQ(r.at("samples_per_step"), 8);
  const double step = r.at("step_time_s").get<double>();
  EXPECT_DOUBLE_EQ(step, static_cast<double>(r.at("step_time_ps").get<std::int64_t>()) * 1e-12);
  EXPECT_NEAR(r.at("tokens_per_s").get<double>() * step, 16384, 1e-6);
  EXPECT_NEAR(r.at("samples_per_s").get<double>() * step, 8, 1e-9);
  // H100 SXM dense BF16 peak (NVIDIA H100 datasheet), and MFU = achieved / peak.
  EXPECT_DOUBLE_EQ(r.at("peak_tflops").get<double>(), 989);
  EXPECT_NEAR(r.at("tflops_per_accelerator").get<double>(),
              r.at("model_flops_per_step").get<double>() / step / 8 * 1e-12, 1e-9);
  EXPECT_NEAR(r.at("mfu").get<double>(), r.at("tflops_per_accelerator").get<double>() / 989, 1e-12);
  // Each breakdown adds up to the step time (executor::RankBreakdown).
  for (const json& b : r.at("breakdown")) {
    double total = b.at("compute_s").get<double>() + b.at("pipeline_bubble_s").get<double>() +
                   b.at("waiting_s").get<double>() + b.at("idle_s").get<double>();
    for (const auto& [dim, seconds] : b.at("exposed_communication_s").items())
      total += seconds.get<double>();
    EXPECT_NEAR(total, step, 1e-12 * 1000) << b.dump();
  }
  // Pipeline traffic: 32 transfers (4 pipeline pairs x 2 directions x 4 micro-batches), each of
  // seq x hidden x 2 bytes / tp = 2048 x 4096 x 2 / 2 = 8 MiB (Megatron scatters the activations
  // over the tensor-parallel ranks), over 8 ranks: 32 MiB per rank; point to point, so the wire
  // carries the payload.
  const json& pp = r.at("communication").at("pp");
  EXPECT_DOUBLE_EQ(pp.at("payload_bytes_per_rank").get<double>(), 32.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(pp.at("wire_bytes_per_rank").get<double>(), 32.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(pp.at("exposed_s").get<double>(),
                   r.at("breakdown")[0].at("exposed_communication_s").at("pp").get<double>());
  // Links sorted by utilization, each utilization = bytes / (bandwidth x step).
  double previous = 2;
  for (const json& l : r.at("busiest_links")) {
    const double u = l.at("utilization").get<double>();
    EXPECT_LE(u, previous);
    previous = u;
    EXPECT_NEAR(u,
                l.at("bytes_carried").get<double>() / (l.at("bandwidth_Bps").get<double>() * step),
                1e-12);
  }
  for (const json& m : r.at("memory")) {
    EXPECT_EQ(m.at("capacity_bytes"), 80'000'000'000);  // H100 SXM 80 GB
    EXPECT_EQ(m.at("total_bytes").get<std::int64_t>(),
              m.at("parameters_bytes").get<std::int64_t>() +
                  m.at("gradients_bytes").get<std::int64_t>() +
                  m.at("optimizer_states_bytes").get<std::int64_t>() +
                  m.at("activations_bytes").get<std::int64_t>());
  }
}

TEST(Report, ResolvedScenarioShowsOverridesAsWritten) {
  const json r = report_of(kPipeline, {"-o", "training.global_batch=16"});
  const json& s = r.at("resolved_scenario");
  EXPECT_EQ(s.at("name"), "pipeline");
  EXPECT_EQ(s.at("topology"), "dgx-h100");
  // Scalars stay strings, as written; the override replaced the file's 8.
  EXPECT_EQ(s.at("training").at("global_batch"), "16");
  EXPECT_EQ(s.at("training").at("seq_len"), "2048");
  EXPECT_EQ(r.at("tokens_per_step"), 16 * 2048);
}

TEST(Report, IdleToleranceIsReportedAndAnnounced) {
  const json r = report_of(kPipeline, {"-o", "network.idle_tolerance=0.05"});
  EXPECT_EQ(r.at("simulation").at("idle_tolerance"), 0.05);
  const auto text =
      run_stepsim({"run", source_file(kPipeline), "-o", "network.idle_tolerance=0.05"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("network   idle tolerance 5%"), std::string::npos) << text.out;
  const auto exact = run_stepsim({"run", source_file(kPipeline)});
  EXPECT_EQ(exact.out.find("idle tolerance"), std::string::npos) << "said only when it is on";
}

TEST(Report, UnwritableReportIsAnInputError) {
  const auto r =
      run_stepsim({"run", source_file(kPipeline), "--report", "/nonexistent/dir/report.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent/dir/report.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "the path is checked before the simulation, which prints the summary";
}

}  // namespace
}  // namespace stepsim
