#include "sim/search/layout_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "sim/common/input_error.hpp"
#include "sim/run/resource_estimate.hpp"
#include "sim/run/simulate.hpp"
#include "sim/search/byte_codec.hpp"
#include "sim/search/candidate_queue.hpp"
#include "sim/search/distribution.hpp"
#include "sim/search/lower_bound.hpp"
#include "workloads/memory_model.hpp"

namespace stepsim::search {
namespace {

// The scenario key each space key overrides.
std::string override_path(const std::string& key) {
  if (key == "micro_batch" || key == "recompute" || key == "grad_bucket") return "training." + key;
  return "parallelism." + key;
}

// Marks the message of an internal error (not bad input) passed between processes.
constexpr std::string_view kInternal = "\x01internal: ";

// One layout being enumerated: the chosen value of each key.
using Choice = std::map<std::string, std::string>;

class Enumerator {
 public:
  Enumerator(const Scenario& base, const SearchSpace& space) : base_(base), space_(space) {
    world_ = static_cast<std::int64_t>(base.topology.accelerators().size());
  }

  // Every layout, in enumeration order; layouts whose tp x cp x pp does not divide the world, or
  // whose dp is not in the space's dp list, are counted and dropped.
  std::vector<Choice> run() {
    Choice choice;
    visit(0, choice);
    return std::move(out_);
  }
  std::size_t world_pruned = 0;
  std::size_t dp_pruned = 0;

 private:
  // The value of `key` in `c`, or the base scenario's.
  std::int64_t number(const Choice& c, const std::string& key) const {
    if (const auto it = c.find(key); it != c.end()) return std::stoll(it->second);
    const auto& p = base_.workload.parallel;
    if (key == "tp") return p.tp;
    if (key == "cp") return p.cp;
    if (key == "pp") return p.pp;
    if (key == "ep") return p.ep;
    return 1;
  }
  bool flag(const Choice& c, const std::string& key, bool fallback) const {
    if (const auto it = c.find(key); it != c.end()) return it->second == "true";
    return fallback;
  }
  // dp of the layout, 0 when tp x cp x pp does not divide the world.
  std::int64_t dp(const Choice& c) const {
    const std::int64_t cells = number(c, "tp") * number(c, "cp") * number(c, "pp");
    return world_ % cells == 0 ? world_ / cells : 0;
  }
  // Keys whose value cannot change the step of this layout take only their first value.
  bool matters(const std::string& key, const Choice& c) const {
    const auto& p = base_.workload.parallel;
    if (key == "sp") return number(c, "tp") > 1;
    if (key == "tp_comm_overlap") return number(c, "tp") > 1 && flag(c, "sp", p.sp);
    if (key == "cp_mode") return number(c, "cp") > 1;
    if (key == "zero" || key == "grad_bucket") {
      const std::int64_t d = dp(c);
      const std::int64_t tp_cp_dp = number(c, "tp") * number(c, "cp") * d;
      const bool expert_replicas = base_.workload.model.moe_enabled && tp_cp_dp > number(c, "ep");
      return d * number(c, "cp") > 1 || expert_replicas;
    }
    return true;
  }

  void visit(std::size_t k, Choice& c) {
    const auto& keys = space_keys();
    if (k == keys.size()) {
      finish(c);
      return;
    }
    const std::string& key = keys[k];
    const auto* list = space_.find(key);
    if (list == nullptr || key == "dp") {
      visit(k + 1, c);
      return;
    }
    std::vector<std::string> values = *list;
    if (key == "vpp" && number(c, "pp") == 1) {
      // One stage has no chunks to interleave: vpp 1 only (or the space's only values).
      if (std::find(values.begin(), values.end(), "1") != values.end()) values = {"1"};
    } else if (!matters(key, c)) {
      values.resize(1);
    }
    for (const auto& v : values) {
      c[key] = v;
      visit(k + 1, c);
    }
    c.erase(key);
  }

  void finish(const Choice& c) {
    const std::int64_t d = dp(c);
    if (d == 0) {
      ++world_pruned;
      return;
    }
    if (const auto* dps = space_.find("dp")) {
      if (std::find(dps->begin(), dps->end(), std::to_string(d)) == dps->end()) {
        ++dp_pruned;
        return;
      }
    }
    Choice full = c;
    full["dp"] = std::to_string(d);
    if (space_.find("schedule") == nullptr && space_.find("vpp") != nullptr) {
      // Interleaving follows vpp, as Megatron-LM's --num-layers-per-virtual-pipeline-stage does.
      const auto base_schedule = base_.workload.parallel.schedule;
      full["schedule"] = std::stoll(c.at("vpp")) > 1                            ? "interleaved"
                         : base_schedule == workloads::PipelineSchedule::kGpipe ? "gpipe"
                                                                                : "1f1b";
    }
    out_.push_back(std::move(full));
  }

