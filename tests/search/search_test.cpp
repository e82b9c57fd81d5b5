// `stepsim search`: the space, the pruning rules, the lower bound and the parallel simulation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "sim/cli/cli.hpp"
#include "sim/run/resource_estimate.hpp"
#include "sim/run/simulate.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/search/layout_search.hpp"
#include "sim/search/lower_bound.hpp"
#include "sim/search/search_output.hpp"
#include "sim/search/search_space.hpp"
#include "tests/cli_in_process.hpp"
#include "tests/search/all_output.hpp"
#include "workloads/memory_model.hpp"

namespace stepsim::search {
namespace {

std::string input(const std::string& name) {
  return std::string(STEPSIM_SOURCE_DIR) + "/tests/search/" + name;
}

using Result = testing::CliResult;

Result run(std::vector<std::string> args) {
  return testing::run_cli(std::move(args));
}

// A space of the dense scenario small enough to simulate whole: 4 x 3 x 2 x 2 x 2 x 2 layouts
// before the rules.
SearchSpace small_space(const Scenario& base) {
  SearchSpace space = default_space(base);
  apply_space_assignment(space, "tp=1,2,4,8");
  apply_space_assignment(space, "pp=1,2,4");
  apply_space_assignment(space, "vpp=1,2");
  apply_space_assignment(space, "zero=0,1");
  apply_space_assignment(space, "micro_batch=1,2");
  apply_space_assignment(space, "recompute=none,full");
  return space;
}

using test::all_output;

TEST(SearchSpace, DefaultsHoldTheScenarioLayoutAndKeepTpInANode) {
  // Two DGX H100 nodes of 8 GPUs: tp in 1, 2, 4, 8; pp in powers of two up to the 4 layers.
  const Scenario base = load_scenario(input("dense.yaml"), {});
  const SearchSpace space = default_space(base);
  EXPECT_EQ(*space.find("tp"), (std::vector<std::string>{"1", "2", "4", "8"}));
  EXPECT_EQ(*space.find("pp"), (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(*space.find("recompute"), (std::vector<std::string>{"none", "selective", "full"}));
  EXPECT_EQ(*space.find("ep"), (std::vector<std::string>{"1"}));  // dense
  EXPECT_EQ(space.find("dp"), nullptr);
  // The scenario's own micro-batch is a value even outside the defaults.
  const Scenario mb8 = load_scenario(input("dense.yaml"), {"training.micro_batch=8"});
  const SearchSpace space8 = default_space(mb8);
  const auto& mb = *space8.find("micro_batch");
  EXPECT_NE(std::find(mb.begin(), mb.end(), "8"), mb.end());
}

TEST(SearchSpace, AssignmentsAndFilesReplaceLists) {
  const Scenario base = load_scenario(input("dense.yaml"), {});
  SearchSpace space = default_space(base);
  apply_space_assignment(space, "recompute=full");
  apply_space_assignment(space, "zero=fsdp,0");
  EXPECT_EQ(*space.find("recompute"), std::vector<std::string>{"full"});
  EXPECT_EQ(*space.find("zero"), (std::vector<std::string>{"3", "0"}));
  const auto doc = config::Document::parse("pp: [2, 4]\nsp: false\n", "space.yaml");
  apply_space(space, doc.root());
  EXPECT_EQ(*space.find("pp"), (std::vector<std::string>{"2", "4"}));
  EXPECT_EQ(*space.find("sp"), std::vector<std::string>{"false"});
}

TEST(SearchSpace, BadSpacesExitTwoNamingTheKeyAndValue) {
  const std::string file = input("dense.yaml");
  struct Case {
    std::string space;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"tpp=1,2", "unknown key 'tpp' (did you mean 'tp'?)"},
           {"tp=", "tp: an empty list"},
           {"tp=0,2", "tp"},
           {"tp=two", "'two'"},
           {"recompute=some", "'some'"},
           {"zero=4", "'4'"},
           {"order=tp-cp-dp-pp", "'tp-cp-dp-pp'"},
           {"tp=2,2", "appears twice"},
           {"grad_bucket=25", "'25'"},
           {"=1,2", "expected KEY=V1,V2"},
           {"nothing.yaml", "cannot read 'nothing.yaml'"},
       }) {
    const Result r = run({"search", file, "--space", c.space});
    EXPECT_EQ(r.code, 2) << c.space;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.space << ": " << r.err;
  }
  // Fixed values that cannot go together on 16 GPUs: tp 3 divides neither the heads nor 16.
  Result r = run({"search", file, "--space", "tp=3", "--space", "pp=1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("tp x cp x pp dividing the 16 accelerators"), std::string::npos) << r.err;
  // tp 16 divides the world but not the 8 key/value heads: the check's own message.
  r = run({"search", file, "--space", "tp=16", "--space", "pp=1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("parallelism.tp"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tp 16 must divide"), std::string::npos) << r.err;
  // A space file with an unknown key, and one that is not a map.
  const auto dir = std::filesystem::temp_directory_path() / "stepsim_search_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.yaml") << "tp: [1, 2]\nmicrobatch: [1]\n";
  r = run({"search", file, "--space", (dir / "bad.yaml").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.yaml:2:1: microbatch"), std::string::npos) << r.err;
  std::ofstream(dir / "list.yaml") << "[1, 2]\n";
  r = run({"search", file, "--space", (dir / "list.yaml").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("a map of layout keys"), std::string::npos) << r.err;
}

TEST(Search, RulesCountEveryEnumeratedLayout) {
  const Scenario base = load_scenario(input("dense.yaml"), {});
  SearchOptions options;
  options.threads = 2;
  const SearchOutcome o = search_layouts(base, small_space(base), options);
  std::size_t pruned = 0;
  for (const auto& r : o.pruned)
    pruned += r.count;
  EXPECT_EQ(o.enumerated, pruned + o.simulated);
  EXPECT_EQ(o.ranked.size(), o.simulated);
  EXPECT_GT(o.simulated, 0u);
  // vpp 2 with pp 4 puts 8 chunks on 4 layers: the check's rule on parallelism.vpp removes them.
  const auto vpp = std::find_if(o.pruned.begin(), o.pruned.end(), [](const RuleCount& r) {
    return r.rule == "check: parallelism.vpp";
  });
  ASSERT_NE(vpp, o.pruned.end());
  EXPECT_GT(vpp->count, 0u);
  for (std::size_t i = 1; i < o.ranked.size(); ++i)
    EXPECT_LE(o.ranked[i - 1].report.step_time, o.ranked[i].report.step_time);
}

// The pruned search finds the layout that simulating every candidate finds.
TEST(Search, PruningNeverDropsTheBestLayout) {
  for (const char* file : {"dense.yaml", "moe.yaml"}) {
    const Scenario base = load_scenario(input(file), {});
    SearchSpace space = small_space(base);
    if (base.workload.model.moe_enabled) {
      apply_space_assignment(space, "tp=1,2");
      apply_space_assignment(space, "ep=1,2,4,8");
    }
    SearchOptions options;
    options.threads = 2;
    const SearchOutcome pruned = search_layouts(base, space, options);
    options.prune_by_bound = false;
    const SearchOutcome all = search_layouts(base, space, options);
    ASSERT_FALSE(all.ranked.empty());
    EXPECT_GT(all.simulated, pruned.simulated) << file << ": the bound pruned nothing";
    EXPECT_EQ(pruned.ranked.front().candidate.label, all.ranked.front().candidate.label) << file;
    EXPECT_EQ(pruned.ranked.front().report.step_time, all.ranked.front().report.step_time);
    // Every bound is a bound.
    for (const auto& e : all.ranked)
      EXPECT_LE(e.candidate.bound, e.report.step_time) << file << ": " << e.candidate.label;
  }
}

// The lower bound never exceeds the simulated step, on random layouts of several scenarios.
TEST(LowerBound, NeverAboveTheSimulatedStep) {
  std::mt19937 random(17);
  std::size_t checked = 0;
  for (const char* file : {"dense.yaml", "moe.yaml"}) {
    const Scenario base = load_scenario(input(file), {});
    SearchSpace space = default_space(base);
    apply_space_assignment(space, "vpp=1,2");
    apply_space_assignment(space, "zero=0,1,2,3");
    apply_space_assignment(space, "micro_batch=1,2");
    apply_space_assignment(space, "schedule=gpipe,1f1b,interleaved");
    apply_space_assignment(space, "sp=true,false");
    apply_space_assignment(space, "cp=1,2");
    apply_space_assignment(space, "cp_mode=ring,ulysses");
    apply_space_assignment(space, "grad_bucket=1MB,25MB");
    if (base.workload.model.moe_enabled) apply_space_assignment(space, "ep=1,2,4,8");
    SearchOutcome o;
    SearchOptions options;
    options.threads = 2;
    std::vector<Candidate> candidates = prepare_candidates(base, space, options, o);
    std::shuffle(candidates.begin(), candidates.end(), random);
    candidates.resize(std::min<std::size_t>(candidates.size(), 150));
    std::vector<Time> simulated(candidates.size());
    parallel_for(candidates.size(), 2, [&](std::size_t i) {
      simulated[i] = simulate_step(candidate_scenario(base, candidates[i])).step_time;
    });
    const BytesPerSecond injection = injection_bandwidth(base.topology);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const LowerBound b = lower_bound(candidates[i].spec, injection);
      EXPECT_FALSE(b.stalled) << candidates[i].label;
      EXPECT_EQ(b.step, candidates[i].bound);
      EXPECT_LE(b.step, simulated[i]) << file << ": " << candidates[i].label;
      // The bound is more than the busiest stage's compute alone when there is a pipeline.
      EXPECT_GE(b.step, b.compute);
      ++checked;
    }
  }
  EXPECT_GE(checked, 250u);
}

TEST(Search, OutputIsTheSameWhateverTheThreadCount) {
  const Scenario base = load_scenario(input("dense.yaml"), {});
  const SearchSpace space = small_space(base);
  std::string first;
  for (unsigned threads : {1u, 2u, 5u}) {
    SearchOptions options;
    options.threads = threads;
    const std::string text = all_output(search_layouts(base, space, options));
    if (first.empty()) {
      first = text;
    } else {
      EXPECT_EQ(text, first) << threads << " threads";
    }
  }
}

// Each candidate's step time is the one `stepsim run` gives for its layout, and --write-best
// writes a scenario that `stepsim run` takes and that gives the same step time.
TEST(Search, ResultsAreThoseOfStepsimRun) {
  const Scenario base = load_scenario(input("dense.yaml"), {});
  SearchOptions options;
  options.threads = 2;
  const SearchOutcome o = search_layouts(base, small_space(base), options);
  ASSERT_GE(o.ranked.size(), 2u);
  for (const auto* e : {&o.ranked.front(), &o.ranked.back()}) {
    const Scenario s = load_scenario(input("dense.yaml"), e->candidate.overrides);
    EXPECT_EQ(simulate_step(s).step_time, e->report.step_time) << e->candidate.label;
  }
  const auto dir = std::filesystem::temp_directory_path() / "stepsim_search_test";
  std::filesystem::create_directories(dir);
  const auto best = dir / "best.yaml";
  const auto csv = dir / "search.csv";
  const Result r = run({"-q",
                        "search",
                        input("dense.yaml"),
                        "-j",
                        "2",
                        "--space",
                        "tp=1,2,4,8",
                        "--space",
                        "pp=1,2,4",
                        "--space",
                        "vpp=1,2",
                        "--space",
                        "zero=0,1",
                        "--space",
                        "micro_batch=1,2",
                        "--space",
                        "recompute=none,full",
                        "--write-best",
                        best.string(),
                        "--csv",
                        csv.string(),
                        "--top",
                        "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(o.ranked.front().candidate.label), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pruned by bound"), std::string::npos);
  const Scenario written = load_scenario(best, {});
  EXPECT_EQ(simulate_step(written).step_time, o.ranked.front().report.step_time);
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("rank,layout,step_time_s,bound_s,tokens_per_s,mfu,exposed_", 0), 0u);
  const Result run_best = run({"-q", "run", best.string()});
  EXPECT_EQ(run_best.code, 0) << run_best.err;
  EXPECT_NE(run_best.out.find(format_time(o.ranked.front().report.step_time)), std::string::npos)
      << run_best.out;
}

}  // namespace
}  // namespace stepsim::search

namespace stepsim::search {
namespace {

// `stepsim compare --search`: each topology at its best layout, as `stepsim search` finds it.
TEST(CompareSearch, ComparesTheBestLayoutOfEachTopology) {
  const std::vector<std::string> space = {"--space", "tp=1,2,4,8", "--space",
                                          "pp=1,2",  "--space",    "recompute=none"};
  std::vector<std::string> args = {"-q",
                                   "compare",
                                   input("dense.yaml"),
                                   "--search",
                                   "-j",
                                   "2",
                                   "--topology",
                                   "dgx-h100-superpod:nodes=2",
                                   "--topology",
                                   "cluster:nodes=2,nic_speed=100Gbps"};
  args.insert(args.end(), space.begin(), space.end());
  const Result r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* topology : {"dgx-h100-superpod:nodes=2", "cluster:nodes=2,nic_speed=100Gbps"}) {
    const Scenario base = load_scenario(input("dense.yaml"), {std::string("topology=") + topology});
    SearchSpace s = default_space(base);
    for (std::size_t i = 1; i < space.size(); i += 2)
      apply_space_argument(s, space[i]);
    SearchOptions options;
    options.threads = 2;
    const SearchOutcome o = search_layouts(base, s, options);
    const std::string label = std::string(topology) + " [" + o.ranked.front().candidate.label + "]";
    const auto line = r.out.find(label);
    ASSERT_NE(line, std::string::npos) << label << "\n" << r.out;
    EXPECT_NE(r.out.find(format_time(o.ranked.front().report.step_time), line), std::string::npos)
        << r.out;
  }
  // --space needs --search.
  EXPECT_EQ(run({"compare", input("dense.yaml"), "--space", "tp=1"}).code, 2);
}

}  // namespace
}  // namespace stepsim::search

namespace stepsim::search {
namespace {

// The default space holds the scenario's own layout, so the search never returns a slower one.
TEST(Search, FindsALayoutAtLeastAsFastAsTheScenarios) {
  const Scenario base = load_scenario(input("dense.yaml"), {});
  SearchOptions options;
  options.threads = 2;
  const SearchOutcome o = search_layouts(base, default_space(base), options);
  EXPECT_EQ(o.scenario_layout, "tp4 sp pp2 dp2 zero1 mb1 selective");
  ASSERT_GT(o.scenario_bound, Time::zero()) << "the scenario's layout is not a candidate";
  const Time own = simulate_step(base).step_time;
  EXPECT_LE(o.ranked.front().report.step_time, own);
  if (o.scenario_rank > 0) {
    EXPECT_EQ(o.ranked[o.scenario_rank - 1].report.step_time, own);
  } else {
    EXPECT_GE(o.scenario_bound, o.ranked.front().report.step_time);
  }
  std::ostringstream text;
  print_search(text, o, 3);
  EXPECT_NE(text.str().find("the scenario's layout, tp4 sp pp2 dp2 zero1 mb1 selective: "),
            std::string::npos)
      << text.str();
}

}  // namespace
}  // namespace stepsim::search

namespace stepsim::search {
namespace {

std::size_t pruned_by(const SearchOutcome& o, const std::string& rule) {
  for (const auto& r : o.pruned) {
    if (r.rule == rule) return r.count;
  }
  return 0;
}

// --max-memory applies to every candidate: a layout whose simulation is estimated to need more
// (estimate_resources, the guard of `stepsim run`) is pruned by its own rule, not an error.
TEST(Search, MaxMemoryPrunesTheLayoutsTooBigToSimulate) {
  // 64 sequences: from 1 micro-batch per replica (dp 16, micro_batch 4) to 64 (dp 1), so that
  // some estimates are extrapolated and some are not.
  const Scenario base = load_scenario(input("dense.yaml"), {"training.global_batch=64"});
  SearchSpace space = small_space(base);
  apply_space_assignment(space, "micro_batch=1,4");
  SearchOptions options;
  options.threads = 2;
  SearchOutcome unlimited;
  const std::vector<Candidate> all = prepare_candidates(base, space, options, unlimited);
  std::vector<Bytes> estimates;
  for (const auto& c : all) {
    const ResourceEstimate e = estimate_resources(c.spec);
    if (e.extrapolated) estimates.push_back(e.memory);
  }
  ASSERT_GE(estimates.size(), 2u);
  std::sort(estimates.begin(), estimates.end());
  ASSERT_LT(estimates.front(), estimates.back());
  // A limit between the smallest and the largest estimate.
  options.max_simulation_memory = estimates[estimates.size() / 2];
  std::size_t over = 0;
  for (const Bytes e : estimates)
    over += e > options.max_simulation_memory ? 1 : 0;
  ASSERT_GT(over, 0u);
  const SearchOutcome limited = search_layouts(base, space, options);
  EXPECT_EQ(pruned_by(limited, "max-memory"), over);
  std::size_t pruned = 0;
  for (const auto& r : limited.pruned)
    pruned += r.count;
  EXPECT_EQ(limited.enumerated, pruned + limited.simulated);
  for (const auto& e : limited.ranked) {
    const ResourceEstimate r = estimate_resources(e.candidate.spec);
    EXPECT_TRUE(!r.extrapolated || r.memory <= options.max_simulation_memory) << e.candidate.label;
  }
  // Without a limit, the rule is not listed.
  for (const auto& r : unlimited.pruned)
    EXPECT_NE(r.rule, "max-memory");

  // From the command line: `run` refuses the scenario's own layout (32 micro-batches per replica)
  // under a 1 KiB limit; the search prunes it and every other layout with more than 4 x pp
  // micro-batches, and simulates the rest.
  const std::string file = input("dense.yaml");
  const Result refused =
      run({"-q", "run", file, "-o", "training.global_batch=64", "--max-memory", "1KiB"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("too big to simulate here"), std::string::npos) << refused.err;
  const Result searched =
      run({"-q", "search", file, "-o", "training.global_batch=64", "-j", "2", "--space",
           "micro_batch=1,4", "--space", "recompute=full", "--max-memory", "1KiB"});
  ASSERT_EQ(searched.code, 0) << searched.err;
  EXPECT_NE(searched.out.find("pruned by max-memory"), std::string::npos) << searched.out;
  EXPECT_EQ(searched.out.find("      0 pruned by max-memory"), std::string::npos) << searched.out;
  // When every layout is too big to simulate: exit 2, naming the option and the first layout.
  const Result none =
      run({"-q", "search", file, "-o", "training.global_batch=64", "--space", "micro_batch=1",
           "--space", "tp=8", "--space", "pp=2", "--max-memory", "1KiB"});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("can be simulated within 1 KiB of memory (--max-memory"),
            std::string::npos)
      << none.err;
  EXPECT_NE(none.err.find("tp8 sp pp2 dp1"), std::string::npos) << none.err;
  const Result bad = run({"search", file, "--max-memory", "lots"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--max-memory"), std::string::npos) << bad.err;
}

// --memory-with checks each layout's memory on another model than the one simulated: the whole
// model of a slice. The memory shown and the rule are those of the whole model.
TEST(Search, MemoryWithChecksTheWholeModel) {
  const Scenario base = load_scenario(input("dense.yaml"), {});
  const SearchSpace space = small_space(base);
  SearchOptions options;
  options.threads = 2;
  options.prune_by_bound = false;
  const SearchOutcome slice = search_layouts(base, space, options);
  options.memory_overrides = {"model.layers=32"};  // Llama 3 8B has 32 layers
  const SearchOutcome whole = search_layouts(base, space, options);
  EXPECT_GT(pruned_by(whole, "memory"), pruned_by(slice, "memory"));
  ASSERT_FALSE(whole.ranked.empty());
  for (const auto& e : whole.ranked) {
    auto overrides = e.candidate.overrides;
    overrides.push_back("model.layers=32");
    const Scenario s = load_scenario(input("dense.yaml"), overrides);
    Bytes peak;
    for (const auto& m : workloads::estimate_memory(s.workload)) {
      peak = std::max(peak, m.total);
      EXPECT_LE(m.total, m.capacity) << e.candidate.label;
    }
    EXPECT_EQ(e.candidate.memory_peak, peak) << e.candidate.label;
    // Simulated as the slice: the step of the 4-layer scenario.
    EXPECT_EQ(e.candidate.spec.model.layers, 4) << e.candidate.label;
  }
  // A bad override names its key, and the option needs --search in compare.
  Result r = run({"search", input("dense.yaml"), "--memory-with", "model.layers=many"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("model.layers"), std::string::npos) << r.err;
  r = run({"compare", input("dense.yaml"), "--memory-with", "model.layers=32"});
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace stepsim::search

namespace stepsim::search {
namespace {

// examples/deepseek-v3-compare-search.sh: the slice is checked for memory as the whole model, and
// the memory limits decide the pipeline: with 128 GB per NPU the whole DeepSeek-V3 fits a
// CloudMatrix384 without a pipeline (tp 4, selective recomputation); with 80 GB per GPU, no layout
// of the space fits an H800 cluster without one.
TEST(Search, DeepSeekExampleMemoryDecidesThePipeline) {
  const std::string examples = std::string(STEPSIM_SOURCE_DIR) + "/examples/";
  const std::vector<std::string> slice = {"model.layers=6", "model.moe.dense_layers=1",
                                          "training.global_batch=768"};
  SearchOptions options;
  options.threads = 2;
  options.memory_overrides = {"model.layers=61", "model.moe.dense_layers=3"};
  std::size_t unpipelined[2] = {0, 0};
  const char* files[2] = {"deepseek-v3-cloudmatrix384.yaml", "deepseek-v3-h800.yaml"};
  for (int f = 0; f < 2; ++f) {
    const Scenario base = load_scenario(examples + files[f], slice);
    SearchSpace space = default_space(base);
    for (const char* a : {"tp=1,2,4", "pp=1,2,3,6", "vpp=1", "ep=16,32,64", "zero=0,1",
                          "micro_batch=1,2", "recompute=none,selective,full"})
      apply_space_assignment(space, a);
    SearchOutcome o;
    const std::vector<Candidate> candidates = prepare_candidates(base, space, options, o);
    ASSERT_FALSE(candidates.empty()) << files[f];
    EXPECT_GT(pruned_by(o, "memory"), 0u) << files[f];
    const Bytes capacity = base.workload.compute.device.hbm_capacity;
    for (const auto& c : candidates) {
      EXPECT_EQ(c.spec.model.layers, 6) << c.label;  // simulated as the slice
      EXPECT_LE(c.memory_peak, capacity) << c.label;
      if (c.spec.parallel.pp == 1) ++unpipelined[f];
    }
  }
  EXPECT_GT(unpipelined[0], 0u) << "no layout without a pipeline fits the CloudMatrix384";
  EXPECT_EQ(unpipelined[1], 0u) << "a layout without a pipeline fits the H800 cluster";
}

}  // namespace
}  // namespace stepsim::search
