#include "sim/output/html_charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace stepsim::output::html {
namespace {

// Chart geometry in CSS pixels.
constexpr double kWidth = 900;
constexpr double kTop = 12;
constexpr double kBottom = 44;
constexpr double kRight = 16;
constexpr double kAxisLeft = 72;

// Coordinates with two decimals: enough for a screen, and the same bytes every time.
std::string px(double v) {
  return fmt::format("{:.2f}", v);
}

// 0, step, 2 step, ... with a step of 1, 2 or 5 times a power of ten, about `target` ticks up to
// at least `max`.
std::vector<double> nice_ticks(double max, int target = 5) {
  if (!(max > 0) || !std::isfinite(max)) max = 1;
  const double raw = max / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double n = raw / magnitude;
  const double step = (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * magnitude;
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    ticks.push_back(step * i);
    if (step * i >= max * (1 - 1e-9)) break;
  }
  return ticks;
}

std::string legend(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out = "<div class=\"legend\">";
  for (const auto& [name, color] : entries) {
    out +=
        fmt::format("<span><i style=\"background:{}\"></i>{}</span>", escape(color), escape(name));
  }
  return out + "</div>";
}

std::string figure_open(const std::string& id, const std::string& title) {
  return fmt::format("<figure class=\"chart\" data-chart=\"{}\"><figcaption>{}</figcaption>",
                     escape(id), escape(title));
}

// Horizontal grid lines and labels of a linear y axis from 0 to ticks.back().
std::string y_axis(const std::vector<double>& ticks, double left, double right, double top,
                   double bottom, const Formatter& format, const std::string& label) {
  std::string out = "<g class=\"axis\">";
  const double top_value = ticks.back();
  for (double t : ticks) {
    const double y = bottom - (bottom - top) * t / top_value;
    out += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "text-anchor=\"end\">{}</text>",
        px(left), px(right), px(y), px(y), px(left - 4), px(y + 4), escape(format(t)));
  }
  out += fmt::format(
      "<text class=\"label\" transform=\"translate(12,{}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>",
      px((top + bottom) / 2), escape(label));
  return out + "</g>";
}

// Time-axis ticks (seconds) over [0, end].
std::string time_axis(double end_s, double left, double width, double y) {
  std::string out;
  for (double t : nice_ticks(end_s, 8)) {
    if (t > end_s * (1 + 1e-9)) break;
    const double x = left + width * t / end_s;
    out += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "text-anchor=\"middle\">{}</text>",
        px(x), px(x), px(y), px(y + 4), px(x), px(y + 16), escape(format_seconds(t)));
  }
  return out;
}

// Width of a label column for these texts (about 6.2 px a character at 11 px), within bounds.
double label_width(const std::vector<std::string>& labels, double min, double max) {
  std::size_t longest = 0;
  for (const auto& l : labels)
    longest = std::max(longest, l.size());
  return std::clamp(12 + 6.2 * static_cast<double>(longest), min, max);
}

// White to dark red through orange, for a utilization in [0, 1].
std::string heat_color(double v) {
  v = std::clamp(v, 0.0, 1.0);
  const double r = 255 - 105 * std::max(0.0, v - 0.5) * 2;
  const double g = 245 - 225 * v;
  const double b = 235 - 215 * std::min(1.0, v * 1.6);
  return fmt::format("rgb({},{},{})", static_cast<int>(std::lround(r)),
                     static_cast<int>(std::lround(g)), static_cast<int>(std::lround(b)));
}

