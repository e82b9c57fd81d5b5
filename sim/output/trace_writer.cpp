#include "sim/output/trace_writer.hpp"

#include <fmt/format.h>
#include <zlib.h>
#include <cmath>
#include <cstdio>

#include "sim/common/input_error.hpp"

namespace stepsim::output {

// Where the bytes go: a plain file or a gzip stream. Both are C handles for speed and because zlib
// offers no C++ stream.
class TraceWriter::Sink {
 public:
  // Writes to `file`'s temporary; gzip when the target's name ends in ".gz".
  explicit Sink(const PendingFile& file) {
    const std::string target = file.target().string();
    const std::string name = file.temporary().string();
    gzip_ = target.size() > 3 && target.ends_with(".gz");
    if (gzip_) {
      gz_ = gzopen(name.c_str(), "wb6");
    } else {
      file_ = std::fopen(name.c_str(), "wb");
    }
    if (gz_ == nullptr && file_ == nullptr) {
      throw InputError(
          fmt::format("cannot write the trace to '{}': the directory does not exist or "
                      "is not writable",
                      target));
    }
  }
  ~Sink() {
    if (gz_ != nullptr) gzclose(gz_);
    if (file_ != nullptr) std::fclose(file_);
  }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  bool write(std::string_view data) {
    if (data.empty()) return true;
    if (gz_ != nullptr) return gzwrite(gz_, data.data(), static_cast<unsigned>(data.size())) > 0;
    return std::fwrite(data.data(), 1, data.size(), file_) == data.size();
  }
  bool finish() {
    bool ok = true;
    if (gz_ != nullptr) ok = gzclose(gz_) == Z_OK;
    if (file_ != nullptr) ok = std::fclose(file_) == 0;
    gz_ = nullptr;
    file_ = nullptr;
    return ok;
  }

 private:
  bool gzip_ = false;
  gzFile gz_ = nullptr;
  std::FILE* file_ = nullptr;
};

namespace {
constexpr std::size_t kFlushBytes = 1 << 20;
}  // namespace

void append_json_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
}

std::int64_t trace_nanoseconds(Time t) {
  const std::int64_t ps = t.picoseconds();
  return ps >= 0 ? (ps + 500) / 1000 : -((-ps + 500) / 1000);
}

namespace {
void append_nanoseconds_as_microseconds(std::string& out, std::int64_t nanoseconds) {
  if (nanoseconds < 0) {
    out += '-';
    nanoseconds = -nanoseconds;
  }
  fmt::format_to(std::back_inserter(out), "{}.{:03}", nanoseconds / 1000, nanoseconds % 1000);
}
}  // namespace

void append_microseconds(std::string& out, Time t) {
  append_nanoseconds_as_microseconds(out, trace_nanoseconds(t));
}

void append_span(std::string& out, Time start, Time duration) {
  const std::int64_t begin_ns = trace_nanoseconds(start);
  const std::int64_t end_ns = trace_nanoseconds(start + duration);
  const std::int64_t duration_ns = end_ns - begin_ns;
  out += "\"ts\":";
  append_nanoseconds_as_microseconds(out, begin_ns);
  out += ",\"dur\":";
  // A viewer reads both numbers as doubles and either adds them (speedscope, in JavaScript) or
  // rounds each to nanoseconds first (Perfetto). The second gives end_ns exactly; the first may
  // land one ulp past the end, on a span that starts there, and the two then nest instead of
  // following each other. Such a duration is written as the largest double that does not pass
  // the end (it still rounds to duration_ns), in the shortest form that reads back as that double.
  const double begin_us = static_cast<double>(begin_ns) / 1000.0;
  const double end_us = static_cast<double>(end_ns) / 1000.0;
  if (begin_us + static_cast<double>(duration_ns) / 1000.0 <= end_us) {
    append_nanoseconds_as_microseconds(out, duration_ns);
    return;
  }
  // end_us - begin_us is exact when begin_us >= end_us / 2 (Sterbenz), and the sum then meets the
  // end; otherwise the difference is above end_us / 2 and each step down moves the sum by at least
  // half an ulp of the end, so the loop ends within a few steps.
  double duration_us = end_us - begin_us;
  while (begin_us + duration_us > end_us)
    duration_us = std::nextafter(duration_us, 0.0);
  fmt::format_to(std::back_inserter(out), "{}", duration_us);
}

TraceWriter::TraceWriter(const std::filesystem::path& path, OutputGuard* guard)
    : file_(std::make_unique<PendingFile>(path, guard)), sink_(std::make_unique<Sink>(*file_)) {
  buffer_.reserve(kFlushBytes + 4096);
  buffer_ += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
}

