// Units in text: sizes, bandwidths, times and FLOP rates, as every YAML value and option reads
// them. The bytes are the text; every parser must return a value or throw InputError.
#include "sim/common/units.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "workloads/device.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stepsim;
  const std::string_view text = fuzz::as_text(data, size);
  fuzz::expect_handled([&] { (void)format_bytes(parse_bytes(text)); });
  fuzz::expect_handled([&] { (void)format_bandwidth(parse_bandwidth(text)); });
  fuzz::expect_handled([&] { (void)format_time(parse_time(text)); });
  (void)workloads::parse_flop_rate(text);
  return 0;
}