constexpr std::string_view kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:960px;color:#222;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
figure.chart{margin:10px 0 18px}figcaption{font-weight:600;margin-bottom:4px}
svg{display:block;font:11px system-ui,sans-serif}svg .axis line{stroke:#e3e3e3}svg .axis text,svg text{fill:#444}
svg .label{font-size:12px}svg .group{font-weight:600}svg .mark:hover{opacity:.75}svg .limit{stroke:#000;stroke-dasharray:4 3;stroke-width:1.5}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin-top:4px}.legend i{display:inline-block;width:11px;height:11px;margin-right:5px;vertical-align:-1px;border-radius:2px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}th{background:#f4f4f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}pre{background:#f7f7f7;padding:10px;overflow:auto;font-size:12px;max-height:420px}
.hint{color:#666;font-size:12px}.timeline .tl-plot{cursor:grab}
)";

// Zoom (wheel) and pan (drag) for each timeline; double click resets. The spans are drawn in a
// nested <svg> whose viewBox is in microseconds, so zooming only changes the viewBox; the time
// axis is drawn again for the visible range.
constexpr std::string_view kScript = R"(
(function(){
var NS='http://www.w3.org/2000/svg';
function fmt(s){var a=Math.abs(s);if(a===0)return '0';if(a>=1)return +s.toFixed(3)+' s';if(a>=1e-3)return +(s*1e3).toFixed(3)+' ms';return +(s*1e6).toFixed(3)+' \u00b5s';}
function ticks(lo,hi){var raw=(hi-lo)/8,m=Math.pow(10,Math.floor(Math.log10(raw))),n=raw/m;var st=(n<=1?1:n<=2?2:n<=5?5:10)*m;var out=[];for(var t=Math.ceil(lo/st)*st;t<=hi+st*1e-9;t+=st)out.push(t);return out;}
document.querySelectorAll('svg.timeline').forEach(function(svg){
 var plot=svg.querySelector('svg.tl-plot'),axis=svg.querySelector('g.tl-axis');
 var end=parseFloat(plot.getAttribute('data-end')),h=parseFloat(plot.getAttribute('data-h'));
 var left=parseFloat(plot.getAttribute('x')),pw=parseFloat(plot.getAttribute('width')),ay=parseFloat(axis.getAttribute('data-y'));
 var x0=0,w=end,drag=null;
 function draw(){plot.setAttribute('viewBox',x0+' 0 '+w+' '+h);while(axis.firstChild)axis.removeChild(axis.firstChild);
  ticks(x0,x0+w).forEach(function(t){var x=left+(t-x0)/w*pw;var l=document.createElementNS(NS,'line');l.setAttribute('x1',x);l.setAttribute('x2',x);l.setAttribute('y1',ay);l.setAttribute('y2',ay+4);axis.appendChild(l);
   var tx=document.createElementNS(NS,'text');tx.setAttribute('x',x);tx.setAttribute('y',ay+16);tx.setAttribute('text-anchor','middle');tx.textContent=fmt(t/1e6);axis.appendChild(tx);});}
 function clamp(){w=Math.min(end,Math.max(end*1e-7,w));x0=Math.min(Math.max(0,x0),end-w);}
 plot.addEventListener('wheel',function(e){e.preventDefault();var r=plot.getBoundingClientRect(),f=(e.clientX-r.left)/r.width,t=x0+f*w;w*=e.deltaY<0?0.8:1.25;clamp();x0=t-f*w;clamp();draw();},{passive:false});
 plot.addEventListener('mousedown',function(e){drag={x:e.clientX,x0:x0};});
 window.addEventListener('mousemove',function(e){if(!drag)return;var r=plot.getBoundingClientRect();x0=drag.x0-(e.clientX-drag.x)/r.width*w;clamp();draw();});
 window.addEventListener('mouseup',function(){drag=null;});
 plot.addEventListener('dblclick',function(){x0=0;w=end;draw();});
});
})();
)";

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_number(double value) {
  return fmt::format("{:.3g}", value);
}

std::string format_seconds(double s) {
  const double a = std::abs(s);
  if (a == 0) return "0";
  if (a >= 1) return fmt::format("{:.3g} s", s);
  if (a >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (a >= 1e-6) return fmt::format("{:.3g} \u00b5s", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

std::string format_bytes_decimal(double bytes) {
  const double a = std::abs(bytes);
  if (a >= 1e12) return fmt::format("{:.3g} TB", bytes * 1e-12);
  if (a >= 1e9) return fmt::format("{:.3g} GB", bytes * 1e-9);
  if (a >= 1e6) return fmt::format("{:.3g} MB", bytes * 1e-6);
  if (a >= 1e3) return fmt::format("{:.3g} kB", bytes * 1e-3);
  return fmt::format("{:.3g} B", bytes);
}

std::string format_percent(double fraction) {
  return fmt::format("{:.1f}%", 100 * fraction);
}

std::string bar_chart(const BarChart& c) {
  const std::size_t n = c.categories.size();
  double max = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double stack = 0;
    for (const auto& s : c.series) {
      const double v = i < s.values.size() ? s.values[i] : 0;
      stack = c.stacked ? stack + v : std::max(stack, v);
    }
    max = std::max(max, stack);
    if (i < c.limits.size()) max = std::max(max, c.limits[i]);
  }
  const auto ticks = nice_ticks(max);
  // Category labels are drawn under every bar when there is room, else every k-th.
  const double height = 260;
  const double left = kAxisLeft, right = kWidth - kRight, top = kTop, bottom = height - kBottom;
  const double band = (right - left) / static_cast<double>(std::max<std::size_t>(n, 1));
  std::size_t longest = 1;
  for (const auto& cat : c.categories)
    longest = std::max(longest, cat.size());
  const auto every = static_cast<std::size_t>(
      std::max(1.0, std::ceil(6.2 * static_cast<double>(longest) / std::max(band, 1.0))));
  auto y_of = [&](double v) { return bottom - (bottom - top) * v / ticks.back(); };

  std::string out = figure_open(c.id, c.title);
  out += fmt::format("<svg width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">", px(kWidth),
                     px(height), px(kWidth), px(height));
  out += y_axis(ticks, left, right, top, bottom, c.format, c.y_label);
  const double bar = c.stacked || c.series.empty()
                         ? band * 0.64
                         : band * 0.8 / static_cast<double>(c.series.size());
  for (std::size_t i = 0; i < n; ++i) {
    const double x0 = left + band * static_cast<double>(i) + band * (c.stacked ? 0.18 : 0.1);
    double base = 0;
    for (std::size_t s = 0; s < c.series.size(); ++s) {
      const auto& series = c.series[s];
      const double v = i < series.values.size() ? series.values[i] : 0;
      if (!(v > 0)) continue;
      const double lo = c.stacked ? base : 0;
      const double x = c.stacked ? x0 : x0 + bar * static_cast<double>(s);
      out += fmt::format(
          "<rect class=\"mark\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
          "fill=\"{}\"><title>{} \u00b7 {}: {}</title></rect>",
          px(x), px(y_of(lo + v)), px(bar), px(std::max(0.5, y_of(lo) - y_of(lo + v))),
          escape(series.color), escape(c.categories[i]), escape(series.name), escape(c.format(v)));
      if (c.stacked) base += v;
    }
    if (i < c.limits.size() && c.limits[i] >= 0) {
      const double y = y_of(c.limits[i]);
      out += fmt::format(
          "<line class=\"limit\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"><title>{} \u00b7 {}: "
          "{}</title></line>",
          px(x0 - band * 0.08), px(x0 + (c.stacked ? bar : bar * c.series.size()) + band * 0.08),
          px(y), px(y), escape(c.categories[i]), escape(c.limit_name),
          escape(c.format(c.limits[i])));
    }
    if (i % every == 0) {
      out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                         px(left + band * (static_cast<double>(i) + 0.5)), px(bottom + 15),
                         escape(c.categories[i]));
    }
  }
  out += "</svg>";
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& s : c.series)
    entries.emplace_back(s.name, s.color);
  if (!c.limits.empty()) entries.emplace_back(c.limit_name + " (dashed)", "#000");
  return out + legend(entries) + "</figure>";
}

std::string line_chart(const LineChart& c) {
  double x_lo = INFINITY, x_hi = -INFINITY, y_hi = 0;
  auto xv = [&](double x) { return c.log_x ? std::log2(std::max(x, 1e-300)) : x; };
  for (const auto& s : c.series) {
    for (const auto& p : s.points) {
      x_lo = std::min(x_lo, xv(p.x));
      x_hi = std::max(x_hi, xv(p.x));
      y_hi = std::max(y_hi, p.y);
    }
  }
  if (!(x_hi > x_lo)) {
    x_lo = std::isfinite(x_lo) ? x_lo - 1 : 0;
    x_hi = x_lo + 2;
  }
  const auto ticks = nice_ticks(y_hi);
  const double height = 320;
  const double left = kAxisLeft, right = kWidth - kRight, top = kTop, bottom = height - kBottom;
  auto x_of = [&](double x) { return left + (right - left) * (xv(x) - x_lo) / (x_hi - x_lo); };
  auto y_of = [&](double y) { return bottom - (bottom - top) * y / ticks.back(); };

  std::string out = figure_open(c.id, c.title);
  out += fmt::format("<svg width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">", px(kWidth),
                     px(height), px(kWidth), px(height));
  out += y_axis(ticks, left, right, top, bottom, c.format_y, c.y_label);
  // x ticks: every power of two (log axis) or a nice step, at most about ten.
  out += "<g class=\"axis\">";
  std::vector<double> x_ticks;
  if (c.log_x) {
    const int lo = static_cast<int>(std::ceil(x_lo - 1e-9));
    const int hi = static_cast<int>(std::floor(x_hi + 1e-9));
    const int step = std::max(1, (hi - lo + 9) / 10);
    for (int e = lo; e <= hi; e += step)
      x_ticks.push_back(std::exp2(e));
  } else {
    for (double t : nice_ticks(x_hi, 8))
      if (t >= x_lo && t <= x_hi) x_ticks.push_back(t);
  }
  for (double t : x_ticks) {
    const double x = x_of(t);
    out += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "text-anchor=\"middle\">{}</text>",
        px(x), px(x), px(top), px(bottom), px(x), px(bottom + 15), escape(c.format_x(t)));
  }
  out += fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                     px((left + right) / 2), px(height - 6), escape(c.x_label));
  out += "</g>";
  for (const auto& s : c.series) {
    if (!s.markers_only && s.points.size() > 1) {
      std::string d;
      for (std::size_t i = 0; i < s.points.size(); ++i) {
        d += fmt::format("{}{},{}", i == 0 ? "M" : " L", px(x_of(s.points[i].x)),
                         px(y_of(s.points[i].y)));
      }
      out += fmt::format(
          "<path class=\"mark\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>", d,
          escape(s.color));
    }
    for (const auto& p : s.points) {
      std::string tip = fmt::format("{} \u00b7 {}: {}", s.name, c.format_x(p.x), c.format_y(p.y));
      if (!p.note.empty()) tip += " (" + p.note + ")";
      out += fmt::format(
          "<circle class=\"mark\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"{}><title>{}</title>"
          "</circle>",
          px(x_of(p.x)), px(y_of(p.y)), s.markers_only ? "5" : "3", escape(s.color),
          s.markers_only ? " stroke=\"#000\"" : "", escape(tip));
    }
  }
  out += "</svg>";
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& s : c.series)
    entries.emplace_back(s.name, s.color);
  return out + legend(entries) + "</figure>";
}

