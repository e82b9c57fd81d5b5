// The Chrome trace of `stepsim run --trace` (sim/run/trace_listener.cpp), checked against the
// Trace Event Format (Google, 2016) as Perfetto reads it: valid JSON; every complete event ("X")
// has a non-negative duration, lies inside the step and sits on a named process and thread; every
// flow arrow has exactly one start ("s") and one end ("f"); counters stay within [0, 1].
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/common/config.hpp"
#include "sim/run/trace_listener.hpp"
#include "tests/run/run_test_support.hpp"
#include "workloads/workload.hpp"

namespace stepsim {
namespace {

using nlohmann::json;
using testing::output_path;
using testing::read_file;
using testing::run_stepsim;
using testing::source_file;

// What a trace holds, after every structural check passed.
struct TraceFacts {
  std::set<int> processes;  // pids with a process_name
  std::size_t complete_events = 0;
  std::size_t wait_events = 0;  // category "wait", on a "(waiting)" thread
  std::size_t flow_arrows = 0;
  std::set<std::pair<int, int>> arrow_ends;  // (sending pid, receiving pid)
  std::set<std::string> counters;
};

// Checks the structure of a trace ending at `step_us` microseconds; fails the test on any error.
TraceFacts check_trace(const std::string& text, double step_us) {
  TraceFacts facts;
  const json trace = json::parse(text);  // throws (and fails the test) on invalid JSON
  EXPECT_TRUE(trace.is_object());
  const json& events = trace.at("traceEvents");
  EXPECT_TRUE(events.is_array());

  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const json& e : events) {
    if (e.at("ph") != "M") continue;
    const int pid = e.at("pid").get<int>();
    if (e.at("name") == "process_name") {
      process_names[pid] = e.at("args").at("name").get<std::string>();
    } else if (e.at("name") == "thread_name") {
      thread_names[{pid, e.at("tid").get<int>()}] = e.at("args").at("name").get<std::string>();
    }
  }
  for (const auto& [pid, name] : process_names) {
    EXPECT_FALSE(name.empty()) << "process " << pid;
    facts.processes.insert(pid);
  }

