#include "sim/app/collective_sweep.hpp"

#include <fmt/format.h>
#include <filesystem>
#include <memory>

#include "sim/app/memory_guard.hpp"
#include "sim/collectives/algorithms/algorithm_registry.hpp"
#include "sim/collectives/algorithms/planned_collective.hpp"
#include "sim/collectives/plan/alltoallv_matrix.hpp"
#include "sim/collectives/plan/size_sweep.hpp"
#include "sim/collectives/runner/collective_session.hpp"
#include "sim/common/input_error.hpp"
#include "sim/validation/published_points.hpp"
#include "topology/load_topology.hpp"

namespace stepsim::app {
namespace {

using namespace stepsim::collectives;

// Memory per transfer of an AllToAll plan on the flow network (its route, flow state and
// record), measured with GNU time's peak resident size: `stepsim collective -t
// dgx-h100-superpod:nodes=N --op alltoall --sizes 64MiB` took 71 MB at N = 32 (65,280 transfers)
// and 274 MB at N = 64 (261,632), 1.03 kB per transfer; rounded up (docs/reliability.md).
constexpr double kBytesPerPairTransfer = 1100;

constexpr int kTypeBytes = 4;  // float, as nccl-tests' default

// The request, checked, with what the runs need.
struct Setup {
  CollectiveKind kind;
  std::unique_ptr<Algorithm> algorithm;
  topology::Topology topo;
  std::vector<std::uint32_t> ranks;
  Placement placement;
  GroupShape shape;
  std::uint32_t n = 0;
  std::vector<Bytes> sweep;                    // the sizes to run
  std::optional<AllToAllvMatrix> file_matrix;  // alltoallv: --matrix's
};

// AllToAllv: the per-pair sizes come from a file or a skew, one of the two; the sweep is the
// file's largest row sum unless sizes were given.
void check_matrix(const CollectiveRequest& r, Setup& s) {
  if (s.kind == CollectiveKind::kAllToAllv) {
    if (r.matrix.empty() == !r.skew.has_value())
      throw InputError(
          "--op alltoallv needs its per-pair sizes: --matrix FILE.csv (n x n sizes, row = "
          "sender) or --skew S (Zipf skew of the receivers, 0 = uniform), one of the two");
    if (!r.matrix.empty()) {
      s.file_matrix = read_alltoallv_matrix_csv(r.matrix, s.n);
      if (!r.sizes_given) s.sweep = {s.file_matrix->largest_row_sum()};
    } else {
      check_skew(*r.skew);
    }
  } else if (!r.matrix.empty() || r.skew.has_value()) {
    throw InputError(
        fmt::format("--matrix and --skew apply to --op alltoallv, not --op {}", to_string(s.kind)));
  }
}

Setup check_request(const CollectiveRequest& r, const NetworkOptions& network) {
  const CollectiveKind kind = parse_collective_kind(r.op);
  auto algorithm = builtin_algorithms().create(network.algorithm);
  std::vector<Bytes> sizes = parse_size_sweep(r.sizes);
  topology::Topology topo =
      topology::load_topology_spec(r.topology, std::filesystem::current_path());
  auto ranks = parse_ranks(r.ranks, static_cast<std::uint32_t>(topo.accelerators().size()));
  Placement placement = place_group(topo, ranks);
  GroupShape shape = group_shape(topo, placement);
  const auto n = static_cast<std::uint32_t>(ranks.size());
  Setup s{kind,
          std::move(algorithm),
          std::move(topo),
          std::move(ranks),
          std::move(placement),
          std::move(shape),
          n,
          std::move(sizes),
          std::nullopt};
  // One rank has nothing to exchange: the time is zero and the bandwidths infinite.
  if (n < 2)
    throw InputError(
        fmt::format("--ranks '{}': a collective needs at least 2 ranks, got {}", r.ranks, n));
  check_matrix(r, s);
  if (kind == CollectiveKind::kSendRecv && n != 2)
    throw InputError(fmt::format("--op sendrecv runs between two ranks; --ranks gave {}", n));
  if (r.root >= n) throw InputError(fmt::format("--root {}: the group has {} ranks", r.root, n));
  // An AllToAll sends from every rank to every other at once: n(n-1) transfers, the one
  // collective whose size grows with the square of the group.
  if (kind == CollectiveKind::kAllToAll || kind == CollectiveKind::kAllToAllv)
    guard_all_to_all(fmt::format("--op {}", to_string(kind)), "transfers", n, kBytesPerPairTransfer,
                     r.max_memory);
  return s;
}

Operation operation(const CollectiveRequest& r, const Setup& s, Bytes size) {
  Operation op;
  op.kind = s.kind;
  op.size = size;
  if (s.kind == CollectiveKind::kAllToAllv) {
    const AllToAllvMatrix m = s.file_matrix ? scale_alltoallv_matrix(*s.file_matrix, size)
                                            : skewed_alltoallv_matrix(s.n, size, *r.skew);
    op.matrix = m.sizes;
    op.size = m.largest_row_sum();
  }
  op.root = r.root;
  op.peer = 1;
  return op;
}

// Runs every size of the sweep, one after the other on one session (an idle network each time).
std::vector<CollectiveRow> run_sweep(const CollectiveRequest& r, const Setup& s,
                                     const NetworkOptions& network) {
  RunnerOptions runner = network.runner;
  SweepProgress now;
  now.sizes = s.sweep.size();
  std::uint64_t done_before = 0;  // by the sizes before this one
  if (r.progress) {
    runner.progress = [&](std::uint64_t done) {
      now.done = done - done_before;
      r.progress(now);
    };
  }
  CollectiveSession session(s.topo, network.calibration, runner);
  if (r.before_runs) r.before_runs();
  std::vector<CollectiveRow> rows;
  for (std::size_t i = 0; i < s.sweep.size(); ++i) {
    const Operation op = operation(r, s, s.sweep[i]);
    if (auto why = s.algorithm->unsupported(op, s.shape))
      throw InputError(fmt::format("--algo {} cannot run {} on these {} ranks: {}",
                                   network.algorithm, to_string(s.kind), s.n, *why));
    PlannedCollective planned = plan_collective(*s.algorithm, op, s.shape, network.plan);
    now = {i, s.sweep.size(), op.size, planned.plan.size(), 0};
    if (r.progress) r.progress(now);
    const Time t = session.run(std::make_shared<const Plan>(std::move(planned.plan)), s.placement);
    now.done = now.transfers;  // the size done: 100% of it
    if (r.progress) r.progress(now);
    done_before += now.transfers;
    const double algbw = op.size.as_double() / t.seconds() * 1e-9;
    rows.push_back({op.size, nccl_tests_count(s.kind, op.size, s.n, kTypeBytes), t, algbw,
                    algbw * bus_bandwidth_factor(s.kind, s.n), std::move(planned.label)});
  }
  return rows;
}

}  // namespace

CollectiveSweep sweep_collective(const CollectiveRequest& request) {
  CollectiveSweep sweep;
  // The operation is named first, then the network settings, as the command line checks them.
  parse_collective_kind(request.op);
  sweep.network = request.network.read();
  Setup s = check_request(request, sweep.network);
  sweep.rows = run_sweep(request, s, sweep.network);
  sweep.request = request;
  sweep.request.progress = nullptr;
  sweep.request.before_runs = nullptr;
  sweep.kind = s.kind;
  sweep.topology_name = s.topo.name();
  sweep.ranks = s.ranks;
  sweep.accelerators = static_cast<std::uint32_t>(s.topo.accelerators().size());
  sweep.protocol = request.network.find("protocol").value_or("auto");
  return sweep;
}

std::optional<std::vector<PublishedBusbw>> published_points(const CollectiveSweep& sweep,
                                                            const std::string& cases_file) {
  if (!std::filesystem::exists(cases_file)) return std::nullopt;
  std::vector<PublishedBusbw> published;
  const auto cases = validation::load_cases(cases_file);
  for (const auto& p : validation::published_busbw(
           cases, sweep.request.topology, std::string(to_string(sweep.kind)),
           sweep.network.algorithm, sweep.ranks, sweep.accelerators)) {
    published.push_back(
        {p.size, p.busbw_GBps, fmt::format("{}, {}; {}", p.figure, p.algorithm, p.reference)});
  }
  return published;
}

}  // namespace stepsim::app
