// Drives a fuzz harness without libFuzzer (any compiler): runs every file under the given
// directories, then `--mutants N` deterministic mutants of each (fixed seed: the same inputs on
// every run), built from bit flips, byte insertions and deletions, chunk copies and tokens of the
// dictionary (`--dict FILE`, libFuzzer's format). A crash, a sanitizer report or an uncaught
// exception other than InputError fails the run; the input is written to stderr first.
//
//   fuzz_scenario CORPUS_DIR... [--mutants 20] [--dict tests/fuzz/stepsim.dict]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The quoted tokens of a libFuzzer dictionary (`name="token"` or `"token"` lines; \xNN and \\ \"
// escapes).
std::vector<std::string> read_dictionary(const std::filesystem::path& p) {
  std::vector<std::string> tokens;
  std::istringstream in(read(p));
  std::string line;
  while (std::getline(in, line)) {
    const auto open = line.find('"');
    const auto close = line.rfind('"');
    if (line.empty() || line[0] == '#' || open == std::string::npos || close <= open) continue;
    std::string token;
    for (std::size_t i = open + 1; i < close; ++i) {
      if (line[i] == '\\' && i + 1 < close) {
        if (line[i + 1] == 'x' && i + 3 < close) {
          token += static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16));
          i += 3;
        } else {
          token += line[++i];
        }
      } else {
        token += line[i];
      }
    }
    tokens.push_back(token);
  }
  return tokens;
}

std::string mutate(std::string s, std::mt19937_64& random, const std::vector<std::string>& dict) {
  const int edits = 1 + static_cast<int>(random() % 4);
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = s.empty() ? 0 : random() % (s.size() + 1);
    switch (random() % 6) {
      case 0:
        if (!s.empty()) s[std::min(at, s.size() - 1)] ^= static_cast<char>(1u << (random() % 8));
        break;
      case 1:
        s.insert(at, 1, static_cast<char>(random() % 256));
        break;
      case 2:
        if (!s.empty()) s.erase(std::min(at, s.size() - 1), 1 + random() % 8);
        break;
      case 3:
        if (!s.empty()) {
          const std::size_t from = random() % s.size();
          s.insert(at, s.substr(from, 1 + random() % 16));
        }
        break;
      default:
        if (!dict.empty()) s.insert(at, dict[random() % dict.size()]);
        break;
    }
  }
  return s;
}

void run_one(const std::string& input, const std::string& what) {
  // Named before it runs, so that a crash says which input it was.
  std::cerr << "running " << what << " (" << input.size() << " bytes)\n";
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  int mutants = 0;
  std::vector<std::string> dict;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mutants" && i + 1 < argc) {
      mutants = std::stoi(argv[++i]);
    } else if (arg == "--dict" && i + 1 < argc) {
      dict = read_dictionary(argv[++i]);
    } else if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.emplace_back(arg);
    }
  }
  std::sort(files.begin(), files.end());
  std::mt19937_64 random(20261201);
  std::size_t runs = 0;
  for (const auto& f : files) {
    const std::string input = read(f);
    run_one(input, f.string());
    ++runs;
    for (int m = 0; m < mutants; ++m) {
      run_one(mutate(input, random, dict), f.string() + " mutant " + std::to_string(m));
      ++runs;
    }
  }
  std::cout << runs << " inputs from " << files.size() << " corpus files, no failure\n";
  return files.empty() ? 1 : 0;
}
