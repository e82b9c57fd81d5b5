// A scenario file: YAML syntax, includes, every section's keys and values, the layout against the
// topology. A scenario that loads and is small (at most 64 accelerators, 8 micro-batches per
// replica, 8 layers) is also generated and simulated, so that the generator and the executor see
// what the loader lets through.
#include "sim/run/simulate.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  const auto path = fuzz::write_input("scenario.yaml", fuzz::as_text(data, size));
  fuzz::expect_handled([&] {
    const Scenario s = load_scenario(path, {});
    if (s.topology.accelerators().size() <= 64 && s.workload.micro_batches() <= 8 &&
        s.workload.model.layers <= 8) {
      (void)simulate_step(s);
    }
  });
  return 0;
}
