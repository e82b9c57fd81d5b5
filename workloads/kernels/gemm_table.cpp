#include "workloads/kernels/gemm_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "sim/common/input_error.hpp"

namespace stepsim::workloads::kernels {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Fields split at commas; a field in double quotes may hold commas ("" is a quote inside it).
std::vector<std::string> split_fields(std::string_view line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back(trim(field));
      field.clear();
    } else {
      field += c;
    }
  }
  out.emplace_back(trim(field));
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::optional<GemmDtype> dtype_of(std::string_view text) {
  const std::string t = lower(text);
  if (t == "bf16") return GemmDtype::kBf16;
  if (t == "fp8" || t == "f8e4m3fn" || t == "f8e4m3" || t == "e4m3" || t == "fp8e4m3") {
    return GemmDtype::kFp8;
  }
  if (t == "tf32" || t == "f32") return GemmDtype::kTf32;
  return std::nullopt;
}

struct Columns {
  int m = -1, n = -1, k = -1, batch = -1, dtype = -1, lhs = -1, rhs = -1;
  int time = -1;
  double time_scale_s = 0;  // seconds per unit of a plain time column; 0: `time` with its unit
  std::string time_name = "time";
};

std::array<std::int64_t, 3> key_of(const GemmShape& s) {
  return {s.m, s.n, s.k};
}

// The bracket of `x` in the sorted axis: indices (lo, hi) with axis[lo] <= x <= axis[hi].
std::optional<std::pair<std::size_t, std::size_t>> bracket(const std::vector<std::int64_t>& axis,
                                                           std::int64_t x) {
  if (axis.empty() || x < axis.front() || x > axis.back()) return std::nullopt;
  const auto it = std::lower_bound(axis.begin(), axis.end(), x);
  const auto hi = static_cast<std::size_t>(it - axis.begin());
  if (*it == x) return std::pair{hi, hi};
  return std::pair{hi - 1, hi};
}

}  // namespace

