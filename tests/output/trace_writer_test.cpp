// The Chrome trace writer produces valid JSON (plain and gzip) with the fields the Trace Event
// Format requires, and timestamps in whole nanoseconds whose spans follow each other in a viewer as
// they do in the simulation.
#include "sim/output/trace_writer.hpp"

#include <gtest/gtest.h>
#include <zlib.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "sim/common/input_error.hpp"

namespace stepsim::output {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  gzFile f = gzopen(path.string().c_str(), "rb");  // reads plain files too
  std::string text;
  char buf[4096];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0)
    text.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return text;
}

void write_sample(const fs::path& path) {
  TraceWriter w(path);
  w.process_name(0, "rank 0 (node0.gpu0) \"tp0\"");
  w.thread_name(0, 1, "compute");
  w.complete(0, 1, "fwd L0", "compute", Time::ns(1500), Time::ps(2'000'001),
             {{"layer", std::int64_t{0}}, {"flops", 1.5e12}, {"algo", std::string_view("ring")}});
  w.flow_start(0, 2, 7, "send", Time::us(3));
  w.flow_end(1, 2, 7, "send", Time::us(4));
  w.counter(100, "leaf0 -> spine1", "utilization", Time::us(5), 0.75);
  w.close();
  EXPECT_EQ(w.events_written(), 6u);
}

TEST(TraceWriter, WritesValidJsonWithNanosecondTimestamps) {
  for (const char* name : {"trace_test.json", "trace_test.json.gz"}) {
    const fs::path path = fs::temp_directory_path() / name;
    write_sample(path);
    const auto trace = nlohmann::json::parse(read_all(path));
    const auto& events = trace.at("traceEvents");
    ASSERT_EQ(events.size(), 6u);
    EXPECT_EQ(events[0].at("args").at("name"), "rank 0 (node0.gpu0) \"tp0\"");
    const auto& x = events[2];
    EXPECT_EQ(x.at("ph"), "X");
    EXPECT_DOUBLE_EQ(x.at("ts").get<double>(), 1.5);  // 1500 ns
    // It ends at 3,500,001 ps, which rounds to 3,500 ns.
    EXPECT_DOUBLE_EQ(x.at("dur").get<double>(), 2.0);
    EXPECT_EQ(x.at("args").at("algo"), "ring");
    EXPECT_EQ(events[3].at("id"), events[4].at("id"));
    EXPECT_EQ(events[4].at("bp"), "e");
    EXPECT_DOUBLE_EQ(events[5].at("args").at("utilization").get<double>(), 0.75);
    fs::remove(path);
  }
}

TEST(TraceWriter, SameEventsSameBytes) {
  const fs::path a = fs::temp_directory_path() / "trace_a.json.gz";
  const fs::path b = fs::temp_directory_path() / "trace_b.json.gz";
  write_sample(a);
  write_sample(b);
  EXPECT_EQ(read_all(a), read_all(b));
  fs::remove(a);
  fs::remove(b);
}

TEST(TraceWriter, UnwritablePathIsAnInputError) {
  EXPECT_THROW(TraceWriter("/nonexistent-dir/trace.json"), InputError);
}

TEST(TraceWriter, EscapesControlCharacters) {
  std::string out;
  append_json_escaped(out, std::string("a\x01\"\\\n", 5));
  EXPECT_EQ(out, "a\\u0001\\\"\\\\\\n");
  out.clear();
  append_microseconds(out, Time::ps(12'345'500));
  EXPECT_EQ(out, "12.346");
  out.clear();
  append_microseconds(out, Time::ps(499));
  EXPECT_EQ(out, "0.000");
}

struct ParsedSpan {
  double ts_us = 0;
  double dur_us = 0;
};

ParsedSpan parse_span(const std::string& text) {  // "ts":A,"dur":B
  const auto ts = text.find("\"ts\":") + 5;
  const auto dur = text.find("\"dur\":") + 6;
  return {std::strtod(text.c_str() + ts, nullptr), std::strtod(text.c_str() + dur, nullptr)};
}

// Perfetto's JSON importer turns a timestamp in microseconds into nanoseconds with
// llround(value * 1000) (src/trace_processor/importers/json, CoerceToTs).
std::int64_t perfetto_ns(double us) {
  return std::llround(us * 1000.0);
}

// An operation of the quickstart's trace, rank 0's MLP up-projection, and the one after it: with
// picosecond timestamps, 2633.402171 + 491.38659 passes 3124.788761 in double arithmetic, and
// speedscope nested every later operation of the rank under it (its compute track summed to the
// whole step, 1.51 s, instead of 1.11 s of operations).
TEST(TraceWriter, SpanEndingWhereTheNextBeginsDoesNotOverlapIt) {
  const Time start = Time::ps(2'633'402'171);
  const Time duration = Time::ps(491'386'590);
  EXPECT_GT(2633.402171 + 491.38659, 3124.788761);  // what the picosecond form gave
  std::string span;
  append_span(span, start, duration);
  std::string next;
  append_span(next, start + duration, Time::ns(100));
  const ParsedSpan a = parse_span(span);
  const ParsedSpan b = parse_span(next);
  EXPECT_LE(a.ts_us + a.dur_us, b.ts_us) << span << " then " << next;
  EXPECT_EQ(perfetto_ns(a.ts_us) + perfetto_ns(a.dur_us), perfetto_ns(b.ts_us));
}

// Back-to-back spans at random picosecond boundaries, up to ten hours in: in every viewer's
// arithmetic each ends at or before the next begins, Perfetto's nanoseconds meet exactly, and the
// duration is the true one to within the rounding of its two ends (1 ns).
TEST(TraceWriter, BackToBackSpansStayBackToBackInTheViewer) {
  std::mt19937_64 rng(20261202);
  std::uniform_int_distribution<std::int64_t> start_ps(0, 36'000'000'000'000'000LL);
  std::uniform_int_distribution<std::int64_t> duration_ps(1, 10'000'000'000LL);
  int shortened = 0;
  for (int chain = 0; chain < 2000; ++chain) {
    Time at = Time::ps(start_ps(rng));
    std::string previous;
    for (int i = 0; i < 10; ++i) {
      const Time duration = Time::ps(duration_ps(rng));
      std::string span;
      append_span(span, at, duration);
      if (span.size() - span.rfind('.') != 4) ++shortened;  // not whole nanoseconds
      const ParsedSpan s = parse_span(span);
      EXPECT_NEAR(s.dur_us * 1e6, static_cast<double>(duration.picoseconds()), 1000.0) << span;
      if (!previous.empty()) {
        const ParsedSpan p = parse_span(previous);
        ASSERT_LE(p.ts_us + p.dur_us, s.ts_us) << previous << " then " << span;
        ASSERT_EQ(perfetto_ns(p.ts_us) + perfetto_ns(p.dur_us), perfetto_ns(s.ts_us))
            << previous << " then " << span;
      }
      previous = span;
      at = at + duration;
    }
  }
  EXPECT_GT(shortened, 0);  // the case arises, so the branch that handles it is exercised
}

}  // namespace
}  // namespace stepsim::output
