// A small deterministic mutation fuzz: a few hundred mutants of examples/quickstart.yaml and of
// examples/topologies/h800-cluster.yaml (a value replaced by a bad one, a line deleted or doubled,
// the text cut short, a tab or a YAML character put in), each run through the program in-process.
// Every one must end with exit code 0, or 2 and a message; a crash, an internal error (1) or a
// sanitizer report in the ASan build fails the test. The seed is fixed, so the mutants are the
// same on every run; the draws use the raw std::mt19937_64 output, which the standard specifies.
#include <gtest/gtest.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.hpp"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Where values start and end: after "key: " up to a comma, a bracket, a comment or the line end.
std::vector<std::pair<std::size_t, std::size_t>> value_spans(const std::string& text) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] == '#') {  // a comment: skip to the line end
      while (i < text.size() && text[i] != '\n')
        ++i;
      continue;
    }
    if (text[i] != ':' || text[i + 1] != ' ') continue;
    std::size_t begin = i + 2;
    while (begin < text.size() && text[begin] == ' ')
      ++begin;
    std::size_t end = begin;
    while (end < text.size() && std::string_view(",}]#\n").find(text[end]) == std::string::npos)
      ++end;
    if (end > begin && text[begin] != '{' && text[begin] != '[') spans.emplace_back(begin, end);
  }
  return spans;
}

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

  std::string mutate(const std::string& text) {
    const auto spans = value_spans(text);
    std::string out = text;
    switch (pick(6)) {
      case 0:
      case 1: {  // a value replaced by a bad one
        static const std::vector<std::string> kBad{
            "''",   "0",        "-1",        "1e308",
            "nan",  "inf",      "-0",        "18446744073709551616",
            "1e30", "banana",   "[1, 2]",    "{a: 1}",
            "~",    "8 XB",     "-8 GiB",    "1e400 GB/s",
            "0 s",  "8",        "0.5",       "true",
            "1.5B", "dgx-h999", "llama3-9b", "h999",
            "'  '", "0x10",     "1_000",     "9223372036854775807"};
        const auto [begin, end] = spans[pick(spans.size())];
        out.replace(begin, end - begin, kBad[pick(kBad.size())]);
        break;
      }
      case 2:
      case 3: {  // a line deleted or doubled
        const auto lines = line_starts(text);
        const std::size_t l = pick(lines.size());
        const std::size_t begin = lines[l];
        const std::size_t end = l + 1 < lines.size() ? lines[l + 1] : text.size();
        if (pick(2) == 0)
          out.erase(begin, end - begin);
        else
          out.insert(end, text.substr(begin, end - begin));
        break;
      }
      case 4:  // cut short
        out.resize(pick(text.size()));
        break;
      default: {  // one character replaced by a tab or a YAML character
        static const std::string kChars = "\t:{}[],&*!|>'\"%@`#-?0 \n";
        out[pick(out.size())] = kChars[pick(kChars.size())];
        break;
      }
    }
    return out;
  }

 private:
  std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  static std::vector<std::size_t> line_starts(const std::string& text) {
    std::vector<std::size_t> starts{0};
    for (std::size_t i = 0; i + 1 < text.size(); ++i)
      if (text[i] == '\n') starts.push_back(i + 1);
    return starts;
  }
  std::mt19937_64 rng_;
};

// Runs `count` mutants of `source` through `command FILE`; every exit code must be 0 or 2.
void run_mutants(const fs::path& source, const std::string& command, int count,
                 std::uint64_t seed) {
  const std::string text = read(source);
  ASSERT_FALSE(text.empty()) << source;
  Mutator mutator(seed);
  const fs::path file =
      fs::temp_directory_path() / ("stepsim_mutant_" + command + source.extension().string());
  int exit_2 = 0;
  for (int i = 0; i < count; ++i) {
    const std::string mutant = mutator.mutate(text);
    std::ofstream(file, std::ios::binary) << mutant;
    std::ostringstream out, err;
    const int code = cli::run({command, file.string()}, out, err);
    EXPECT_TRUE(code == 0 || code == 2) << "mutant " << i << " exited " << code << "\n"
                                        << err.str() << "\n--- mutant:\n"
                                        << mutant;
    if (code == 2) {
      ++exit_2;
      EXPECT_NE(err.str().find("error"), std::string::npos)
          << "mutant " << i << ": exit 2 without a message\n--- mutant:\n"
          << mutant;
    }
  }
  fs::remove(file);
  EXPECT_GT(exit_2, count / 4) << "most mutants should be refused; are they mutated at all?";
}

TEST(Mutation, QuickstartScenario) {
  run_mutants(fs::path(STEPSIM_SOURCE_DIR) / "examples/quickstart.yaml", "check", 300, 1);
}

TEST(Mutation, TopologyFile) {
  run_mutants(fs::path(STEPSIM_SOURCE_DIR) / "examples/topologies/h800-cluster.yaml", "topo", 150,
              2);
}

}  // namespace
}  // namespace stepsim
