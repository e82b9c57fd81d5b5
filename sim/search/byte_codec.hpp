// Bytes between the processes of a distributed search: integers and doubles bit for bit (the
// host's byte order; every process runs the same binary) and length-prefixed strings. ByteReader
// throws std::runtime_error (a bug, not bad input) when the bytes run out or are left over.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "sim/common/units.hpp"

namespace stepsim::search {

class ByteWriter {
 public:
  template <class T>
  void raw(T value) {
    static_assert(std::is_arithmetic_v<T>);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.append(bytes, sizeof(T));
  }
  void text(std::string_view s) {
    raw<std::uint64_t>(s.size());
    out_.append(s);
  }
  void time(Time t) { raw<std::int64_t>(t.picoseconds()); }
  void bytes(Bytes b) { raw<std::int64_t>(b.count()); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  template <class T>
  T raw() {
    static_assert(std::is_arithmetic_v<T>);
    need(sizeof(T));
    T value;
    std::memcpy(&value, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string text() {
    const auto n = raw<std::uint64_t>();
    need(n);
    std::string s(in_.substr(at_, n));
    at_ += n;
    return s;
  }
  Time time() { return Time::ps(raw<std::int64_t>()); }
  Bytes bytes() { return Bytes(raw<std::int64_t>()); }
  // An element count: each element takes at least one byte of what is left.
  std::size_t count() {
    const auto n = raw<std::uint64_t>();
    need(n);
    return static_cast<std::size_t>(n);
  }
  bool done() const { return at_ == in_.size(); }
  void finish() const {
    if (at_ != in_.size()) fail();
  }

 private:
  void need(std::uint64_t n) const {
    if (n > in_.size() - at_) fail();
  }
  [[noreturn]] static void fail() {
    throw std::runtime_error(
        "stepsim search: a step report received from another process is "
        "not one this build encodes (a bug)");
  }
  std::string_view in_;
  std::size_t at_ = 0;
};

}  // namespace stepsim::search