std::string heat_map(const HeatMap& c) {
  const double row_h = 16;
  const double left = label_width(c.rows, 120, 360);
  const double right = kWidth - kRight;
  const double top = kTop;
  const double bottom = top + row_h * static_cast<double>(c.rows.size());
  const double height = bottom + 36;
  std::string out = figure_open(c.id, c.title);
  out += fmt::format("<svg width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">", px(kWidth),
                     px(height), px(kWidth), px(height));
  for (std::size_t r = 0; r < c.rows.size(); ++r) {
    const double y = top + row_h * static_cast<double>(r);
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect x=\"{}\" y=\"{}\" "
        "width=\"{}\" height=\"{}\" fill=\"#fafafa\"/>",
        px(left - 6), px(y + row_h - 4), escape(c.rows[r]), px(left), px(y), px(right - left),
        px(row_h - 1));
    const auto& bins = c.values[r];
    const double bin_w =
        (right - left) / static_cast<double>(std::max<std::size_t>(bins.size(), 1));
    const double bin_s = c.end_s / static_cast<double>(std::max<std::size_t>(bins.size(), 1));
    for (std::size_t b = 0; b < bins.size(); ++b) {
      if (!(bins[b] > 0)) continue;
      out += fmt::format(
          "<rect class=\"mark\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>{} \u00b7 {} to {}: {}</title></rect>",
          px(left + bin_w * static_cast<double>(b)), px(y), px(bin_w), px(row_h - 1),
          heat_color(bins[b]), escape(c.rows[r]), escape(format_seconds(bin_s * b)),
          escape(format_seconds(bin_s * (b + 1))), escape(format_percent(bins[b])));
    }
  }
  out += "<g class=\"axis\">" + time_axis(c.end_s, left, right - left, bottom) + "</g></svg>";
  return out +
         legend({{"0%", heat_color(0)},
                 {"25%", heat_color(0.25)},
                 {"50%", heat_color(0.5)},
                 {"75%", heat_color(0.75)},
                 {"100%", heat_color(1)}}) +
         "</figure>";
}