  const Scenario& base_;
  const SearchSpace& space_;
  std::int64_t world_ = 0;
  std::vector<Choice> out_;
};

std::vector<std::string> overrides_of(const Choice& c) {
  std::vector<std::string> out;
  for (const auto& key : space_keys()) {
    if (const auto it = c.find(key); it != c.end())
      out.push_back(override_path(key) + "=" + it->second);
  }
  return out;
}

std::string label_of(const workloads::WorkloadSpec& spec, bool show_bucket, bool show_order) {
  const auto& p = spec.parallel;
  const auto& t = spec.training;
  std::string s = fmt::format("tp{}", p.tp);
  if (p.sequence_parallel()) s += " sp";
  if (p.tp_comm_overlap && p.sequence_parallel()) s += " tpov";
  if (p.cp > 1)
    s += fmt::format(" cp{}{}", p.cp, p.cp_mode == workloads::CpMode::kUlysses ? "u" : "");
  s += fmt::format(" pp{}", p.pp);
  if (p.vpp > 1) s += fmt::format(" vpp{}", p.vpp);
  if (p.schedule == workloads::PipelineSchedule::kGpipe) s += " gpipe";
  s += fmt::format(" dp{}", p.dp);
  if (p.ep > 1) s += fmt::format(" ep{}", p.ep);
  s += fmt::format(" zero{} mb{} {}", p.zero, t.micro_batch, workloads::to_string(t.recompute));
  if (show_bucket) s += " bucket " + format_bytes(t.grad_bucket);
  if (show_order) {
    static constexpr std::array<const char*, 5> names = {"tp", "cp", "ep", "dp", "pp"};
    s += " ";
    for (std::size_t i = 0; i < p.order.size(); ++i)
      s += fmt::format("{}{}", i ? "-" : "", names[static_cast<std::size_t>(p.order[i])]);
  }
  return s;
}

// The key path a check message names ("parallelism.tp"), for counting by rule: the first
// ": SECTION: " or ": SECTION.key: " in it, SECTION one of the scenario's sections and the key in
// [a-z_]. (Scanned by hand: GCC 12's <regex> fails -Werror=maybe-uninitialized in the sanitizer
// build.)
std::string rule_of(const std::string& message) {
  constexpr std::array<std::string_view, 4> sections = {"parallelism", "training", "model",
                                                        "compute"};
  const std::string_view text(message);
  for (std::size_t at = text.find(": "); at != std::string_view::npos;
       at = text.find(": ", at + 1)) {
    const std::size_t begin = at + 2;
    for (std::string_view section : sections) {
      if (text.substr(begin, section.size()) != section) continue;
      std::size_t end = begin + section.size();
      if (end < text.size() && text[end] == '.') {
        std::size_t k = end + 1;
        while (k < text.size() && ((text[k] >= 'a' && text[k] <= 'z') || text[k] == '_'))
          ++k;
        if (k > end + 1) end = k;
      }
      if (text.substr(end, 2) == ": ")
        return "check: " + std::string(text.substr(begin, end - begin));
    }
  }
  return "check: other";
}

}  // namespace

void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& fn) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const unsigned count = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(n)));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < count; ++t)
    pool.emplace_back(work);
  work();
  for (auto& t : pool)
    t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

Scenario candidate_scenario(const Scenario& base, const Candidate& candidate) {
  Scenario s = base;
  for (const auto& o : candidate.overrides)
    s.document.apply_override(o);
  s.workload = workloads::parse_workload(s.document.root());
  workloads::validate_layout(s.workload, static_cast<int>(s.topology.accelerators().size()));
  return s;
}

