// Everything a search prints (table, CSV, JSON) as one string, for tests that compare outputs.
#pragma once

#include <sstream>
#include <string>

#include "sim/search/search_output.hpp"

namespace stepsim::search::test {

inline std::string all_output(const SearchOutcome& o) {
  std::ostringstream s;
  print_search(s, o, 1000);
  write_csv(s, o);
  s << to_json(o).dump(2);
  return s.str();
}

}  // namespace stepsim::search::test
