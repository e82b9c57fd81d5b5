// How the simulations of a search are shared: the report codec that carries a result between
// processes, the candidate queue, and the search under a distribution that finishes candidates
// out of order (as processes do). The MPI distribution itself is tested by mpi_search.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "sim/run/simulate.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/search/candidate_queue.hpp"
#include "sim/search/distribution.hpp"
#include "sim/search/layout_search.hpp"
#include "sim/search/report_codec.hpp"
#include "sim/search/search_output.hpp"
#include "sim/search/search_space.hpp"
#include "tests/search/all_output.hpp"

namespace stepsim::search {
namespace {

std::string input(const std::string& name) {
  return std::string(STEPSIM_SOURCE_DIR) + "/tests/search/" + name;
}

std::string summary(const StepReport& r) {
  std::ostringstream s;
  print_summary(s, r);
  return s.str();
}

// A report decoded from its encoding prints and serializes as the original, byte for byte, and
// encodes to the same bytes; a cut or padded encoding is refused.
TEST(ReportCodec, RoundTripIsExact) {
  for (const char* file : {"dense.yaml", "moe.yaml"}) {
    const StepReport report = simulate_step(load_scenario(input(file), {}));
    ASSERT_FALSE(report.breakdowns.empty());
    ASSERT_FALSE(report.busiest_links.empty());
    ASSERT_FALSE(report.memory.empty());
    const std::string bytes = encode_report(report);
    const StepReport back = decode_report(bytes);
    EXPECT_EQ(back.step_time, report.step_time) << file;
    EXPECT_EQ(summary(back), summary(report)) << file;
    EXPECT_EQ(to_json(back).dump(), to_json(report).dump()) << file;
    EXPECT_EQ(back.solves, report.solves);
    EXPECT_EQ(encode_report(back), bytes) << file;
    EXPECT_THROW(decode_report(std::string_view(bytes).substr(0, bytes.size() - 1)),
                 std::runtime_error);
    EXPECT_THROW(decode_report(bytes + "x"), std::runtime_error);
  }
}

StepReport report_of(Time step) {
  StepReport r;
  r.step_time = step;
  return r;
}

// Bounds 1, 2, 3, 4 ms: after the first candidate simulates to 2.5 ms, the second (bound 2 ms) is
// still handed out and the third (bound 3 ms) is not, nor anything after it.
TEST(CandidateQueue, HandsOutInBoundOrderWhileBelowTheBest) {
  std::vector<SearchProgress> seen;
  CandidateQueue queue({Time::ms(1), Time::ms(2), Time::ms(3), Time::ms(4)}, true,
                       [&](const SearchProgress& p) { seen.push_back(p); });
  EXPECT_EQ(queue.take(), std::optional<std::size_t>(0));
  queue.finish(0, report_of(Time::us(2500)), nullptr);
  EXPECT_EQ(queue.take(), std::optional<std::size_t>(1));
  EXPECT_EQ(queue.take(), std::nullopt);
  queue.finish(1, report_of(Time::ms(5)), nullptr);
  EXPECT_EQ(queue.take(), std::nullopt);
  ASSERT_EQ(seen.size(), 4u);  // two starts, two ends
  EXPECT_EQ(seen[1].best, Time::us(2500));
  EXPECT_EQ(seen[1].left_at_most, 1u);  // only bound 2 ms is below 2.5 ms
  EXPECT_EQ(seen.back().simulated, 2u);
  EXPECT_EQ(seen.back().running, 0u);
  EXPECT_EQ(queue.reports()[1]->step_time, Time::ms(5));
  EXPECT_FALSE(queue.reports()[2].has_value());

  // Without pruning, every candidate is handed out whatever the results.
  CandidateQueue all({Time::ms(1), Time::ms(9)}, false, {});
  EXPECT_EQ(all.take(), std::optional<std::size_t>(0));
  all.finish(0, report_of(Time::ms(2)), nullptr);
  EXPECT_EQ(all.take(), std::optional<std::size_t>(1));
}

// Takes up to `width` candidates before finishing any, and finishes them last taken first: what
// `width` processes that finish in any order do to the queue.
class OutOfOrderDistribution final : public Distribution {
 public:
  explicit OutOfOrderDistribution(std::size_t width) : width_(width) {}
  int rank() const override { return 0; }
  int processes() const override { return 1; }
  int processes_here() const override { return 1; }
  std::string first_error(const std::string& local) override { return local; }
  std::vector<std::string> all_gather(const std::string& mine) override { return {mine}; }
  void run(CandidateQueue& queue, unsigned,
           const std::function<StepReport(std::size_t)>& simulate) override {
    for (;;) {
      std::vector<std::size_t> taken;
      while (taken.size() < width_) {
        const auto i = queue.take();
        if (!i) break;
        taken.push_back(*i);
      }
      if (taken.empty()) return;
      std::reverse(taken.begin(), taken.end());
      for (const std::size_t i : taken)
        queue.finish(i, simulate(i), nullptr);
    }
  }

 private:
  std::size_t width_;
};

using test::all_output;

// The ranked output of one thread is that of any number of processes finishing out of order:
// speculative results past the bound's stop are dropped, and no candidate before it is missed.
TEST(Distribution, OutOfOrderResultsGiveTheSameOutput) {
  const Scenario base = load_scenario(input("dense.yaml"), {});
  SearchSpace space = default_space(base);
  apply_space_assignment(space, "tp=1,2,4,8");
  apply_space_assignment(space, "pp=1,2,4");
  apply_space_assignment(space, "zero=0,1");
  apply_space_assignment(space, "micro_batch=1,2");
  apply_space_assignment(space, "recompute=none,full");
  SearchOptions options;
  options.threads = 1;
  const SearchOutcome one = search_layouts(base, space, options);
  const std::string expected = all_output(one);
  std::size_t bound_pruned = 0;
  for (const auto& r : one.pruned) {
    if (r.rule == "bound") bound_pruned = r.count;
  }
  ASSERT_GT(bound_pruned, 0u) << "the bound must stop this search for the test to mean anything";
  for (const std::size_t width : {2u, 3u, 8u}) {
    OutOfOrderDistribution distribution(width);
    options.distribution = &distribution;
    EXPECT_EQ(all_output(search_layouts(base, space, options)), expected) << width;
  }
}

// Two processes on a machine share its cores; -j is per process.
class SecondOfTwo final : public Distribution {
 public:
  int rank() const override { return 1; }
  int processes() const override { return 2; }
  int processes_here() const override { return 2; }
  std::string first_error(const std::string& local) override { return local; }
  std::vector<std::string> all_gather(const std::string& mine) override { return {"", mine}; }
  void run(CandidateQueue&, unsigned, const std::function<StepReport(std::size_t)>&) override {}
};

TEST(Distribution, ThreadsShareTheMachine) {
  const SecondOfTwo process;
  EXPECT_EQ(process.threads(3), 3u);
  EXPECT_EQ(process.threads(0), std::max(1u, std::thread::hardware_concurrency() / 2));
  // Outside an MPI launcher (as ctest runs this), the distribution is this process alone.
  EXPECT_EQ(make_distribution()->processes(), 1);
}

}  // namespace
}  // namespace stepsim::search
