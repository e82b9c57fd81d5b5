// A streaming writer of the Chrome trace event format (the JSON that Perfetto and chrome://tracing
// open): processes and threads with names, complete events ("X") with arguments, flow arrows
// ("s"/"f") and counters ("C"). Events go to disk as they are written, never held in memory; a file
// name ending in ".gz" is gzip-compressed. Timestamps are simulated Time rounded to whole
// nanoseconds, written in microseconds by integer arithmetic, so the same events give the same
// bytes; a span's end is rounded, not its duration, so that a span that ends where the next begins
// still does so in the viewer (Perfetto rounds every timestamp to nanoseconds; see append_span).
//
// Format reference: "Trace Event Format" (Google, 2016), sections Duration/Complete events, Flow
// events, Counter events and Metadata events.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/common/units.hpp"
#include "sim/output/atomic_output.hpp"

namespace stepsim::output {

// One argument shown in the event's details pane.
struct TraceArg {
  std::string_view key;
  std::variant<std::int64_t, double, std::string_view> value;
};

class TraceWriter {
 public:
  // Starts writing the trace of `path` (gzip when it ends in ".gz") into a temporary file beside
  // it; close() renames it into place. Throws InputError when the directory is not writable.
  explicit TraceWriter(const std::filesystem::path& path, OutputGuard* guard = nullptr);
  // Without close(), deletes the temporary: an interrupted or failed run leaves no partial trace.
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void process_name(int pid, std::string_view name);
  void process_sort_index(int pid, int index);
  void thread_name(int pid, int tid, std::string_view name);
  void thread_sort_index(int pid, int tid, int index);

  // A span [start, start + duration) on thread (pid, tid).
  void complete(int pid, int tid, std::string_view name, std::string_view category, Time start,
                Time duration, const std::vector<TraceArg>& args = {});
  // A flow arrow from a point on (pid, tid) at `at` to another; `id` pairs the two ends and must be
  // unique per arrow. The end binds to the enclosing slice ("bp":"e").
  void flow_start(int pid, int tid, std::uint64_t id, std::string_view name, Time at);
  void flow_end(int pid, int tid, std::uint64_t id, std::string_view name, Time at);
  // A value of the counter track `name` of process `pid` from `at` on.
  void counter(int pid, std::string_view name, std::string_view series, Time at, double value);

  // Writes the closing bracket, flushes and renames the file into place; throws InputError when
  // the data could not be written (disk full).
  void close();

  std::uint64_t events_written() const { return events_; }

 private:
  class Sink;
  void begin_event();
  // One end of a flow arrow; `head` opens the event up to its name.
  void flow_event(std::string_view head, int pid, int tid, std::uint64_t id, std::string_view name,
                  Time at);
  void write(std::string_view text);
  std::unique_ptr<PendingFile> file_;  // declared first: destroyed after the sink closes its handle
  std::unique_ptr<Sink> sink_;
  std::string buffer_;
  std::uint64_t events_ = 0;
  bool closed_ = false;
};

// Appends `text` to `out` as the inside of a JSON string (quotes, backslashes, control characters
// escaped).
void append_json_escaped(std::string& out, std::string_view text);
// A Time rounded to the nearest nanosecond (halves away from zero), as the trace writes it.
std::int64_t trace_nanoseconds(Time t);
// Appends a Time as microseconds with three decimals, whole nanoseconds ("12.346" for 12,345.5 ns).
void append_microseconds(std::string& out, Time t);
// Appends `"ts":START,"dur":DURATION` for the span [start, start + duration): the start and the
// end rounded to nanoseconds, and a duration such that start + duration, added as doubles, never
// passes the rounded end.
void append_span(std::string& out, Time start, Time duration);

}  // namespace stepsim::output