namespace {

// A layout after the check and memory rules and the bound.
struct Checked {
  std::optional<Candidate> candidate;
  std::string failure;  // the check's message
  bool too_big = false;
  Bytes simulation_memory;  // the simulation's estimate when above max_simulation_memory
};

// What every layout's check needs of the scenario and the options.
struct CheckContext {
  const Scenario& base;
  const SearchOptions& options;
  int world = 0;  // accelerators
  bool show_bucket = false;
  bool show_order = false;
  BytesPerSecond injection;
};

// The layouts of the space that divide the accelerators (rule world) and give a dp of the space
// (rule dp), counted in `outcome`.
std::vector<Choice> enumerate_layouts(const Scenario& base, const SearchSpace& space,
                                      SearchOutcome& outcome) {
  outcome.space = describe(space);
  Enumerator enumerator(base, space);
  std::vector<Choice> choices = enumerator.run();
  outcome.enumerated = choices.size() + enumerator.world_pruned + enumerator.dp_pruned;
  outcome.pruned.push_back({"world", enumerator.world_pruned});
  if (space.find("dp") != nullptr) outcome.pruned.push_back({"dp", enumerator.dp_pruned});
  return choices;
}

// Layout `i`: the scenario's checks, its memory (of the whole model with memory_overrides), the
// estimate of simulating it and its lower bound.
Checked check_layout(const CheckContext& x, const Choice& choice, std::size_t i) {
  Checked checked;
  Candidate c;
  c.index = i;
  c.overrides = overrides_of(choice);
  config::Document doc = x.base.document;
  try {
    for (const auto& o : c.overrides)
      doc.apply_override(o);
    c.spec = workloads::parse_workload(doc.root());
    workloads::validate_layout(c.spec, x.world);
  } catch (const InputError& e) {
    checked.failure = e.what();
    return checked;
  }
  // The spec whose memory must fit: the candidate's, or its whole model (memory_overrides).
  std::optional<workloads::WorkloadSpec> whole;
  if (!x.options.memory_overrides.empty()) {
    try {
      for (const auto& o : x.options.memory_overrides)
        doc.apply_override(o);
      whole.emplace(workloads::parse_workload(doc.root()));
      workloads::validate_layout(*whole, x.world);
    } catch (const InputError& e) {
      checked.failure = e.what();
      return checked;
    }
  }
  c.label = label_of(c.spec, x.show_bucket, x.show_order);
  for (const auto& m : workloads::estimate_memory(whole ? *whole : c.spec)) {
    c.memory_peak = std::max(c.memory_peak, m.total);
    const double usable = static_cast<double>(m.capacity.count()) * (1.0 - x.options.memory_margin);
    if (static_cast<double>(m.total.count()) > usable) checked.too_big = true;
  }
  if (!checked.too_big && x.options.max_simulation_memory.count() > 0) {
    // Before the bound, which generates the whole step: a step too big to simulate is too big to
    // bound.
    const ResourceEstimate e = estimate_resources(c.spec);
    if (e.extrapolated && e.memory > x.options.max_simulation_memory)
      checked.simulation_memory = e.memory;
  }
  if (!checked.too_big && checked.simulation_memory.count() == 0)
    c.bound = lower_bound(c.spec, x.injection).step;
  checked.candidate = std::move(c);
  return checked;
}

// This process's share of the layouts checked on its threads (every processes-th layout). An
// exception in one process's share ends every process (an internal error as one: the message
// is marked).
void check_share(const CheckContext& x, const std::vector<Choice>& choices,
                 Distribution& distribution, std::vector<Checked>& checked) {
  const auto processes = static_cast<std::size_t>(distribution.processes());
  const auto rank = static_cast<std::size_t>(distribution.rank());
  const std::size_t share = (choices.size() + processes - 1 - rank) / processes;
  std::string error;
  try {
    parallel_for(share, x.options.threads, [&](std::size_t k) {
      const std::size_t i = rank + k * processes;
      checked[i] = check_layout(x, choices[i], i);
    });
  } catch (const InputError& e) {
    error = e.what();
  } catch (const std::exception& e) {
    error = std::string(kInternal) + e.what();
  }
  if (std::string first = distribution.first_error(error); !first.empty()) {
    if (first.starts_with(kInternal)) throw std::runtime_error(first.substr(kInternal.size()));
    throw InputError(first);
  }
}

// This process's checked layouts as [index, 0, failure], [index, 1 (too big) or 2, label,
// memory, bound] or [index, 3 (too big to simulate), label, memory, bound, simulation memory].
std::string encode_share(const std::vector<Checked>& checked, std::size_t rank,
                         std::size_t processes) {
  ByteWriter mine;
  for (std::size_t i = rank; i < checked.size(); i += processes) {
    mine.raw<std::uint64_t>(i);
    const Checked& ch = checked[i];
    const bool too_costly = ch.simulation_memory.count() > 0;
    mine.raw<std::uint8_t>(!ch.failure.empty() ? 0 : ch.too_big ? 1 : too_costly ? 3 : 2);
    if (!ch.failure.empty()) {
      mine.text(ch.failure);
      continue;
    }
    mine.text(ch.candidate->label);
    mine.bytes(ch.candidate->memory_peak);
    mine.time(ch.candidate->bound);
    if (too_costly) mine.bytes(ch.simulation_memory);
  }
  return mine.take();
}

// Reads process `r`'s share into `checked` (skipping this process's own); returns the layouts
// read. The others' candidates come without their WorkloadSpec (only the bound needs it).
std::size_t decode_share(const std::string& bytes, std::size_t r, std::size_t rank,
                         std::size_t processes, const std::vector<Choice>& choices,
                         std::vector<Checked>& checked) {
  std::size_t filled = 0;
  ByteReader in(bytes);
  while (!in.done()) {
    const auto i = static_cast<std::size_t>(in.raw<std::uint64_t>());
    if (i >= choices.size() || i % processes != r)
      throw std::logic_error("stepsim search: a layout from the wrong process (a bug)");
    ++filled;
    const auto state = in.raw<std::uint8_t>();
    if (r == rank) {
      in.text();
      if (state != 0) {
        in.bytes();
        in.time();
      }
      if (state == 3) in.bytes();
      continue;
    }
    if (state == 0) {
      checked[i].failure = in.text();
      continue;
    }
    Candidate c;
    c.index = i;
    c.overrides = overrides_of(choices[i]);
    c.label = in.text();
    c.memory_peak = in.bytes();
    c.bound = in.time();
    checked[i].too_big = state == 1;
    if (state == 3) checked[i].simulation_memory = in.bytes();
    checked[i].candidate = std::move(c);
  }
  return filled;
}

// Under a distribution of several processes, every process's checked layouts on every process.
void exchange_checked(Distribution& distribution, const std::vector<Choice>& choices,
                      std::vector<Checked>& checked) {
  const auto processes = static_cast<std::size_t>(distribution.processes());
  if (processes <= 1) return;
  const auto rank = static_cast<std::size_t>(distribution.rank());
  const std::vector<std::string> all =
      distribution.all_gather(encode_share(checked, rank, processes));
  std::size_t filled = 0;
  for (std::size_t r = 0; r < all.size(); ++r)
    filled += decode_share(all[r], r, rank, processes, choices, checked);
  if (filled != choices.size())
    throw std::logic_error("stepsim search: a layout no process checked (a bug)");
}

// The first layout each rule removed, for the message when none is left.
struct FirstPruned {
  std::string failure;
  std::string too_big;
  std::string too_costly;
};

// The layouts that passed every rule, in enumeration order; the counts per rule in `outcome`.
std::vector<Candidate> tally(std::vector<Checked>& checked, const SearchOptions& options,
                             SearchOutcome& outcome, FirstPruned& first) {
  std::map<std::string, std::size_t> by_key;
  std::size_t memory = 0;
  std::size_t too_costly = 0;
  std::vector<Candidate> passed;
  for (auto& ch : checked) {
    if (!ch.failure.empty()) {
      ++by_key[rule_of(ch.failure)];
      if (first.failure.empty()) first.failure = ch.failure;
    } else if (ch.too_big) {
      ++memory;
      if (first.too_big.empty())
        first.too_big = fmt::format("{} needs {} per rank", ch.candidate->label,
                                    format_bytes(ch.candidate->memory_peak));
    } else if (ch.simulation_memory.count() > 0) {
      ++too_costly;
      if (first.too_costly.empty())
        first.too_costly =
            fmt::format("{}, about {}", ch.candidate->label, format_bytes(ch.simulation_memory));
    } else {
      passed.push_back(std::move(*ch.candidate));
    }
  }
  for (const auto& [rule, count] : by_key)
    outcome.pruned.push_back({rule, count});
  outcome.pruned.push_back({"memory", memory});
  if (options.max_simulation_memory.count() > 0)
    outcome.pruned.push_back({"max-memory", too_costly});
  return passed;
}

// No layout passed: why, by the first rule that removed one.
[[noreturn]] void refuse_empty(bool enumerated_none, const FirstPruned& first,
                               const SearchOptions& options, const SearchOutcome& outcome,
                               int world) {
  if (enumerated_none) {
    throw InputError(fmt::format(
        "no layout of the search space ({}) has tp x cp x pp dividing the {} accelerators",
        outcome.space, world));
  }
  if (!first.too_big.empty()) {
    throw InputError(fmt::format(
        "no layout of the search space fits in memory (margin {:.0f}%): the first, {}; widen "
        "the space (pp, zero, recompute, micro_batch) or lower --memory-margin",
        100 * options.memory_margin, first.too_big));
  }
  if (!first.too_costly.empty()) {
    throw InputError(fmt::format(
        "no layout of the search space can be simulated within {} of memory (--max-memory; "
        "default: the machine's): the first, {} (fewer micro-batches per replica need less: a "
        "larger micro_batch or a smaller training.global_batch); or raise --max-memory",
        format_bytes(options.max_simulation_memory), first.too_costly));
  }
  throw InputError(fmt::format(
      "no layout of the search space passes the scenario's checks; the first: {}", first.failure));
}

}  // namespace