  struct Ends {
    int starts = 0;
    int finishes = 0;
    double start_ts = 0;
    double finish_ts = 0;
    int start_pid = -1;
    int finish_pid = -1;
  };
  std::map<std::uint64_t, Ends> flows;
  // Timestamps are microseconds with six decimals (picoseconds); allow for the double rounding.
  const double slack_us = 1e-6 * std::max(1.0, step_us);
  for (const json& e : events) {
    const std::string ph = e.at("ph").get<std::string>();
    if (ph == "M") continue;
    const int pid = e.at("pid").get<int>();
    EXPECT_TRUE(process_names.contains(pid)) << "event on an unnamed process: " << e.dump();
    const double ts = e.at("ts").get<double>();
    EXPECT_GE(ts, 0) << e.dump();
    EXPECT_LE(ts, step_us + slack_us) << e.dump();
    if (ph == "X") {
      ++facts.complete_events;
      const int tid = e.at("tid").get<int>();
      const auto thread = thread_names.find({pid, tid});
      EXPECT_NE(thread, thread_names.end()) << "complete event on an unnamed thread: " << e.dump();
      const double dur = e.at("dur").get<double>();
      EXPECT_GE(dur, 0) << e.dump();
      EXPECT_LE(ts + dur, step_us + slack_us) << "ends after the step: " << e.dump();
      EXPECT_FALSE(e.at("name").get<std::string>().empty()) << e.dump();
      if (e.at("cat") == "wait") {
        ++facts.wait_events;
        if (thread != thread_names.end()) {
          EXPECT_TRUE(thread->second.ends_with("(waiting)")) << e.dump();
        }
      }
    } else if (ph == "s" || ph == "f") {
      EXPECT_TRUE(thread_names.contains({pid, e.at("tid").get<int>()})) << e.dump();
      Ends& ends = flows[e.at("id").get<std::uint64_t>()];
      if (ph == "s") {
        ++ends.starts;
        ends.start_ts = ts;
        ends.start_pid = pid;
      } else {
        ++ends.finishes;
        ends.finish_ts = ts;
        ends.finish_pid = pid;
      }
    } else if (ph == "C") {
      facts.counters.insert(e.at("name").get<std::string>());
      for (const auto& [series, value] : e.at("args").items()) {
        EXPECT_GE(value.get<double>(), 0) << e.dump();
        // Max-min fair rates never exceed a link's bandwidth.
        EXPECT_LE(value.get<double>(), 1 + 1e-9) << e.dump();
      }
    } else {
      ADD_FAILURE() << "unexpected event type: " << e.dump();
    }
  }
  for (const auto& [id, ends] : flows) {
    EXPECT_EQ(ends.starts, 1) << "flow " << id;
    EXPECT_EQ(ends.finishes, 1) << "flow " << id;
    EXPECT_LE(ends.start_ts, ends.finish_ts) << "flow " << id;
    facts.arrow_ends.insert({ends.start_pid, ends.finish_pid});
  }
  facts.flow_arrows = flows.size();
  return facts;
}

struct Traced {
  TraceFacts facts;
  json report;
  std::string trace_text;
};

Traced run_traced(const std::string& scenario, const std::string& trace_suffix,
                  std::vector<std::string> extra = {}) {
  const auto trace = output_path(trace_suffix);
  const auto report = output_path("report.json");
  std::vector<std::string> args{"run",      source_file(scenario), "--trace", trace.string(),
                                "--report", report.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_stepsim(args);
  EXPECT_EQ(r.code, 0) << r.err;
  Traced t;
  t.report = json::parse(read_file(report));
  t.trace_text = read_file(trace);
  const double step_us = static_cast<double>(t.report.at("step_time_ps").get<std::int64_t>()) / 1e6;
  t.facts = check_trace(t.trace_text, step_us);
  return t;
}

constexpr const char* kPipeline = "tests/inputs/good/pipeline.yaml";

TEST(Trace, QuickstartTraceIsAValidChromeTraceWithOneProcessPerRank) {
  const Traced t = run_traced("examples/quickstart.yaml", "trace.json");
  // 16 ranks (2 DGX H100 nodes x 8 GPUs), plus the process holding the busiest links' counters.
  std::set<int> expected;
  for (int r = 0; r <= 16; ++r)
    expected.insert(r);
  EXPECT_EQ(t.facts.processes, expected);
  EXPECT_GT(t.facts.complete_events, 0u);
  // No pipeline (pp 1): no send or receive, so no arrow.
  EXPECT_EQ(t.facts.flow_arrows, 0u);
  // One counter track per busy link, at most 10 (SimulateOptions::trace_links).
  EXPECT_GE(t.facts.counters.size(), 1u);
  EXPECT_LE(t.facts.counters.size(), 10u);
}

TEST(Trace, GzipTraceHoldsTheSameEventsAsThePlainOne) {
  const Traced plain = run_traced("examples/quickstart.yaml", "trace.json");
  const Traced gz = run_traced("examples/quickstart.yaml", "trace.json.gz");
  EXPECT_EQ(gz.trace_text, plain.trace_text);
}

TEST(Trace, PipelineHasOneArrowPerTransferFromSendToReceive) {
  const Traced t = run_traced(kPipeline, "trace.json");
  // tp 2 x dp 2 = 4 pipeline pairs; each pair moves every one of the m = 4 micro-batches forward
  // (activations) and backward (gradients): 4 x 2 x 4 = 32 transfers, one arrow each.
  EXPECT_EQ(t.facts.flow_arrows, 32u);
  // The report counts pipeline operations per rank as transfers over all 8 ranks: 32 / 8 = 4.
  EXPECT_EQ(t.report.at("communication").at("pp").at("operations_per_rank"), 4);
  // Arrows join stage 0 (ranks 0-3) and stage 1 (ranks 4-7) ranks with the same tp and dp
  // coordinates: rank r and r + 4, in both directions.
  std::set<std::pair<int, int>> expected;
  for (int r = 0; r < 4; ++r) {
    expected.insert({r, r + 4});
    expected.insert({r + 4, r});
  }
  EXPECT_EQ(t.facts.arrow_ends, expected);
  // Stage 1 waits for its first activations, on its "pp-recv (waiting)" thread.
  EXPECT_GT(t.facts.wait_events, 0u);
}

TEST(Trace, TraceRanksLimitTheProcessesAndKeepOnlyArrowsBetweenTracedRanks) {
  // Ranks 0 and 4 are pipeline peers (stage 0 and 1, same tp and dp coordinates): their 2 x m = 8
  // transfers keep their arrows; pid 8 (= world size) holds the link counters.
  Traced t = run_traced(kPipeline, "trace.json", {"--trace-ranks", "0,4"});
  EXPECT_EQ(t.facts.processes, (std::set<int>{0, 4, 8}));
  EXPECT_EQ(t.facts.flow_arrows, 8u);
  // Ranks 0 and 1 are both on stage 0: their peers are not traced, so no arrow at all.
  t = run_traced(kPipeline, "trace.json", {"--trace-ranks", "0-1"});
  EXPECT_EQ(t.facts.processes, (std::set<int>{0, 1, 8}));
  EXPECT_EQ(t.facts.flow_arrows, 0u);
  // "N" means the first N ranks.
  t = run_traced(kPipeline, "trace.json", {"--trace-ranks", "3"});
  EXPECT_EQ(t.facts.processes, (std::set<int>{0, 1, 2, 8}));
}

TEST(Trace, ProcessesAreNamedWithTheirAcceleratorAndCoordinates) {
  // (A single number N would mean the first N ranks; a list names ranks.)
  const Traced t = run_traced(kPipeline, "trace.json", {"--trace-ranks", "5,6"});
  // Rank r = tp + 2 x dp + 4 x pp (order tp-cp-ep-dp-pp, innermost first) runs on GPU r of the
  // single DGX H100: rank 5 is tp 1, dp 0, pp 1; rank 6 is tp 0, dp 1, pp 1.
  EXPECT_NE(t.trace_text.find("\"name\":\"rank 5 (node0.gpu5) tp1 pp1 dp0\""), std::string::npos);
  EXPECT_NE(t.trace_text.find("\"name\":\"rank 6 (node0.gpu6) tp0 pp1 dp1\""), std::string::npos);
  EXPECT_EQ(t.facts.processes, (std::set<int>{5, 6, 8}));
}

workloads::Workload workload_of(const std::string& parallelism) {
  const auto doc = config::Document::parse(
      "model: {layers: 16, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}\nparallelism: " +
          parallelism +
          "\ntraining: {seq_len: 1024, micro_batch: 1, global_batch: 512}\ncompute: {device: "
          "h100}\n",
      "test.yaml");
  return workloads::Workload(workloads::parse_workload(doc.root()));
}

TEST(Trace, AutoRanksAreWholeReplicasInLargeWorlds) {
  // 64 ranks or fewer: every rank (empty = all).
  EXPECT_TRUE(parse_trace_ranks("auto", workload_of("{tp: 8, pp: 2, dp: 4}")).empty());
  // TP 8, PP 4, DP 8 = 256 ranks; a replica (dp coordinate 0) is tp x pp = 32 ranks, so two
  // replicas fit in 64: the ranks with dp 0 or 1. Megatron order (tp, cp, ep, dp, pp innermost
  // first): rank = tp + 8 dp + 64 pp, so ranks 0-15, 64-79, 128-143, 192-207.
  const auto w = workload_of("{tp: 8, pp: 4, dp: 8}");
  const std::vector<int> ranks = parse_trace_ranks("auto", w);
  std::vector<int> expected;
  for (int pp = 0; pp < 4; ++pp)
    for (int r = 0; r < 16; ++r)
      expected.push_back(64 * pp + r);
  EXPECT_EQ(ranks, expected);
  // A replica larger than 64 ranks is still traced whole: TP 8, PP 16, DP 2 -> 128 ranks of 256.
  EXPECT_EQ(parse_trace_ranks("auto", workload_of("{tp: 8, pp: 16, dp: 2}")).size(), 128u);
  // Pure data parallelism: 64 replicas of one rank each.
  EXPECT_EQ(parse_trace_ranks("auto", workload_of("{dp: 512}")).size(), 64u);
  EXPECT_TRUE(parse_trace_ranks("all", w).empty());
}

TEST(Trace, ATracedRunReportsWhatAnUntracedOneDoes) {
  // A traced run simulates the step twice (the first finds the busiest links to sample); both runs
  // and the untraced one are the same simulation, so the summaries agree byte for byte.
  const auto trace = output_path("trace.json");
  const auto plain = run_stepsim({"-q", "run", source_file(kPipeline)});
  const auto traced = run_stepsim({"-q", "run", source_file(kPipeline), "--trace", trace.string()});
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(traced.code, 0) << traced.err;
  EXPECT_EQ(plain.out, traced.out);
  // The counter tracks hold the busiest links' samples: at least one sample each.
  const std::string text = read_file(trace);
  EXPECT_NE(text.find("\"ph\":\"C\""), std::string::npos);
}

TEST(Trace, BadTraceRequestsAreInputErrors) {
  auto r = run_stepsim({"run", source_file(kPipeline), "--trace", "/nonexistent/dir/t.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent/dir/t.json"), std::string::npos) << r.err;
  r = run_stepsim({"run", source_file(kPipeline), "--trace", output_path("trace.json").string(),
                   "--trace-ranks", "0-8"});
  EXPECT_EQ(r.code, 2) << "rank 8 does not exist in a world of 8: " << r.err;
  EXPECT_NE(r.err.find("--trace-ranks '0-8': rank 8 is beyond the 8 accelerators"),
            std::string::npos)
      << r.err;
  // "0" is a count (the first 0 ranks): the message says how to ask for rank 0 alone.
  r = run_stepsim({"run", source_file(kPipeline), "--trace", output_path("trace.json").string(),
                   "--trace-ranks", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--trace-ranks 0: a count N means the first N ranks"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("write 0-0"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stepsim
