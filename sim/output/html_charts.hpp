// Charts as plain SVG inside one self-contained HTML page, for the `--html` reports: stacked or
// grouped bars, lines on a linear or logarithmic axis, a heat map, and a timeline of spans. No
// script, font or style sheet is fetched: the page is one file that opens offline in any browser.
// Hover details are SVG <title> elements (the browser's own tooltip); a few lines of inline script
// let the timeline zoom (wheel) and pan (drag) and draw its time axis again.
//
// Every chart is a <figure class="chart" data-chart="ID"> whose drawn marks (bars, cells, spans,
// points, lines) carry class "mark", so a test can count the charts and check that none is empty.
// The same input gives the same bytes: numbers are printed with fixed precision.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::output::html {

// `text` with &, <, >, " and ' escaped, for element content and attribute values.
std::string escape(std::string_view text);

// Formats a value for an axis label or a tooltip ("1.5 GB", "320 ms").
using Formatter = std::function<std::string(double)>;
std::string format_number(double value);  // "%.3g", the default
std::string format_seconds(double seconds);
std::string format_bytes_decimal(double bytes);  // "1.50 GB" (1e9), as bandwidths are written
std::string format_percent(double fraction);     // 0.5 -> "50.0%"

struct Series {
  std::string name;
  std::string color;           // CSS color
  std::vector<double> values;  // one per category
};

// Bars per category: the series stacked on one bar, or side by side (grouped). `limits` (empty,
// or one per category; a negative value draws none) are drawn as a dashed line across the bar,
// named `limit_name` in the legend: the memory capacity of a stage.
struct BarChart {
  std::string id;
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<Series> series;
  bool stacked = true;
  std::vector<double> limits;
  std::string limit_name;
  Formatter format = format_number;
};
std::string bar_chart(const BarChart& chart);

struct Point {
  double x = 0;
  double y = 0;
  std::string note;  // added to the tooltip
};
struct LineSeries {
  std::string name;
  std::string color;
  std::vector<Point> points;
  bool markers_only = false;  // published points: circles, no line
};
// Lines over x; `log_x` draws x on a base-2 logarithmic axis (sizes).
struct LineChart {
  std::string id;
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  std::vector<LineSeries> series;
  Formatter format_x = format_number;
  Formatter format_y = format_number;
};
std::string line_chart(const LineChart& chart);

// Rows x time bins of a value in [0, 1] (a link's utilization), white to dark red; `end_s` is the
// time the last bin ends.
struct HeatMap {
  std::string id;
  std::string title;
  std::vector<std::string> rows;
  std::vector<std::vector<double>> values;  // [row][bin]
  double end_s = 0;
};
std::string heat_map(const HeatMap& chart);

// Spans on rows over time (seconds), one color per kind. Rows are grouped under a heading (a
// rank) when `group` changes.
struct TimelineKind {
  std::string name;
  std::string color;
};
struct TimelineSpan {
  double start_s = 0;
  double end_s = 0;
  int kind = 0;        // index into Timeline::kinds
  std::string label;   // "fwd L3 qkv mb2"
  std::string detail;  // tooltip
};
struct TimelineRow {
  std::string group;  // "rank 0 (stage 0)"
  std::string label;  // "compute", "tp", ...
  std::vector<TimelineSpan> spans;
};
// With more than `max_spans` spans, neighbours of the same kind on a row are merged, the closest
// first (the smallest gap between them), until at most `max_spans` are left where the kinds allow:
// a merged span's tooltip says how many operations it holds, from which to which. This keeps the
// page of a large step small (a GPT-3 stage runs tens of thousands of operations).
struct Timeline {
  std::string id;
  std::string title;
  std::vector<TimelineKind> kinds;
  std::vector<TimelineRow> rows;
  double end_s = 0;
  std::size_t max_spans = 16000;
};
std::string timeline(const Timeline& chart);
// The rows of `chart` with neighbours merged as above (what timeline() draws).
std::vector<TimelineRow> merged_rows(const Timeline& chart);

// A key-value or header-and-rows table.
std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows);

// One HTML page: a title, sections of charts, tables and text, inline style and script.
class Page {
 public:
  explicit Page(std::string title);
  void section(std::string_view heading);
  void paragraph(std::string_view text);  // escaped
  void raw(std::string_view html);        // a chart or a table
  void preformatted(std::string_view text);
  // The whole document.
  std::string str() const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace stepsim::output::html
