// The --html pages of `stepsim run`, `compare` and `collective`, end to end in-process: one
// self-contained file (no external script, style, font or image), every chart present and drawn,
// the same bytes every time, the summary unchanged, a bad path refused before the simulation.
#include <gtest/gtest.h>

#include <map>

#include "tests/run/run_test_support.hpp"

namespace stepsim {
namespace {

using testing::output_path;
using testing::read_file;
using testing::run_stepsim;
using testing::source_file;

// Chart id -> the number of drawn marks (class="mark") inside its <figure>.
std::map<std::string, int> chart_marks(const std::string& page) {
  std::map<std::string, int> charts;
  const std::string open = "<figure class=\"chart\" data-chart=\"";
  for (auto at = page.find(open); at != std::string::npos; at = page.find(open, at + 1)) {
    const auto id_begin = at + open.size();
    const std::string id = page.substr(id_begin, page.find('"', id_begin) - id_begin);
    const auto end = page.find("</figure>", at);
    const std::string body = page.substr(at, end - at);
    int marks = 0;
    for (auto m = body.find("class=\"mark\""); m != std::string::npos;
         m = body.find("class=\"mark\"", m + 1))
      ++marks;
    EXPECT_FALSE(charts.contains(id)) << "two charts named " << id;
    charts[id] = marks;
  }
  return charts;
}

void expect_self_contained(const std::string& page) {
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  EXPECT_TRUE(page.ends_with("</html>\n"));
  for (const char* external : {"<link", "src=", "@import", "url(", "https://"})
    EXPECT_EQ(page.find(external), std::string::npos) << "the page loads something: " << external;
}

TEST(HtmlReport, RunWritesEveryChartDrawnAndTheSameBytesTwice) {
  const auto html = output_path("run.html");
  const auto plain = run_stepsim({"run", source_file("tests/inputs/good/pipeline.yaml")});
  const auto r =
      run_stepsim({"run", source_file("tests/inputs/good/pipeline.yaml"), "--html", html.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out) << "the HTML report must not change the summary";
  const std::string page = read_file(html);
  expect_self_contained(page);
  const auto charts = chart_marks(page);
  for (const char* id : {"timeline", "stages", "links", "link-classes", "dimensions", "memory"}) {
    ASSERT_TRUE(charts.contains(id)) << id;
    EXPECT_GT(charts.at(id), 0) << id << " is empty";
  }
  EXPECT_EQ(charts.size(), 6u);
  // pp 2: two stages, each with compute at least; memory: 4 parts (parameters, gradients,
  // optimizer states, activations) per stage.
  EXPECT_GE(charts.at("stages"), 2);
  EXPECT_EQ(charts.at("memory"), 8);
  // The timeline shows ranks 0 and 4 (the stages' first ranks), with bubbles on the pipeline rows.
  EXPECT_NE(page.find("rank 0 ("), std::string::npos);
  EXPECT_NE(page.find("rank 4 ("), std::string::npos);
  EXPECT_NE(page.find("pipeline bubble: waited for rank"), std::string::npos);

  const auto again = output_path("run-again.html");
  ASSERT_EQ(
      run_stepsim({"run", source_file("tests/inputs/good/pipeline.yaml"), "--html", again.string()})
          .code,
      0);
  EXPECT_EQ(read_file(again), page);
}

TEST(HtmlReport, TheTraceIsTheSameWithOrWithoutTheHtmlReport) {
  // One run records both (the listener passes every operation on to the trace, and the links'
  // samples cover the trace's and the page's); the trace must not notice.
  const auto alone = output_path("alone.trace.json");
  const auto both = output_path("both.trace.json");
  const auto html = output_path("both.html");
  ASSERT_EQ(run_stepsim(
                {"run", source_file("tests/inputs/good/pipeline.yaml"), "--trace", alone.string()})
                .code,
            0);
  ASSERT_EQ(run_stepsim({"run", source_file("tests/inputs/good/pipeline.yaml"), "--trace",
                         both.string(), "--html", html.string()})
                .code,
            0);
  EXPECT_EQ(read_file(both), read_file(alone));
  EXPECT_EQ(chart_marks(read_file(html)).size(), 6u);
}

TEST(HtmlReport, HtmlRanksChoosesTheTimelineRows) {
  const auto html = output_path("ranks.html");
  const auto r = run_stepsim({"run", source_file("tests/inputs/good/pipeline.yaml"), "--html",
                              html.string(), "--html-ranks", "1,2,3"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string page = read_file(html);
  EXPECT_NE(page.find("Step timeline of 3 ranks"), std::string::npos);
  EXPECT_EQ(page.find("rank 0 ("), std::string::npos);
  const auto bad = run_stepsim({"run", source_file("tests/inputs/good/pipeline.yaml"), "--html",
                                html.string(), "--html-ranks", "9"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--trace-ranks"), std::string::npos) << bad.err;
}

TEST(HtmlReport, ABadPathIsRefusedBeforeTheSimulation) {
  const auto r = run_stepsim({"run", source_file("tests/inputs/good/pipeline.yaml"), "--html",
                              "/nonexistent-directory/report.html"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent-directory/report.html"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << "refused before the summary";
}

TEST(HtmlReport, CompareShowsTheVariantsSideBySide) {
  const auto html = output_path("compare.html");
  const auto r = run_stepsim({"compare", source_file("tests/inputs/good/pipeline.yaml"),
                              "--variant", "parallelism.pp=1 parallelism.dp=4", "--variant",
                              "parallelism.pp=2", "--html", html.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string page = read_file(html);
  expect_self_contained(page);
  const auto charts = chart_marks(page);
  for (const char* id : {"step-time", "breakdown", "dimensions", "busiest-link", "memory"}) {
    ASSERT_TRUE(charts.contains(id)) << id;
    EXPECT_GT(charts.at(id), 0) << id << " is empty";
  }
  EXPECT_EQ(charts.at("step-time"), 2);     // one bar per variant
  EXPECT_EQ(charts.at("busiest-link"), 2);  // one bar per variant
  EXPECT_NE(page.find("parallelism.pp=1 parallelism.dp=4"), std::string::npos);
  // Labels that fit sit under the bars; the table numbers the variants.
  EXPECT_NE(page.find("<td>#2</td><td>parallelism.pp=2</td>"), std::string::npos);
  EXPECT_NE(page.find("text-anchor=\"middle\">parallelism.pp=2</text>"), std::string::npos);
}

TEST(HtmlReport, CompareNamesVariantsByNumberUnderTheBarsWhenTheirLabelsAreLong) {
  // compare --topology: the labels are the topology specs (all of 8 GPUs); five of them do not
  // fit under five bars, so the bars say #1..#5, and the table does not repeat the topology.
  const auto html = output_path("compare-long.html");
  std::vector<std::string> args{"compare", source_file("tests/inputs/good/pipeline.yaml"), "--html",
                                html.string()};
  for (const char* t : {"dgx-h100", "cluster:nodes=1,nvlink_bandwidth=450GB/s",
                        "cluster:nodes=1,nvlink_bandwidth=200GB/s", "cluster:nodes=1",
                        "cluster:nodes=1,nic_speed=200Gbps"}) {
    args.push_back("--topology");
    args.push_back(t);
  }
  const auto r = run_stepsim(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string page = read_file(html);
  EXPECT_EQ(chart_marks(page).at("step-time"), 5);
  EXPECT_NE(page.find("text-anchor=\"middle\">#5</text>"), std::string::npos);
  EXPECT_EQ(page.find("<th>topology</th>"), std::string::npos);
}

TEST(HtmlReport, CollectiveOverlaysThePublishedPointsOfTheSameSetup) {
  // validation/cases.yaml has the 8x H100 ring AllReduce at 16 GiB: 370 GB/s (GTC24), on
  // dgx-h100 with ranks "8"; --algo ring keeps that one and leaves out the NVLS (in-switch) row.
  const auto html = output_path("collective.html");
  const auto r =
      run_stepsim({"collective", "-t", "dgx-h100", "-n", "8", "--algo", "ring", "-s", "1GiB:16GiB",
                   "--html", html.string(), "--published", source_file("validation/cases.yaml")});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string page = read_file(html);
  expect_self_contained(page);
  const auto charts = chart_marks(page);
  ASSERT_TRUE(charts.contains("busbw"));
  // 1, 2, 4, 8, 16 GiB: 5 points and a line for busbw and for algbw, and six published points:
  // GTC24's 16 GiB and Together's NCCL_ALGO=RING sweep at 16, 64 and 256 MiB, 1 and 8 GiB (the
  // published points of the setup are drawn whatever the sizes swept).
  EXPECT_EQ(charts.at("busbw"), 2 * (5 + 1) + 6);
  EXPECT_NE(page.find("busbw (published"), std::string::npos);
  EXPECT_NE(page.find("370 GB/s"), std::string::npos);
  EXPECT_NE(page.find("single_node.0.busbw"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
