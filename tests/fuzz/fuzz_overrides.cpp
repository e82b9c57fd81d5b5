// `-o KEY.PATH=VALUE` overrides on a valid scenario (tests/inputs/good/pipeline.yaml): the input
// is split at newlines into overrides, applied in order, then the scenario is validated.
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  std::vector<std::string> overrides(1);
  for (char c : fuzz::as_text(data, size)) {
    if (c == '\n') {
      overrides.emplace_back();
    } else {
      overrides.back() += c;
    }
  }
  fuzz::expect_handled([&] {
    (void)load_scenario(std::string(STEPSIM_SOURCE_DIR) + "/tests/inputs/good/pipeline.yaml",
                        overrides);
  });
  return 0;
}