std::vector<Candidate> prepare_candidates(const Scenario& base, const SearchSpace& space,
                                          const SearchOptions& options, SearchOutcome& outcome) {
  const std::vector<Choice> choices = enumerate_layouts(base, space, outcome);
  // The check and memory rules and the bound, each candidate on its own (the parse reads the
  // device's files; the bound plays the stages' operation graphs). Under a distribution each
  // process takes every processes-th layout, and they exchange the results.
  const CheckContext context{base,
                             options,
                             static_cast<int>(base.topology.accelerators().size()),
                             space.find("grad_bucket") != nullptr,
                             space.find("order") != nullptr,
                             injection_bandwidth(base.topology)};
  LocalDistribution local;
  Distribution& distribution = options.distribution ? *options.distribution : local;
  std::vector<Checked> checked(choices.size());
  check_share(context, choices, distribution, checked);
  exchange_checked(distribution, choices, checked);
  FirstPruned first;
  std::vector<Candidate> passed = tally(checked, options, outcome, first);
  if (passed.empty()) refuse_empty(choices.empty(), first, options, outcome, context.world);
  return passed;
}

SearchOutcome search_layouts(const Scenario& base, const SearchSpace& space,
                             const SearchOptions& options) {
  LocalDistribution local;
  Distribution& distribution = options.distribution ? *options.distribution : local;
  SearchOutcome outcome;
  std::vector<Candidate> candidates;
  // Every process prepares the same candidates; the first error of any ends every one.
  std::string error;
  try {
    candidates = prepare_candidates(base, space, options, outcome);
  } catch (const InputError& e) {
    error = e.what();
  }
  if (const std::string first = distribution.first_error(error); !first.empty())
    throw InputError(first);
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.bound, a.index) < std::tie(b.bound, b.index);
  });

  // Candidates are handed out in bound order while their bound is below the best step time
  // finished so far, to this process's threads or to every process's (candidate_queue.hpp).
  const std::size_t n = candidates.size();
  std::vector<Time> bounds;
  for (const auto& c : candidates)
    bounds.push_back(c.bound);
  CandidateQueue queue(std::move(bounds), options.prune_by_bound,
                       distribution.writes_output() ? options.progress
                                                    : std::function<void(const SearchProgress&)>());
  distribution.run(queue, std::max(1u, options.threads), [&](std::size_t i) {
    return simulate_step(candidate_scenario(base, candidates[i]));
  });
  if (!distribution.writes_output()) return outcome;
  auto& reports = queue.reports();
  const auto& errors = queue.errors();

  // The sequential rule: candidate i is simulated when its bound is below the best step time of
  // the candidates before it. Results past the first one it stops are speculative and dropped.
  Time best = Time::max();
  std::size_t kept = 0;
  for (; kept < n; ++kept) {
    if (options.prune_by_bound && candidates[kept].bound >= best) break;
    if (errors[kept]) std::rethrow_exception(errors[kept]);
    if (!reports[kept]) throw std::logic_error("stepsim search: a candidate was skipped (a bug)");
    best = std::min(best, reports[kept]->step_time);
  }
  outcome.pruned.push_back({"bound", n - kept});
  outcome.simulated = kept;
  for (std::size_t i = 0; i < kept; ++i)
    outcome.ranked.push_back({std::move(candidates[i]), std::move(*reports[i])});
  std::sort(outcome.ranked.begin(), outcome.ranked.end(),
            [](const Evaluated& a, const Evaluated& b) {
              return std::tie(a.report.step_time, a.candidate.index) <
                     std::tie(b.report.step_time, b.candidate.index);
            });
  outcome.scenario_layout =
      label_of(base.workload, space.find("grad_bucket") != nullptr, space.find("order") != nullptr);
  for (std::size_t i = kept; i < n; ++i) {
    if (candidates[i].label == outcome.scenario_layout)
      outcome.scenario_bound = candidates[i].bound;
  }
  for (std::size_t i = 0; i < outcome.ranked.size(); ++i) {
    if (outcome.ranked[i].candidate.label == outcome.scenario_layout) {
      outcome.scenario_bound = outcome.ranked[i].candidate.bound;
      outcome.scenario_rank = i + 1;
    }
  }
  return outcome;
}

}  // namespace stepsim::search
