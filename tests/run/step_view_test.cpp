// The HTML report's data (sim/run/step_view.hpp) against closed forms and the report it comes
// with: binning of a piecewise-constant utilization, which ranks the view shows, every stage's
// parts adding up to the step time, the binned utilization averaging to the link's figure in the
// report, link-class totals conserving bytes; and a view leaves the report unchanged.
#include <gtest/gtest.h>

#include <numeric>

#include "sim/run/simulate.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/run/run_test_support.hpp"
#include "workloads/workload.hpp"

namespace stepsim {
namespace {

using testing::source_file;

TEST(StepView, BinsAPiecewiseConstantSignalByOverlap) {
  // 0 until 10 ps, 1.0 from 10 to 25 ps, 0.5 from 25 ps to the end at 40 ps; four 10 ps bins:
  // [0,10) 0; [10,20) 1; [20,30) (5 x 1 + 5 x 0.5)/10 = 0.75; [30,40) 0.5.
  const auto bins =
      bin_piecewise_constant({Time::ps(10), Time::ps(25)}, {1.0, 0.5}, Time::ps(40), 4);
  ASSERT_EQ(bins.size(), 4u);
  EXPECT_DOUBLE_EQ(bins[0], 0.0);
  EXPECT_DOUBLE_EQ(bins[1], 1.0);
  EXPECT_DOUBLE_EQ(bins[2], 0.75);
  EXPECT_DOUBLE_EQ(bins[3], 0.5);
  // Bins that do not divide the picoseconds evenly still conserve the integral: 15 x 1 + 15 x 0.5
  // = 22.5 ps of full utilization over 40 ps, in any number of bins.
  for (std::size_t n : {3u, 7u, 150u}) {
    const auto b =
        bin_piecewise_constant({Time::ps(10), Time::ps(25)}, {1.0, 0.5}, Time::ps(40), n);
    EXPECT_NEAR(std::accumulate(b.begin(), b.end(), 0.0) / static_cast<double>(n), 22.5 / 40,
                1e-12);
  }
}

TEST(StepView, AutoShowsTheFirstRankOfEveryStageAtMostSixteen) {
  const Scenario pipeline = load_scenario(source_file("tests/inputs/good/pipeline.yaml"), {});
  const workloads::Workload workload(pipeline.workload);
  const auto first = stage_first_ranks(workload);
  ASSERT_EQ(first.size(), 2u);  // pp 2
  EXPECT_EQ(parse_view_ranks("auto", workload), first);
  EXPECT_EQ(parse_view_ranks("all", workload).size(), 8u);
  EXPECT_EQ(parse_view_ranks("0-2,5", workload), (std::vector<int>{0, 1, 2, 5}));

  // GPT-3 on 1,024 GPUs has pp 8: eight stages shown; a layout with pp 32 shows 16, the first and
  // the last stage among them.
  const Scenario gpt3 = load_scenario(source_file("examples/gpt3-175b-superpod.yaml"),
                                      {"parallelism.pp=32", "parallelism.tp=4", "parallelism.dp=8",
                                       "parallelism.vpp=1", "parallelism.schedule=1f1b"});
  const workloads::Workload big(gpt3.workload);
  const auto firsts = stage_first_ranks(big);
  ASSERT_EQ(firsts.size(), 32u);
  const auto shown = parse_view_ranks("auto", big);
  ASSERT_EQ(shown.size(), 16u);
  EXPECT_EQ(shown.front(), firsts.front());
  EXPECT_EQ(shown.back(), *std::max_element(firsts.begin(), firsts.end()));
}

TEST(StepView, FiguresAgreeWithTheReportAndTheReportDoesNotChange) {
  const Scenario scenario = load_scenario(source_file("tests/inputs/good/pipeline.yaml"), {});
  const StepReport plain = simulate_step(scenario);
  StepView view;
  SimulateOptions options;
  options.view = &view;
  options.view_links = 4;
  options.view_bins = 64;
  const StepReport with_view = simulate_step(scenario, options);
  EXPECT_EQ(to_json(plain).dump(), to_json(with_view).dump())
      << "collecting the view must not change the report";

  EXPECT_EQ(view.step_time, plain.step_time);
  // Every stage's parts add up to the step time; stage 0's are the report's first breakdown.
  ASSERT_EQ(view.stages.size(), 2u);
  for (const auto& s : view.stages)
    EXPECT_EQ(s.parts.total(), plain.step_time) << "stage " << s.stage;
  EXPECT_EQ(view.stages[0].parts.compute, plain.breakdowns[0].parts.compute);
  EXPECT_EQ(view.stages[1].parts.bubble, plain.breakdowns.back().parts.bubble);

  // The spans of the shown ranks (0 and 4, the stages' first ranks) end by the step's end, and the
  // shown ranks' compute spans cover exactly the compute time of the breakdown when they do not
  // overlap (one compute stream).
  ASSERT_EQ(view.ranks.size(), 2u);
  for (const auto& rank : view.ranks) {
    ASSERT_FALSE(rank.spans.empty());
    Time compute;
    for (const auto& span : rank.spans) {
      EXPECT_LE(span.issued, span.start);
      EXPECT_LE(span.start, span.end);
      EXPECT_LE(span.end, plain.step_time);
      if (span.kind == workloads::OpKind::kCompute) compute += span.end - span.start;
    }
    EXPECT_EQ(compute, view.stages[static_cast<std::size_t>(rank.stage)].parts.compute);
  }

  // The busiest links are the report's, in its order, and their bins average to the utilization
  // the report gives (bytes carried / (bandwidth x step time)).
  ASSERT_EQ(view.links.size(), 4u);
  for (std::size_t i = 0; i < view.links.size(); ++i) {
    const auto& link = view.links[i];
    EXPECT_EQ(link.link, plain.busiest_links[i].name);
    ASSERT_EQ(link.bins.size(), 64u);
    const double mean = std::accumulate(link.bins.begin(), link.bins.end(), 0.0) / 64;
    EXPECT_NEAR(mean, plain.busiest_links[i].utilization, 1e-6 * plain.busiest_links[i].utilization)
        << link.link;
  }
  // Per class: the busiest link of the report's first class is the class's busiest, and the bytes
  // of the busiest links are within their class's totals.
  ASSERT_FALSE(view.link_classes.empty());
  for (const auto& c : view.link_classes) {
    EXPECT_GE(c.busiest_utilization, c.utilization);
    double listed = 0;
    for (const auto& l : plain.busiest_links)
      if (l.link_class == c.link_class) listed += l.bytes_carried;
    EXPECT_LE(listed, c.bytes_carried * (1 + 1e-12));
  }
  const auto top = std::find_if(
      view.link_classes.begin(), view.link_classes.end(),
      [&](const auto& c) { return c.link_class == plain.busiest_links[0].link_class; });
  ASSERT_NE(top, view.link_classes.end());
  EXPECT_DOUBLE_EQ(top->busiest_utilization, plain.busiest_links[0].utilization);
}

}  // namespace
}  // namespace stepsim