std::vector<GemmTableRow> parse_gemm_csv_rows(std::string_view text, std::string_view source_name) {
  std::vector<GemmTableRow> rows;
  std::optional<Columns> cols;
  std::size_t header_fields = 0;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t eol = text.find('\n', pos);
    const std::string_view raw =
        text.substr(pos, eol == std::string_view::npos ? text.npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
    ++line_no;
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string> f = split_fields(line);
    if (!cols) {
      Columns c;
      int time_with_unit = -1;
      int time_plain = -1;
      double plain_scale = 0;
      for (std::size_t i = 0; i < f.size(); ++i) {
        const std::string name = lower(f[i]);
        const int idx = static_cast<int>(i);
        if (name == "m") c.m = idx;
        if (name == "n") c.n = idx;
        if (name == "k") c.k = idx;
        if (name == "b" || name == "batch") c.batch = idx;
        if (name == "dtype") c.dtype = idx;
        if (name == "lhs_dtype") c.lhs = idx;
        if (name == "rhs_dtype") c.rhs = idx;
        if (name == "time") time_with_unit = idx;
        if (name == "time_ns") time_plain = idx, plain_scale = 1e-9;
        if (name == "time_us") time_plain = idx, plain_scale = 1e-6;
        if (name == "time_s") time_plain = idx, plain_scale = 1.0;
      }
      if (time_with_unit >= 0) {
        c.time = time_with_unit;
      } else if (time_plain >= 0) {
        c.time = time_plain;
        c.time_scale_s = plain_scale;
        c.time_name = lower(f[static_cast<std::size_t>(time_plain)]);
      }
      const auto require = [&](int idx, std::string_view what) {
        if (idx < 0) {
          throw InputError(fmt::format("{}:{}: the header has no column '{}' (columns: {})",
                                       source_name, line_no, what, line));
        }
      };
      require(c.m, "m");
      require(c.n, "n");
      require(c.k, "k");
      require(c.time, "time");
      if (c.dtype < 0 && (c.lhs < 0 || c.rhs < 0)) require(c.dtype, "dtype");
      cols = c;
      header_fields = f.size();
      continue;
    }
    if (f.size() != header_fields) {
      throw InputError(fmt::format("{}:{}: {} fields where the header has {}", source_name, line_no,
                                   f.size(), header_fields));
    }
    const auto field = [&](int idx) -> std::string_view {
      return f[static_cast<std::size_t>(idx)];
    };
    const auto bad = [&](std::string_view column, std::string_view value,
                         std::string_view expected) {
      return InputError(fmt::format("{}:{}: column '{}': '{}' is not {}", source_name, line_no,
                                    column, value, expected));
    };
    const auto positive_int = [&](int idx, std::string_view column) {
      const std::string_view v = field(idx);
      std::int64_t x = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (ec != std::errc() || end != v.data() + v.size() || x <= 0) {
        throw bad(column, v, "a positive integer");
      }
      return x;
    };
    GemmTableRow row;
    row.line = line_no;
    row.shape.m = positive_int(cols->m, "m");
    row.shape.n = positive_int(cols->n, "n");
    row.shape.k = positive_int(cols->k, "k");
    row.shape.batch = cols->batch >= 0 ? positive_int(cols->batch, "batch") : 1;
    if (cols->dtype >= 0) {
      const auto d = dtype_of(field(cols->dtype));
      if (!d) throw bad("dtype", field(cols->dtype), "one of bf16, fp8, tf32");
      row.dtype = *d;
    } else {
      const auto l = dtype_of(field(cols->lhs));
      const auto r = dtype_of(field(cols->rhs));
      if (lower(field(cols->lhs)) != lower(field(cols->rhs))) continue;  // mixed inputs
      if (!l) throw bad("lhs_dtype", field(cols->lhs), "one of bf16, fp8 (f8e4m3fn), tf32 (f32)");
      if (!r) throw bad("rhs_dtype", field(cols->rhs), "one of bf16, fp8 (f8e4m3fn), tf32 (f32)");
      row.dtype = *l;
    }
    const std::string_view tv = field(cols->time);
    const std::string_view time_column = cols->time_name;
    if (cols->time_scale_s == 0) {
      try {
        row.time = parse_time(tv);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}:{}: column 'time': {}", source_name, line_no, e.what()));
      }
    } else {
      double x = 0;
      const auto [end, ec] = std::from_chars(tv.data(), tv.data() + tv.size(), x);
      if (ec != std::errc() || end != tv.data() + tv.size() || !(x > 0) || !std::isfinite(x)) {
        throw bad(time_column, tv, "a positive number");
      }
      row.time = Time::from_seconds(x * cols->time_scale_s);
    }
    if (row.time <= Time::zero()) throw bad(time_column, tv, "a positive time");
    rows.push_back(row);
  }
  if (!cols) throw InputError(fmt::format("{}: no header line", source_name));
  return rows;
}

GemmTable GemmTable::from_csv(std::string_view text, std::string_view source_name) {
  return GemmTable(parse_gemm_csv_rows(text, source_name), std::string(source_name));
}

GemmTable::GemmTable(std::vector<GemmTableRow> rows, std::string source_name)
    : rows_(std::move(rows)), source_name_(std::move(source_name)) {
  for (const GemmTableRow& r : rows_) {
    Grid& g = grids_[{r.dtype, r.shape.batch}];
    if (!g.time_at.emplace(key_of(r.shape), r.time).second) {
      throw InputError(fmt::format("{}:{}: a second row for m={} n={} k={} batch={} {}",
                                   source_name_, r.line, r.shape.m, r.shape.n, r.shape.k,
                                   r.shape.batch, to_string(r.dtype)));
    }
  }
  for (auto& [key, g] : grids_) {
    std::set<std::int64_t> m, n, k;
    for (const auto& [mnk, t] : g.time_at) {
      m.insert(mnk[0]);
      n.insert(mnk[1]);
      k.insert(mnk[2]);
    }
    g.m.assign(m.begin(), m.end());
    g.n.assign(n.begin(), n.end());
    g.k.assign(k.begin(), k.end());
  }
}

