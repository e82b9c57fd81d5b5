// Runs validation cases and compares them with their published figures: a collective case runs
// as `stepsim collective` does (CollectiveSession, calibrated links), a step case as `stepsim run`
// does (simulate_step), a serving case as `stepsim serve` does (the pass it measures).
// Deterministic: the same cases give the same rows, byte for byte.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/validation/validation_case.hpp"

namespace stepsim::validation {

struct RowResult {
  const Case* source = nullptr;
  std::string setup;  // what was simulated, in a few words
  double simulated = 0;
  double error = 0;  // (simulated - published) / published
};

struct TableResult {
  const Table* source = nullptr;
  std::vector<RowResult> rows;
  double mean_abs_error = 0;
  double worst_abs_error = 0;
  // Rows whose |error| exceeds twice the table's target (the regression threshold), except
  // known gaps; and known gaps that came within it (their marker is stale).
  std::vector<const RowResult*> failures() const;
};

struct RunOptions {
  bool quick_only = false;  // only the cases marked quick
  // Called before each case (table name, figure), for progress lines.
  std::function<void(const Table&, const Case&)> on_case;
};

// The passes of serving scenarios already simulated, by scenario file, overrides and phase:
// rows that measure the same pass (a decode step's TPOT and its tokens/s) simulate it once.
struct ServingPassCache {
  std::map<std::string, std::pair<double, double>> figures;  // key -> (time s, tokens/s)
  std::map<std::string, std::string> setups;
};

// The simulated figure of one case, in the unit of its measure.
double simulate_case(const Case& c, std::string* setup = nullptr,
                     ServingPassCache* cache = nullptr);

std::vector<TableResult> run_cases(const CaseFile& cases, const RunOptions& options = {});

}  // namespace stepsim::validation
