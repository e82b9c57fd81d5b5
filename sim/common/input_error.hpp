// The one exception type for bad user input: a malformed file, a bad value, an impossible layout.
// The message names where (file, line, column, key path) and what (the value and what was
// expected). `main` catches it once and exits with code 2; library code never exits.
#pragma once

#include <stdexcept>
#include <string>

namespace stepsim {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace stepsim
