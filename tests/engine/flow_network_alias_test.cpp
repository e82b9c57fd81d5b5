// Aliased links (FlowNetwork::set_link_aliases): a group of links that every flow loads alike
// kept as one link in the classes. The rates, finish times and statistics must be those of the
// network that keeps every link, to the bit; a flow that does not load a group alike is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/engine/flow_network.hpp"
#include "sim/engine/simulator.hpp"

namespace stepsim::engine {
namespace {

// Base links, each present as `copies` parallel links of one bandwidth (laid out one base link
// after another), and sprayed flows over sets of base links: a flow crosses every copy of each of
// its base links with share 1 / copies.
struct Instance {
  std::vector<double> capacity;  // per base link
  std::vector<std::uint32_t> copies;
  struct Flow {
    std::vector<std::uint32_t> bases;
    std::int64_t bytes = 0;
    Time start;
  };
  std::vector<Flow> flows;
};

Instance make_instance(std::mt19937_64& rng) {
  Instance in;
  const int bases = std::uniform_int_distribution<int>(2, 8)(rng);
  for (int b = 0; b < bases; ++b) {
    // Few distinct bandwidths, so that fair shares tie between groups too.
    in.capacity.push_back(10e9 * std::uniform_int_distribution<int>(1, 3)(rng));
    in.copies.push_back(std::uniform_int_distribution<std::uint32_t>(1, 4)(rng));
  }
  const int flows = std::uniform_int_distribution<int>(1, 30)(rng);
  for (int f = 0; f < flows; ++f) {
    Instance::Flow flow;
    const int len = std::uniform_int_distribution<int>(1, std::min(3, bases))(rng);
    while (static_cast<int>(flow.bases.size()) < len) {
      const auto b = std::uniform_int_distribution<std::uint32_t>(0, bases - 1)(rng);
      if (std::find(flow.bases.begin(), flow.bases.end(), b) == flow.bases.end())
        flow.bases.push_back(b);
    }
    flow.bytes = std::uniform_int_distribution<int>(0, 3)(rng) == 0
                     ? 1'000'000
                     : std::uniform_int_distribution<std::int64_t>(1, 4'000'000)(rng);
    flow.start = Time::us(20) * std::uniform_int_distribution<int>(0, 3)(rng);
    in.flows.push_back(flow);
  }
  return in;
}

struct Outcome {
  std::vector<Time> finish;
  std::vector<LinkStatistics> links;  // per physical link
  std::uint64_t solves = 0;
};

// aliased: the network keeps one link per group; kept: the flows' links are also given as
// keep_representatives leaves them (the representative alone for each group).
Outcome run(const Instance& in, bool aliased, bool kept = false) {
  Simulator sim;
  FlowNetwork network(sim);
  std::vector<std::uint32_t> first;  // per base link: the index of its first copy
  std::vector<LinkId> representative;
  for (std::size_t b = 0; b < in.capacity.size(); ++b) {
    first.push_back(static_cast<std::uint32_t>(network.link_count()));
    for (std::uint32_t c = 0; c < in.copies[b]; ++c) {
      network.add_link(BytesPerSecond(in.capacity[b]), Time::ns(100));
      representative.push_back(LinkId{first.back()});
    }
  }
  if (aliased) network.set_link_aliases(representative);
  Outcome out;
  out.finish.assign(in.flows.size(), Time::zero());
  for (std::size_t f = 0; f < in.flows.size(); ++f) {
    sim.schedule_at(in.flows[f].start, [&, f] {
      std::vector<LinkShare> shares;
      for (const std::uint32_t b : in.flows[f].bases) {
        for (std::uint32_t c = 0; c < in.copies[b]; ++c)
          shares.push_back({LinkId{first[b] + c}, 1.0 / in.copies[b]});
      }
      if (kept) network.keep_representatives(shares);
      network.start_sprayed_flow(0, 1, Bytes(in.flows[f].bytes), shares, Time::ns(300),
                                 [&out, f](const FlowCompletion& c) { out.finish[f] = c.finish; });
    });
  }
  sim.run();
  network.check_invariants();
  for (std::uint32_t l = 0; l < network.link_count(); ++l)
    out.links.push_back(network.link_statistics(LinkId{l}));
  out.solves = network.solves();
  return out;
}

TEST(FlowNetworkAliases, RandomInstancesFinishAtTheSamePicosecondAsWithEveryLink) {
  std::mt19937_64 rng(20261202);
  int grouped = 0;
  for (int i = 0; i < 300; ++i) {
    SCOPED_TRACE(i);
    const Instance in = make_instance(rng);
    const Outcome all = run(in, false);
    const Outcome kept = run(in, true);
    const Outcome given = run(in, true, true);
    for (std::size_t f = 0; f < in.flows.size(); ++f)
      ASSERT_EQ(given.finish[f], all.finish[f]) << "flow " << f << ", links given kept";
    for (std::size_t f = 0; f < in.flows.size(); ++f)
      ASSERT_EQ(kept.finish[f], all.finish[f]) << "flow " << f;
    ASSERT_EQ(kept.solves, all.solves);
    for (std::size_t l = 0; l < all.links.size(); ++l) {
      ASSERT_EQ(kept.links[l].bytes_carried, all.links[l].bytes_carried) << "link " << l;
      ASSERT_EQ(kept.links[l].busy_time, all.links[l].busy_time) << "link " << l;
      ASSERT_EQ(kept.links[l].peak_flows, all.links[l].peak_flows) << "link " << l;
    }
    for (const std::uint32_t c : in.copies)
      grouped += c > 1 ? 1 : 0;
  }
  EXPECT_GT(grouped, 300);  // the instances had groups to keep one link of
}

TEST(FlowNetworkAliases, AMemberReportsItsRepresentativesStatistics) {
  // Two parallel 10 GB/s links as one group and a 1 MB flow sprayed over both: 50 us, each link
  // carries 0.5 MB.
  Simulator sim;
  FlowNetwork network(sim);
  network.add_link(BytesPerSecond(10e9), Time::zero());
  network.add_link(BytesPerSecond(10e9), Time::zero());
  network.set_link_aliases(std::vector<LinkId>{LinkId{0}, LinkId{0}});
  Time finish;
  const std::vector<LinkShare> shares{{LinkId{0}, 0.5}, {LinkId{1}, 0.5}};
  network.start_sprayed_flow(0, 1, Bytes(1'000'000), shares, Time::zero(),
                             [&](const FlowCompletion& c) { finish = c.finish; });
  sim.run();
  EXPECT_EQ(finish, Time::us(50));
  EXPECT_DOUBLE_EQ(network.link_statistics(LinkId{1}).bytes_carried, 500'000.0);
  EXPECT_DOUBLE_EQ(network.link_statistics(LinkId{0}).bytes_carried, 500'000.0);
  // A link added later has no group.
  const LinkId extra = network.add_link(BytesPerSecond(1e9), Time::zero());
  network.start_flow(0, 1, Bytes(1000), std::vector<LinkId>{extra}, [](const FlowCompletion&) {});
  sim.run();
  EXPECT_DOUBLE_EQ(network.link_statistics(extra).bytes_carried, 1000.0);
}

TEST(FlowNetworkAliases, AFlowThatDoesNotLoadAGroupAlikeIsRefused) {
  Simulator sim;
  FlowNetwork network(sim);
  for (int l = 0; l < 3; ++l)
    network.add_link(BytesPerSecond(10e9), Time::zero());
  network.set_link_aliases(std::vector<LinkId>{LinkId{0}, LinkId{0}, LinkId{2}});
  const auto none = [](const FlowCompletion&) {};
  // Unequal shares, one member only, a single path through a member.
  const std::vector<LinkShare> unequal{{LinkId{0}, 0.5}, {LinkId{1}, 0.25}};
  EXPECT_THROW(network.start_sprayed_flow(0, 1, Bytes(10), unequal, Time::zero(), none),
               std::logic_error);
  const std::vector<LinkShare> part{{LinkId{1}, 1.0}, {LinkId{2}, 1.0}};
  EXPECT_THROW(network.start_sprayed_flow(0, 1, Bytes(10), part, Time::zero(), none),
               std::logic_error);
  EXPECT_THROW(network.start_flow(0, 1, Bytes(10), std::vector<LinkId>{LinkId{1}}, none),
               std::logic_error);
  // keep_representatives lists the group by its representative alone, which stands for it.
  std::vector<LinkShare> kept{{LinkId{2}, 1.0}, {LinkId{1}, 0.5}, {LinkId{0}, 0.5}};
  network.keep_representatives(kept);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].link, LinkId{0});
  EXPECT_EQ(kept[0].share, 0.5);
  EXPECT_EQ(kept[1].link, LinkId{2});
  std::vector<LinkShare> partial{{LinkId{1}, 0.5}};
  EXPECT_THROW(network.keep_representatives(partial), std::logic_error);
  // After the refusals the group still works.
  const std::vector<LinkShare> whole{{LinkId{1}, 0.5}, {LinkId{0}, 0.5}, {LinkId{2}, 1.0}};
  EXPECT_NO_THROW(network.start_sprayed_flow(0, 1, Bytes(10), whole, Time::zero(), none));
  sim.run();
  // Aliases must name a lower link of the same bandwidth that is its own representative, and
  // come before the first flow.
  Simulator sim2;
  FlowNetwork fresh(sim2);
  fresh.add_link(BytesPerSecond(10e9), Time::zero());
  fresh.add_link(BytesPerSecond(20e9), Time::zero());
  EXPECT_THROW(fresh.set_link_aliases(std::vector<LinkId>{LinkId{0}, LinkId{0}}),
               std::invalid_argument);
  EXPECT_THROW(fresh.set_link_aliases(std::vector<LinkId>{LinkId{1}, LinkId{1}}),
               std::invalid_argument);
  EXPECT_THROW(fresh.set_link_aliases(std::vector<LinkId>{LinkId{0}}), std::invalid_argument);
  EXPECT_THROW(network.set_link_aliases(std::vector<LinkId>{LinkId{0}, LinkId{0}, LinkId{2}}),
               std::logic_error);
}

}  // namespace
}  // namespace stepsim::engine