std::vector<TimelineRow> merged_rows(const Timeline& c) {
  std::size_t spans = 0;
  std::vector<double> gaps;  // between neighbours of the same kind
  for (const auto& row : c.rows) {
    spans += row.spans.size();
    for (std::size_t i = 1; i < row.spans.size(); ++i) {
      if (row.spans[i].kind == row.spans[i - 1].kind)
        gaps.push_back(row.spans[i].start_s - row.spans[i - 1].end_s);
    }
  }
  if (spans <= c.max_spans) return c.rows;
  // Merging every gap up to the (spans - max_spans)-th smallest leaves at most max_spans.
  std::sort(gaps.begin(), gaps.end());
  const std::size_t merges = std::min(spans - c.max_spans, gaps.size());
  const double threshold = merges == 0 ? -INFINITY : gaps[merges - 1];
  std::vector<TimelineRow> rows;
  for (const auto& row : c.rows) {
    TimelineRow merged{row.group, row.label, {}};
    std::size_t first = 0;  // the first span of the run being merged
    auto close = [&](std::size_t last) {
      const auto& a = row.spans[first];
      const auto& b = row.spans[last];
      if (first == last) {
        merged.spans.push_back(a);
        return;
      }
      merged.spans.push_back(
          {a.start_s, b.end_s, a.kind, a.label,
           fmt::format("{} operations, {} to {} · {} from {} (zoomed out: a large step's "
                       "neighbours are merged)",
                       last - first + 1, a.label, b.label, format_seconds(b.end_s - a.start_s),
                       format_seconds(a.start_s))});
    };
    for (std::size_t i = 1; i <= row.spans.size(); ++i) {
      if (i < row.spans.size() && row.spans[i].kind == row.spans[i - 1].kind &&
          row.spans[i].start_s - row.spans[i - 1].end_s <= threshold)
        continue;
      if (!row.spans.empty()) close(i - 1);
      first = i;
    }
    rows.push_back(std::move(merged));
  }
  return rows;
}

