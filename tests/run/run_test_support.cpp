#include "tests/run/run_test_support.hpp"

#include <gtest/gtest.h>
#include <zlib.h>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sim/cli/cli.hpp"

namespace stepsim::testing {

CliResult run_stepsim(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = cli::run(args, out, err);
  return {code, out.str(), err.str()};
}

std::string read_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  if (name.ends_with(".gz")) {
    gzFile gz = gzopen(name.c_str(), "rb");
    if (gz == nullptr) throw std::runtime_error("cannot open " + name);
    std::string data;
    char buffer[1 << 16];
    int n = 0;
    while ((n = gzread(gz, buffer, sizeof buffer)) > 0)
      data.append(buffer, static_cast<std::size_t>(n));
    const bool ok = n == 0;
    gzclose(gz);
    if (!ok) throw std::runtime_error("bad gzip data in " + name);
    return data;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + name);
  std::ostringstream data;
  data << in.rdbuf();
  return data.str();
}

std::filesystem::path output_path(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir = std::filesystem::path(STEPSIM_BINARY_DIR) / "tests/run/output";
  std::filesystem::create_directories(dir);
  auto path = dir / (std::string(info->test_suite_name()) + "." + info->name() + "." + suffix);
  std::filesystem::remove(path);
  return path;
}

std::string source_file(const std::string& relative) {
  return std::string(STEPSIM_SOURCE_DIR) + "/" + relative;
}

}  // namespace stepsim::testing
