// The parallel layouts `stepsim search` considers: for each setting of the layout (tp, sp, cp,
// pp, vpp and the schedule, ep, ZeRO stage, micro-batch, recomputation, gradient bucket, rank
// order), the values to try. The model, topology, device, sequence length and global batch stay
// those of the scenario; dp follows from the accelerator count (dp = N / (tp x cp x pp)).
//
// The defaults are what a Megatron-LM user would try (docs/search.md, "The space"): tensor
// parallelism in powers of two within a node (or scale-up domain), sequence parallelism with it,
// pipeline stages in powers of two, 1, 2 or 4 interleaved chunks, the distributed optimizer or
// plain DDP, micro-batches of 1, 2 or 4, and the three recomputation modes; each list also holds
// the scenario's own value, so the scenario's layout is always a candidate. A space file or
// `key=v1,v2` assignments replace the list of a key.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/common/config.hpp"

namespace stepsim {
struct Scenario;
}

namespace stepsim::search {

// The keys of a space, in the order candidates are enumerated (outermost first).
const std::vector<std::string>& space_keys();

struct SearchSpace {
  // Values of each key as YAML scalars ("8", "true", "selective", "25MB"), each list non-empty and
  // without repeats. A key absent from the map keeps the scenario's value (for dp: any value).
  std::map<std::string, std::vector<std::string>> values;

  const std::vector<std::string>* find(const std::string& key) const;
};

// The default space for `base` (see above).
SearchSpace default_space(const Scenario& base);

// Replaces the lists of `space` by those of a space document: a map of keys to a value or a list
// of values. Throws InputError naming the key and the value for an unknown key, an empty list or a
// value the key cannot take.
void apply_space(SearchSpace& space, const config::Node& root);
// The same for one `key=v1,v2,...` assignment (the command line's --space KEY=V1,V2).
void apply_space_assignment(SearchSpace& space, const std::string& assignment);

// One --space argument: a KEY=V1,V2 assignment (it has a '='), or else a space file to read.
void apply_space_argument(SearchSpace& space, const std::string& argument);

// "tp=1,2,4,8 pp=1,2,4 ...": the space in one line, for the output's header.
std::string describe(const SearchSpace& space);

}  // namespace stepsim::search
