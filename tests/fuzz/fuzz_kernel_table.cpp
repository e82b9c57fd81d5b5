// A kernel table (`compute.kernel_times: FILE`, rows {op, phase, time}) read by a scenario that
// names it; the scenario is the quickstart's layout on one small node.
#include "sim/scenario/scenario.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  fuzz::write_input("kernels.yaml", fuzz::as_text(data, size));
  static const auto scenario = fuzz::write_input("kernel-scenario.yaml", R"(name: kernels
topology: dgx-h100
model: llama3-8b
parallelism: {tp: 8, pp: 1, dp: 1}
training: {seq_len: 2048, micro_batch: 1, global_batch: 1}
compute: {device: h100, kernel_times: kernels.yaml}
)");
  fuzz::expect_handled([&] { (void)load_scenario(scenario, {}); });
  return 0;
}
