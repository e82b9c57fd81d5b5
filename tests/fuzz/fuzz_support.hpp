// What the fuzz harnesses share. Each harness defines LLVMFuzzerTestOneInput: libFuzzer drives it
// in a clang build (-DSTEPSIM_FUZZ=ON, scripts/fuzz.sh), and replay_main.cpp drives it in every
// other build, over the committed corpus and a fixed number of deterministic mutants per entry
// (the ctest label `fuzz`). An input is handled when it returns or throws InputError (bad input
// with a message); anything else (a crash, a sanitizer report, another exception) is a bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "sim/common/input_error.hpp"

namespace stepsim::fuzz {

// A private directory for the files a harness writes (inputs that loaders read by path), made
// once per process.
inline const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "stepsim-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    return std::filesystem::path(pattern);
  }();
  return dir;
}

inline std::filesystem::path write_input(const std::string& name, std::string_view data) {
  const std::filesystem::path path = work_dir() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(data.data(), static_cast<long>(data.size()));
  return path;
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `f`, accepting InputError: the contract for any input is "a result or a clear message".
template <class F>
void expect_handled(F&& f) {
  try {
    f();
  } catch (const InputError&) {
  }
}

}  // namespace stepsim::fuzz
