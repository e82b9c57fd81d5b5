// Test helper: the WorkloadSpec of a scenario's `model:`, `parallelism:` and `training:` sections
// written as YAML flow values, with an H100 compute model (the roofline, or with `compute` the
// given compute section, e.g. "{device: h100, model: kernels}").
#pragma once

#include <string>

#include "sim/common/config.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {

inline WorkloadSpec workload_of(const std::string& model, const std::string& parallelism,
                                const std::string& training,
                                const std::string& compute = "{device: h100}") {
  const auto doc =
      config::Document::parse("model: " + model + "\nparallelism: " + parallelism +
                                  "\ntraining: " + training + "\ncompute: " + compute + "\n",
                              "test.yaml");
  return parse_workload(doc.root());
}

}  // namespace stepsim::workloads
