// The Chrome trace writer produces valid JSON (plain and gzip) with the fields the Trace Event
// Format requires, and exact microsecond timestamps.
#include "sim/output/trace_writer.hpp"

#include <gtest/gtest.h>
#include <zlib.h>
#include <filesystem>
#include <nlohmann/json.hpp>

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

TEST(TraceWriter, WritesValidJsonWithExactTimestamps) {
  for (const char* name : {"trace_test.json", "trace_test.json.gz"}) {
    const fs::path path = fs::temp_directory_path() / name;
    write_sample(path);
    const auto trace = nlohmann::json::parse(read_all(path));
    const auto& events = trace.at("traceEvents");
    ASSERT_EQ(events.size(), 6u);
    EXPECT_EQ(events[0].at("args").at("name"), "rank 0 (node0.gpu0) \"tp0\"");
    const auto& x = events[2];
    EXPECT_EQ(x.at("ph"), "X");
    EXPECT_DOUBLE_EQ(x.at("ts").get<double>(), 1.5);        // 1500 ns
    EXPECT_DOUBLE_EQ(x.at("dur").get<double>(), 2.000001);  // 2,000,001 ps
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
  append_microseconds(out, Time::ps(5));
  EXPECT_EQ(out, "0.000005");
}

}  // namespace
}  // namespace stepsim::output
