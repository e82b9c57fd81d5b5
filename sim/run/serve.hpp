// What `stepsim serve` simulates and reports (docs/serving.md): one prefill pass and one decode
// step of a serving scenario's pools, each played by the executor on the topology as a training
// step is; time to first token (the prefill pass), time per output token (the decode step),
// tokens/s per accelerator, memory per accelerator and the largest batch that fits; and the
// largest decode batch whose time per output token meets a limit.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/common/units.hpp"
#include "sim/executor/executor.hpp"
#include "workloads/serving_spec.hpp"

namespace stepsim {

struct ServingScenario;

// One simulated pass of a pool.
struct PassReport {
  workloads::ServingPhase phase = workloads::ServingPhase::kDecode;
  std::string layout;  // "tp8 dp1" (+ " ep32")
  int accelerators = 0;
  std::int64_t batch = 0;   // per replica
  std::int64_t tokens = 0;  // context (decode) or prompt (prefill)
  Time time;                // TTFT (prefill) or TPOT (decode)
  // Tokens per second per accelerator: decode, the batch's new tokens; prefill, the prompts'.
  double tokens_per_s_per_accelerator = 0;
  executor::RankBreakdown breakdown;  // rank 0
  workloads::ServingMemory memory;
  std::uint64_t operations = 0;
};

// Simulates one pass of `phase`'s pool at `batch` sequences per replica.
PassReport simulate_pass(const ServingScenario& scenario, workloads::ServingPhase phase,
                         std::int64_t batch);

// The largest decode batch whose step time meets `limit`, searched among the batches that fit
// in memory: bisection keeps the largest batch known to meet the limit and the smallest known
// not to, and stops when they are adjacent, so `best` meets the limit and `next` (when set) is
// best + 1 and does not. `best` is empty when batch 1 misses the limit; `next` is empty when
// the largest batch that fits meets it (memory, not time, decides).
struct TpotSearch {
  Time limit;
  std::optional<PassReport> best;
  std::optional<PassReport> next;
  int simulated = 0;  // decode steps simulated
};

TpotSearch search_tpot(const ServingScenario& scenario, Time limit);

struct ServeReport {
  std::string scenario;
  std::string topology;
  std::string model;
  std::string device;
  std::string precision;
  std::string kv_cache;
  double hbm_efficiency = 0;
  std::optional<PassReport> prefill;
  std::optional<PassReport> decode;
  std::optional<TpotSearch> search;
};

// Simulates the scenario's pools at their batches and, with `tpot_limit`, searches the decode
// batch.
ServeReport make_serve_report(const ServingScenario& scenario, std::optional<Time> tpot_limit);

void print_serve_summary(std::ostream& out, const ServeReport& report);
nlohmann::ordered_json to_json(const ServeReport& report);

}  // namespace stepsim
