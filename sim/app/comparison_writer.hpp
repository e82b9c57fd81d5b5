// Writers of a comparison (sim/app/comparison.hpp): the side-by-side table of `stepsim compare`,
// its JSON (each variant's report), its CSV and its HTML page; for training steps or for serving
// scenarios, as the comparison holds.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "sim/app/comparison.hpp"

namespace stepsim::app {

// Training: step time, tokens/s, MFU, exposed communication per dimension, bubble and busiest
// link; serving: TTFT, KV transfer, TPOT, tokens/s and memory per accelerator.
void write_comparison_table(std::ostream& out, const Comparison& comparison);

// [{"variant": label, "report": the report (a step's without "resolved_scenario")}, ...].
nlohmann::ordered_json comparison_json(const Comparison& comparison);

// One row per variant, the table's figures in SI units (seconds, bytes).
void write_comparison_csv(std::ostream& out, const Comparison& comparison);

// A self-contained page of charts, the variants side by side.
void write_comparison_page(std::ostream& out, const Comparison& comparison);

}  // namespace stepsim::app