std::optional<Time> GemmTable::lookup(const GemmShape& shape, GemmDtype dtype) const {
  const auto it = grids_.find({dtype, shape.batch});
  if (it == grids_.end()) return std::nullopt;
  const Grid& g = it->second;
  const auto bm = bracket(g.m, shape.m);
  const auto bn = bracket(g.n, shape.n);
  const auto bk = bracket(g.k, shape.k);
  if (!bm || !bn || !bk) return std::nullopt;
  if (bm->first == bm->second && bn->first == bn->second && bk->first == bk->second) {
    const auto t = g.time_at.find({shape.m, shape.n, shape.k});
    if (t == g.time_at.end()) return std::nullopt;
    return t->second;
  }
  // Weights in log2 of each axis; a degenerate bracket has weight 0 on its upper corner.
  const auto weight = [](const std::vector<std::int64_t>& axis,
                         std::pair<std::size_t, std::size_t> b, std::int64_t x) {
    if (b.first == b.second) return 0.0;
    const double lo = std::log2(static_cast<double>(axis[b.first]));
    const double hi = std::log2(static_cast<double>(axis[b.second]));
    return (std::log2(static_cast<double>(x)) - lo) / (hi - lo);
  };
  const double w[3] = {weight(g.m, *bm, shape.m), weight(g.n, *bn, shape.n),
                       weight(g.k, *bk, shape.k)};
  const std::pair<std::size_t, std::size_t> br[3] = {*bm, *bn, *bk};
  const std::vector<std::int64_t>* axes[3] = {&g.m, &g.n, &g.k};
  double log_time = 0;
  for (int corner = 0; corner < 8; ++corner) {
    std::array<std::int64_t, 3> at{};
    double cw = 1;
    for (int a = 0; a < 3; ++a) {
      const bool upper = ((corner >> a) & 1) != 0;
      if (upper && br[a].first == br[a].second) {
        cw = 0;
        break;
      }
      at[static_cast<std::size_t>(a)] = (*axes[a])[upper ? br[a].second : br[a].first];
      cw *= upper ? w[a] : 1 - w[a];
    }
    if (cw == 0) continue;
    const auto t = g.time_at.find(at);
    if (t == g.time_at.end()) return std::nullopt;
    log_time += cw * std::log(t->second.seconds());
  }
  return Time::from_seconds(std::exp(log_time));
}

GemmTable GemmTable::without_rows_faster_than(GemmDtype dtype, double flops_per_s) const {
  std::vector<GemmTableRow> kept;
  for (const GemmTableRow& r : rows_) {
    if (r.dtype != dtype || r.flops_per_s() <= flops_per_s) kept.push_back(r);
  }
  return GemmTable(std::move(kept), source_name_);
}

GemmTable GemmTable::without_rows_faster_than_reference(GemmDtype dtype, GemmDtype reference,
                                                        double factor) const {
  std::map<std::pair<GemmShape, GemmDtype>, double> rate;
  for (const GemmTableRow& r : rows_)
    rate[{r.shape, r.dtype}] = r.flops_per_s();
  std::vector<GemmTableRow> kept;
  for (const GemmTableRow& r : rows_) {
    const auto ref = rate.find({r.shape, reference});
    if (r.dtype != dtype || ref == rate.end() || r.flops_per_s() <= factor * ref->second) {
      kept.push_back(r);
    }
  }
  return GemmTable(std::move(kept), source_name_);
}

GemmTable without_unreliable_sm90_fp8_rows(const GemmTable& sm_90) {
  constexpr double kH100DenseFp8FlopsPerS = 1979e12;
  return sm_90.without_rows_faster_than(GemmDtype::kFp8, kH100DenseFp8FlopsPerS)
      .without_rows_faster_than_reference(GemmDtype::kFp8, GemmDtype::kBf16, 2.0);
}

}  // namespace stepsim::workloads::kernels