// A trace that was not closed is incomplete: the sink closes its handle and the PendingFile deletes
// the temporary, leaving any earlier file at the path as it was.
TraceWriter::~TraceWriter() = default;

void TraceWriter::begin_event() {
  if (events_++ > 0) buffer_ += ",\n";
  if (buffer_.size() >= kFlushBytes) {
    write(buffer_);
    buffer_.clear();
  }
}

void TraceWriter::write(std::string_view text) {
  if (!sink_->write(text)) {
    throw InputError(
        fmt::format("writing the trace to '{}' failed (disk full?)", file_->target().string()));
  }
}

void TraceWriter::process_name(int pid, std::string_view name) {
  begin_event();
  fmt::format_to(std::back_inserter(buffer_),
                 "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":\"", pid);
  append_json_escaped(buffer_, name);
  buffer_ += "\"}}";
}

void TraceWriter::process_sort_index(int pid, int index) {
  begin_event();
  fmt::format_to(
      std::back_inserter(buffer_),
      "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}",
      pid, index);
}

void TraceWriter::thread_name(int pid, int tid, std::string_view name) {
  begin_event();
  fmt::format_to(
      std::back_inserter(buffer_),
      "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"", pid,
      tid);
  append_json_escaped(buffer_, name);
  buffer_ += "\"}}";
}

void TraceWriter::thread_sort_index(int pid, int tid, int index) {
  begin_event();
  fmt::format_to(std::back_inserter(buffer_),
                 "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{"
                 "\"sort_index\":{}}}}}",
                 pid, tid, index);
}

void TraceWriter::complete(int pid, int tid, std::string_view name, std::string_view category,
                           Time start, Time duration, const std::vector<TraceArg>& args) {
  begin_event();
  buffer_ += "{\"ph\":\"X\",\"name\":\"";
  append_json_escaped(buffer_, name);
  buffer_ += "\",\"cat\":\"";
  append_json_escaped(buffer_, category);
  fmt::format_to(std::back_inserter(buffer_), "\",\"pid\":{},\"tid\":{},", pid, tid);
  append_span(buffer_, start, duration);
  if (!args.empty()) {
    buffer_ += ",\"args\":{";
    bool first = true;
    for (const auto& arg : args) {
      if (!first) buffer_ += ',';
      first = false;
      buffer_ += '"';
      append_json_escaped(buffer_, arg.key);
      buffer_ += "\":";
      if (const auto* i = std::get_if<std::int64_t>(&arg.value)) {
        fmt::format_to(std::back_inserter(buffer_), "{}", *i);
      } else if (const auto* d = std::get_if<double>(&arg.value)) {
        fmt::format_to(std::back_inserter(buffer_), "{}", *d);
      } else {
        buffer_ += '"';
        append_json_escaped(buffer_, std::get<std::string_view>(arg.value));
        buffer_ += '"';
      }
    }
    buffer_ += '}';
  }
  buffer_ += '}';
}

void TraceWriter::flow_start(int pid, int tid, std::uint64_t id, std::string_view name, Time at) {
  flow_event("{\"ph\":\"s\",\"name\":\"", pid, tid, id, name, at);
}

void TraceWriter::flow_end(int pid, int tid, std::uint64_t id, std::string_view name, Time at) {
  // "bp":"e" binds the arrow's head to the slice that encloses it (the receive).
  flow_event("{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"", pid, tid, id, name, at);
}

void TraceWriter::flow_event(std::string_view head, int pid, int tid, std::uint64_t id,
                             std::string_view name, Time at) {
  begin_event();
  buffer_ += head;
  append_json_escaped(buffer_, name);
  fmt::format_to(std::back_inserter(buffer_),
                 "\",\"cat\":\"flow\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":", id, pid, tid);
  append_microseconds(buffer_, at);
  buffer_ += '}';
}

void TraceWriter::counter(int pid, std::string_view name, std::string_view series, Time at,
                          double value) {
  begin_event();
  buffer_ += "{\"ph\":\"C\",\"name\":\"";
  append_json_escaped(buffer_, name);
  fmt::format_to(std::back_inserter(buffer_), "\",\"pid\":{},\"ts\":", pid);
  append_microseconds(buffer_, at);
  buffer_ += ",\"args\":{\"";
  append_json_escaped(buffer_, series);
  fmt::format_to(std::back_inserter(buffer_), "\":{}}}}}", value);
}

void TraceWriter::close() {
  if (closed_) return;
  closed_ = true;
  buffer_ += "\n]}\n";
  write(buffer_);
  buffer_.clear();
  if (!sink_->finish()) {
    throw InputError(
        fmt::format("finishing the trace '{}' failed (disk full?)", file_->target().string()));
  }
  file_->commit();
}

}  // namespace stepsim::output
