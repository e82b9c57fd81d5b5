// Validation cases: one per published figure (validation/cases.yaml), each saying how stepsim
// reproduces the figure (a collective on an idle network, or one training step of a scenario),
// where the published number is (a key path in a data file), the target error, and the
// assumptions the source does not print.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/common/units.hpp"

namespace stepsim::validation {

// What a case measures, in the unit its source prints.
enum class Measure {
  kBusbw,         // nccl-tests bus bandwidth, GB/s (1e9 B/s)
  kBusbwPerNic,   // nccl-tests bus bandwidth divided by the NICs per node, GB/s
  kTimeUs,        // nccl-tests time of one operation, microseconds
  kTflopsPerGpu,  // achieved model TFLOP/s per accelerator (Megatron-LM's convention)
  // Serving scenarios (`stepsim serve`, docs/serving.md):
  kTtftMs,            // time to first token, milliseconds
  kTpotMs,            // time per output token, milliseconds
  kPromptTokensPerS,  // prefill tokens/s per accelerator
  kOutputTokensPerS   // decode tokens/s per accelerator
};

// Whether a measure is a serving scenario's (its scenario file has a `serving:` section).
inline bool is_serving(Measure m) {
  return m == Measure::kTtftMs || m == Measure::kTpotMs || m == Measure::kPromptTokensPerS ||
         m == Measure::kOutputTokensPerS;
}

// A published figure: the value compared against, and how the source printed it. A range such as
// "46-48" compares against its midpoint.
struct PublishedFigure {
  double value = 0;
  std::string printed;    // "370", "46-48"
  std::string reference;  // "nccl_busbw.yaml single_node.0.busbw"
};

// A collective run as nccl-tests runs it: one operation at a time on an idle network.
struct CollectiveSetup {
  std::string topology;   // a topology preset spec, "selene:nodes=2"
  std::string ranks;      // as `stepsim collective --ranks`: "8", "0,8", "all"
  std::string op;         // allreduce, allgather, reducescatter, alltoall
  std::string algorithm;  // a collectives registry name
  Bytes size;
  int nics_per_node = 1;  // for kBusbwPerNic
};

struct Case {
  std::string figure;  // what the source calls it: "8x H100 ring AllReduce, large"
  PublishedFigure published;
  Measure measure = Measure::kBusbw;
  std::optional<CollectiveSetup> collective;
  std::optional<std::filesystem::path> scenario;  // a step or serving case: the scenario file
  std::vector<std::string> overrides;             // applied to the scenario ("key.path=value")
  std::string assumptions;  // what the source does not print and the case assumes
  bool quick = true;        // in the fast subset (the ctest label `validation`)
  // Why the model misses this figure, when it is known to (shown in the report). Such a row does
  // not fail the run while it stays beyond twice the target; once within, the marker is stale and
  // the run fails until it is removed.
  std::string known_gap;
  std::string where;  // "cases.yaml:20:9: tables[0].cases[0]", for messages from the run
};

struct Table {
  std::string name;              // "nccl-busbw"
  std::string title;             // "nccl-tests bus bandwidth, large messages (1 GiB and more)"
  std::string metric;            // "busbw (GB/s)"
  std::optional<double> target;  // relative error target (0.05); none for reported-only tables
  std::string notes;
  std::vector<Case> cases;
};

struct CaseFile {
  std::filesystem::path file;
  std::map<std::string, std::filesystem::path> data;  // name -> data file
  std::vector<Table> tables;
};

// Reads a case file; published figures are looked up in the data files it names. Throws
// InputError (with file, line and key) for unknown keys, missing figures and bad values.
CaseFile load_cases(const std::filesystem::path& file);

std::string_view to_string(Measure m);

}  // namespace stepsim::validation
