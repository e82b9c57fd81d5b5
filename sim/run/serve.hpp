// What `stepsim serve` simulates and reports (docs/serving.md): one prefill pass and one decode
// step of a serving scenario's pools, each played by the executor on the topology as a training
// step is; time to first token (the prefill pass), time per output token (the decode step),
// tokens/s per accelerator, memory per accelerator and the largest batch that fits; and the
// largest decode batch whose time per output token meets a limit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/units.hpp"
#include "sim/executor/executor.hpp"
#include "sim/output/atomic_output.hpp"
#include "sim/output/trace_writer.hpp"
#include "sim/run/step_view.hpp"
#include "sim/run/trace_listener.hpp"
#include "workloads/serving_spec.hpp"

namespace stepsim {

struct ServingScenario;

// One simulated pass of a pool.
struct PassReport {
  workloads::ServingPhase phase = workloads::ServingPhase::kDecode;
  std::string layout;  // "tp8 dp1" (+ " ep32")
  int accelerators = 0;
  std::int64_t batch = 0;      // per replica
  std::int64_t tokens = 0;     // context (decode) or prompt (prefill)
  std::string placement;       // the pool's accelerators as ranges: "0-31"
  Time time;                   // the pass (prefill) or the time per output token (decode)
  Time step;                   // the simulated pass: with MTP, a decode step yields several tokens
  double tokens_per_step = 1;  // decode: average tokens per sequence and step (MTP)
  // Tokens per second per accelerator: decode, the batch's new tokens; prefill, the prompts'.
  double tokens_per_s_per_accelerator = 0;
  executor::RankBreakdown breakdown;  // rank 0
  workloads::ServingMemory memory;
  std::uint64_t operations = 0;
};

// What a pass records beside its figures (`stepsim serve --trace`, `--html`), as simulate_step
// does for a training step: the trace's processes and the view of the HTML report. Both show the
// busiest links, so a recorded pass runs twice (once to find them; the same figures).
struct PassRecording {
  output::TraceWriter* trace = nullptr;  // the pass's ranks go into this trace
  TraceProcesses processes;              // where (rank_accelerators: set by simulate_pass)
  std::string trace_ranks = "auto";      // parse_trace_ranks
  std::size_t trace_links = 10;
  StepView* view = nullptr;  // filled when set
  std::string view_ranks = "auto";
  std::size_t view_links = 16;
  std::size_t view_bins = 150;
  // Notes for the user (which ranks an automatic trace shows), when set.
  std::function<void(const std::string&)> note;
};

// Simulates one pass of `phase`'s pool at `batch` sequences per replica.
PassReport simulate_pass(const ServingScenario& scenario, workloads::ServingPhase phase,
                         std::int64_t batch, const PassRecording& recording = {});

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

// The KV caches of one prefill pass (every prefill replica's batch of prompts) moving to their
// decode ranks (workloads::kv_transfers), all at once on an otherwise idle network: each transfer
// a flow from its prefill accelerator to its decode accelerator (the NICs', on the scale-out
// plane) that takes the route's latency plus its bytes at the rate the max-min sharing gives it.
// No collective library runs them (RDMA writes of a transfer engine: no NCCL protocol and no
// software latency).
struct KvTransferReport {
  workloads::KvTransferPlane plane = workloads::KvTransferPlane::kScaleUp;
  std::int64_t requests = 0;
  std::size_t flows = 0;
  Bytes bytes;              // all requests
  Bytes bytes_per_request;  // the largest request's
  Time time;                // the first flow's start to the last flow's end
};

// Empty when nothing moves (colocated pools, or a single pool). Throws InputError when the
// scale-out plane is asked for and an accelerator has no NIC.
std::optional<KvTransferReport> simulate_kv_transfer(const ServingScenario& scenario);

// The decode batch a request mix needs (docs/serving.md, "Request mix"). By Little's law the
// sequences in flight on one decode replica are
//   rate x output_tokens x TPOT(B) / (replicas x share),
// share being the fraction of time the accelerators decode: 1 when the pools are apart; beside a
// colocated prefill, 1 - rate x p, p the prefill time per request (pass / (batch x replicas)),
// i.e. 1 - the prefill's utilisation. A batch B keeps up when that is at most B. With the
// throughput B / TPOT(B) growing with B, keeping up is monotone in B: the answer is the smallest
// batch that keeps up, found by bisection among the batches that fit in memory. When even the
// largest batch that fits does not keep up, the pool is overloaded and `batch` is that largest
// batch.
struct DecodeLoad {
  std::int64_t batch = 0;  // per replica: the smallest that keeps up, or max_batch if overloaded
  Time tpot;               // at `batch`
  double in_flight = 0;    // sequences in flight per replica at `batch`'s TPOT (Little's law)
  bool overloaded = false;
  std::int64_t max_batch = 0;  // the largest batch that fits in memory (0: the weights do not)
  Time max_batch_tpot;         // TPOT at max_batch
  // The highest rate the pool sustains: the rate whose sequences in flight at the largest batch
  // that fits are that batch, max_batch x replicas / (output_tokens x TPOT(max_batch) +
  // max_batch x replicas x p) requests per second (p = 0 when the pools are apart).
  double sustainable_rate_per_s = 0;
  double share = 1;
  int simulated = 0;  // TPOT evaluations
};

// The search of DecodeLoad with the TPOT of a batch given by `tpot` (a simulated decode step, or
// a closed form in tests).
// `colocated_prefill_s_per_request` is p above (0 when the pools are apart); rate x p below 1.
DecodeLoad size_decode_batch(double rate_per_s, std::int64_t output_tokens, int replicas,
                             double colocated_prefill_s_per_request, std::int64_t max_batch,
                             const std::function<Time(std::int64_t)>& tpot);

// The load of the prefill pool: each replica runs a pass of `batch` prompts in `pass`, so the pool
// serves batch x replicas / pass requests per second; its utilisation is rate over that. TTFT at
// that load is at least the pass and the KV transfer: the wait for a batch to form and for a busy
// pool (queueing) is not modelled.
struct PrefillLoad {
  Time pass;
  Time kv_transfer;
  double utilisation = 0;
  bool overloaded = false;  // utilisation above 1
  double sustainable_rate_per_s = 0;
  Time ttft_at_least;  // pass + KV transfer
};

// The request mix's figures: the prefill pool's load, the decode batch that keeps up.
struct RequestLoad {
  workloads::RequestMix mix;
  std::optional<PrefillLoad> prefill;
  std::optional<DecodeLoad> decode;
  // Colocated pools whose prefill takes all the time (utilisation at least 1): no decode figures.
  bool no_time_for_decode = false;
};

struct ServeReport {
  std::string scenario;
  std::string topology;
  std::string model;
  std::string device;
  std::string precision;
  std::string kv_cache;
  std::string combine;  // the expert combine's elements
  double hbm_efficiency = 0;
  bool colocated = false;  // prefill and decode on the same accelerators
  int mtp_depth = 0;       // speculative decoding (serving.mtp), 0: none
  double mtp_acceptance = 0;
  std::optional<PassReport> prefill;
  std::optional<PassReport> decode;
  std::optional<KvTransferReport> kv_transfer;
  // Time to first token: the prefill pass, and the KV transfer when the pools are apart (the
  // first token reaches the user from the decode pool once the cache is there).
  Time ttft;
  std::optional<TpotSearch> search;
  std::optional<RequestLoad> load;           // with serving.requests
  nlohmann::ordered_json resolved_scenario;  // as simulated: includes expanded, overrides applied
};

// What `stepsim serve` writes beside the report: a Chrome trace of the prefill pass and the
// decode step (at the scenario's batches, not the TPOT search's) in one file, the prefill ranks
// first ("prefill: rank 0 (...)"), then the decode ranks, each pass from time 0; and the views
// of the HTML report.
struct ServeRecording {
  std::optional<std::filesystem::path> trace;
  std::string trace_ranks = "auto";  // of each pool
  output::OutputGuard* output_guard = nullptr;
  bool views = false;  // fill ServeViews
  std::string view_ranks = "auto";
  std::function<void(const std::string&)> note;
};

struct ServeViews {
  std::optional<StepView> prefill;
  std::optional<StepView> decode;
};

// Simulates the scenario's pools at their batches and, with `tpot_limit`, searches the decode
// batch. With `recording`, writes its trace (renamed into place when complete) and fills `views`.
ServeReport make_serve_report(const ServingScenario& scenario, std::optional<Time> tpot_limit,
                              const ServeRecording& recording = {}, ServeViews* views = nullptr);

// The request mix's lines of the summary and of the HTML report: the mix ("2048 input and 512
// output tokens per request, 4/s"), then the figures as (name, value) pairs.
std::string request_mix_text(const workloads::RequestMix& mix);
std::vector<std::pair<std::string, std::string>> request_load_lines(const RequestLoad& load,
                                                                    bool colocated);

void print_serve_summary(std::ostream& out, const ServeReport& report);
nlohmann::ordered_json to_json(const ServeReport& report);

}  // namespace stepsim
