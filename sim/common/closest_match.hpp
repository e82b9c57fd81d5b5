// "Did you mean" suggestions for a misspelt key, choice or name: the closest candidate by edit
// distance (insertions, deletions and substitutions, ignoring case), when it is close enough to
// be a plausible typo.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim::config {

// The Levenshtein distance between `a` and `b`, comparing letters without regard to case.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The closest of `candidates` to `word` (the first of equally close ones), or empty when none is
// within max(2, |word| / 3) edits.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace stepsim::config