std::string timeline(const Timeline& c) {
  const double row_h = 13;
  const double group_h = 16;
  std::vector<std::string> labels;
  for (const auto& r : c.rows)
    labels.push_back(r.label);
  const double left = label_width(labels, 90, 200);
  const double right = kWidth - kRight;
  // Row positions: a heading line before each new group.
  std::vector<double> row_y;
  std::vector<std::pair<double, std::string>> groups;
  double y = kTop;
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    if (i == 0 || c.rows[i].group != c.rows[i - 1].group) {
      groups.emplace_back(y, c.rows[i].group);
      y += group_h;
    }
    row_y.push_back(y);
    y += row_h;
  }
  const double plot_h = y;
  const double height = plot_h + 30;
  const double end_us = std::max(c.end_s * 1e6, 1e-6);
  std::string out = figure_open(c.id, c.title);
  out +=
      "<p class=\"hint\">Wheel to zoom, drag to pan, double-click to reset; hover a span for "
      "its details.</p>";
  out += fmt::format("<svg class=\"timeline\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">",
                     px(kWidth), px(height), px(kWidth), px(height));
  // The spans, in microseconds horizontally (the viewBox) and pixels vertically.
  out += fmt::format(
      "<svg class=\"tl-plot\" x=\"{}\" y=\"0\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {:.6f} "
      "{}\" preserveAspectRatio=\"none\" shape-rendering=\"crispEdges\" data-end=\"{:.6f}\" "
      "data-h=\"{}\">",
      px(left), px(right - left), px(plot_h), end_us, px(plot_h), end_us, px(plot_h));
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.6f}\" height=\"{}\" fill=\"#fff\"/>", end_us,
                     px(plot_h));
  const std::vector<TimelineRow> drawn = merged_rows(c);
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    for (const auto& s : drawn[i].spans) {
      const double w = std::max((s.end_s - s.start_s) * 1e6, 0.0);
      out += fmt::format(
          "<rect class=\"mark\" x=\"{:.3f}\" y=\"{}\" width=\"{:.3f}\" height=\"{}\" "
          "fill=\"{}\"><title>{}</title></rect>",
          s.start_s * 1e6, px(row_y[i] + 1), w, px(row_h - 2),
          escape(c.kinds[static_cast<std::size_t>(s.kind)].color), escape(s.detail));
    }
  }
  out += "</svg>";
  // Headings and row labels after the spans, so that no span covers them.
  for (const auto& [gy, name] : groups) {
    out += fmt::format(
        "<text class=\"group\" x=\"4\" y=\"{}\">{}</text><line x1=\"4\" x2=\"{}\" y1=\"{}\" "
        "y2=\"{}\" stroke=\"#ccc\"/>",
        px(gy + group_h - 4), escape(name), px(right), px(gy + group_h - 1), px(gy + group_h - 1));
  }
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", px(left - 6),
                       px(row_y[i] + row_h - 3), escape(c.rows[i].label));
  }
  out += fmt::format("<g class=\"axis tl-axis\" data-y=\"{}\">", px(plot_h + 2));
  out += time_axis(c.end_s, left, right - left, plot_h + 2);
  out += "</g></svg>";
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& k : c.kinds)
    entries.emplace_back(k.name, k.color);
  return out + legend(entries) + "</figure>";
}

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table>";
  if (!header.empty()) {
    out += "<tr>";
    for (const auto& h : header)
      out += "<th>" + escape(h) + "</th>";
    out += "</tr>";
  }
  for (const auto& row : rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i) {
      // A cell that starts with a digit or a sign is a figure: right-aligned.
      const bool figure =
          !row[i].empty() &&
          (std::isdigit(static_cast<unsigned char>(row[i][0])) || row[i][0] == '-') && i > 0;
      out += (figure ? "<td class=\"n\">" : "<td>") + escape(row[i]) + "</td>";
    }
    out += "</tr>";
  }
  return out + "</table>";
}

Page::Page(std::string title) : title_(std::move(title)) {}

void Page::section(std::string_view heading) {
  body_ += "<h2>" + escape(heading) + "</h2>\n";
}

void Page::paragraph(std::string_view text) {
  body_ += "<p>" + escape(text) + "</p>\n";
}

void Page::raw(std::string_view html) {
  body_ += html;
  body_ += '\n';
}

void Page::preformatted(std::string_view text) {
  body_ += "<pre>" + escape(text) + "</pre>\n";
}

std::string Page::str() const {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>" +
      escape(title_) + "</title><style>";
  out += kStyle;
  out += "</style></head><body>\n<h1>" + escape(title_) + "</h1>\n";
  out += body_;
  out += "<script>";
  out += kScript;
  out += "</script></body></html>\n";
  return out;
}

}  // namespace stepsim::output::html
