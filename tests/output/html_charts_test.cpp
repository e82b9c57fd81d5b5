// The SVG charts of the --html pages (sim/output/html_charts.hpp): escaping, one mark per drawn
// value (none for a zero), bar heights proportional to the values, the timeline's spans placed in
// microseconds, and a page that loads nothing from elsewhere.
#include <gtest/gtest.h>

#include "sim/output/html_charts.hpp"

namespace stepsim::output::html {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// The attribute `name` of the `index`-th mark.
double mark_attribute(const std::string& svg, int index, const std::string& name) {
  auto at = svg.find("class=\"mark\"");
  for (int i = 0; i < index; ++i)
    at = svg.find("class=\"mark\"", at + 1);
  const auto value = svg.find(name + "=\"", at) + name.size() + 2;
  return std::stod(svg.substr(value, svg.find('"', value) - value));
}

TEST(HtmlCharts, EscapesMarkup) {
  EXPECT_EQ(escape("a<b> & \"c\" 'd'"), "a&lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;");
}

TEST(HtmlCharts, StackedBarsDrawOneMarkPerNonZeroValueWithProportionalHeights) {
  BarChart chart;
  chart.id = "t";
  chart.title = "<title>";
  chart.categories = {"a", "b"};
  chart.series = {{"x", "#111", {1.0, 3.0}}, {"y", "#222", {0.0, 1.0}}};
  chart.limits = {2.0, -1.0};
  chart.limit_name = "cap";
  const std::string svg = bar_chart(chart);
  EXPECT_EQ(count(svg, "class=\"mark\""), 3);   // y of "a" is 0: not drawn
  EXPECT_EQ(count(svg, "class=\"limit\""), 1);  // "b" has none
  EXPECT_NE(svg.find("&lt;title&gt;"), std::string::npos);
  // Heights: 1, 3 and 1 on one scale.
  const double h0 = mark_attribute(svg, 0, "height");
  EXPECT_NEAR(mark_attribute(svg, 1, "height"), 3 * h0, 0.02);
  EXPECT_NEAR(mark_attribute(svg, 2, "height"), h0, 0.02);
  // Stacked: "b"'s second part sits on its first.
  EXPECT_NEAR(mark_attribute(svg, 2, "y") + mark_attribute(svg, 2, "height"),
              mark_attribute(svg, 1, "y"), 0.02);
}

TEST(HtmlCharts, TimelineSpansAreInMicroseconds) {
  Timeline chart;
  chart.id = "tl";
  chart.kinds = {{"compute", "#111"}};
  chart.rows = {{"rank 0", "compute", {{0.001, 0.0025, 0, "op", "op"}}}};
  chart.end_s = 0.004;
  const std::string svg = timeline(chart);
  EXPECT_EQ(count(svg, "class=\"mark\""), 1);
  EXPECT_DOUBLE_EQ(mark_attribute(svg, 0, "x"), 1000.0);
  EXPECT_DOUBLE_EQ(mark_attribute(svg, 0, "width"), 1500.0);
  EXPECT_NE(svg.find("viewBox=\"0 0 4000.000000 "), std::string::npos);
}

TEST(HtmlCharts, ATimelineOverBudgetMergesTheClosestNeighboursOfOneKind) {
  // One row: a, b (gap 1), c (gap 3) of kind 0, then d of kind 1 right after c. With a budget of
  // 3, one merge is needed: a and b (the smallest gap); c and d differ in kind.
  Timeline chart;
  chart.kinds = {{"x", "#111"}, {"y", "#222"}};
  chart.rows = {
      {"g", "r", {{0, 1, 0, "a", ""}, {2, 3, 0, "b", ""}, {6, 7, 0, "c", ""}, {7, 8, 1, "d", ""}}}};
  chart.end_s = 8;
  chart.max_spans = 3;
  auto rows = merged_rows(chart);
  ASSERT_EQ(rows[0].spans.size(), 3u);
  EXPECT_EQ(rows[0].spans[0].start_s, 0);
  EXPECT_EQ(rows[0].spans[0].end_s, 3);
  EXPECT_NE(rows[0].spans[0].detail.find("2 operations, a to b"), std::string::npos);
  EXPECT_EQ(rows[0].spans[1].label, "c");
  // A budget below what the kinds allow merges every same-kind neighbour: a, b, c and d.
  chart.max_spans = 1;
  rows = merged_rows(chart);
  ASSERT_EQ(rows[0].spans.size(), 2u);
  EXPECT_EQ(rows[0].spans[0].end_s, 7);
  // Within the budget, nothing changes.
  chart.max_spans = 4;
  EXPECT_EQ(merged_rows(chart)[0].spans.size(), 4u);
}

TEST(HtmlCharts, HeatMapSkipsIdleBinsAndLineChartPlotsEveryPoint) {
  HeatMap heat;
  heat.id = "h";
  heat.rows = {"l0", "l1"};
  heat.values = {{0.0, 0.5, 1.0}, {0.0, 0.0, 0.0}};
  heat.end_s = 3;
  EXPECT_EQ(count(heat_map(heat), "class=\"mark\""), 2);

  LineChart line;
  line.id = "l";
  line.log_x = true;
  line.series = {{"s", "#111", {{1024, 1, ""}, {2048, 2, ""}, {4096, 4, ""}}, false},
                 {"p", "#222", {{4096, 3, "published"}}, true}};
  const std::string svg = line_chart(line);
  EXPECT_EQ(count(svg, "<circle class=\"mark\""), 4);
  EXPECT_EQ(count(svg, "<path class=\"mark\""), 1);
  // On the base-2 log axis, 1 KiB, 2 KiB and 4 KiB are evenly spaced.
  const double x0 = mark_attribute(svg, 1, "cx");
  const double x1 = mark_attribute(svg, 2, "cx");
  const double x2 = mark_attribute(svg, 3, "cx");
  EXPECT_NEAR(x1 - x0, x2 - x1, 0.02);
}

TEST(HtmlCharts, APageIsOneSelfContainedDocument) {
  Page page("a & b");
  page.section("s");
  page.paragraph("<p>");
  const std::string html = page.str();
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find("<title>a &amp; b</title>"), std::string::npos);
  EXPECT_NE(html.find("<p>&lt;p&gt;</p>"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

}  // namespace
}  // namespace stepsim::output::html
