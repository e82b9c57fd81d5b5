#include "sim/run/step_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "sim/executor/op_label.hpp"
#include "sim/run/trace_listener.hpp"

namespace stepsim {

std::string rank_name(const workloads::Workload& workload, const topology::Topology& topology,
                      int r, const std::vector<std::uint32_t>& rank_accelerators) {
  const auto& rm = workload.ranks();
  const auto& spec = workload.spec().parallel;
  const std::size_t accelerator = rank_accelerators.empty()
                                      ? static_cast<std::size_t>(r)
                                      : rank_accelerators[static_cast<std::size_t>(r)];
  std::string name = fmt::format(
      "rank {} ({}) tp{} pp{} dp{}", r, topology.name(topology.accelerators()[accelerator]),
      rm.coordinate(r, workloads::OrderDim::kTp), rm.coordinate(r, workloads::OrderDim::kPp),
      rm.coordinate(r, workloads::OrderDim::kDp));
  if (spec.cp > 1) name += fmt::format(" cp{}", rm.coordinate(r, workloads::OrderDim::kCp));
  if (spec.ep > 1) name += fmt::format(" ep{}", rm.coordinate(r, workloads::OrderDim::kEp));
  return name;
}

std::vector<int> stage_first_ranks(const workloads::Workload& workload) {
  std::vector<int> first(static_cast<std::size_t>(workload.spec().parallel.pp), -1);
  for (int r = 0; r < workload.world_size(); ++r) {
    auto& f = first[static_cast<std::size_t>(workload.ranks().stage(r))];
    if (f < 0) f = r;
  }
  return first;
}

std::vector<int> parse_view_ranks(const std::string& text, const workloads::Workload& workload) {
  if (text != "auto") {
    std::vector<int> ranks = parse_trace_ranks(text, workload);
    if (ranks.empty()) {  // "all" (or "auto" of a small world, not reached here)
      for (int r = 0; r < workload.world_size(); ++r)
        ranks.push_back(r);
    }
    return ranks;
  }
  const std::vector<int> first = stage_first_ranks(workload);
  const std::size_t stages = first.size();
  const std::size_t shown = std::min<std::size_t>(stages, kAutoViewRanks);
  std::vector<int> ranks;
  // Evenly spread, the first and the last stage always among them.
  for (std::size_t i = 0; i < shown; ++i) {
    const std::size_t stage = shown == 1 ? 0 : i * (stages - 1) / (shown - 1);
    ranks.push_back(first[stage]);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::vector<double> bin_piecewise_constant(const std::vector<Time>& times,
                                           const std::vector<double>& values, Time end,
                                           std::size_t bins) {
  std::vector<double> out(bins, 0.0);
  if (bins == 0 || end <= Time::zero()) return out;
  const double end_ps = static_cast<double>(end.picoseconds());
  const double bin_ps = end_ps / static_cast<double>(bins);
  // Adds `value` over [from, to) (picoseconds) to the bins it covers, weighted by the overlap.
  auto add = [&](double from, double to, double value) {
    from = std::max(from, 0.0);
    to = std::min(to, end_ps);
    if (!(to > from) || value == 0) return;
    auto b = static_cast<std::size_t>(from / bin_ps);
    for (; b < bins; ++b) {
      const double lo = std::max(from, bin_ps * static_cast<double>(b));
      const double hi = std::min(to, bin_ps * static_cast<double>(b + 1));
      if (hi <= lo) break;
      out[b] += value * (hi - lo) / bin_ps;
    }
  };
  for (std::size_t i = 0; i < times.size(); ++i) {
    const double from = static_cast<double>(times[i].picoseconds());
    const double to =
        i + 1 < times.size() ? static_cast<double>(times[i + 1].picoseconds()) : end_ps;
    add(from, to, values[i]);
  }
  return out;
}

StepViewRecorder::StepViewRecorder(const workloads::Workload& workload,
                                   const topology::Topology& topology,
                                   const std::vector<int>& ranks, executor::OpListener* next,
                                   const std::vector<std::uint32_t>& rank_accelerators)
    : index_(static_cast<std::size_t>(workload.world_size()), -1), next_(next) {
  for (int r : ranks) {
    index_[static_cast<std::size_t>(r)] = static_cast<int>(ranks_.size());
    ranks_.push_back(
        {r, workload.ranks().stage(r), rank_name(workload, topology, r, rank_accelerators), {}});
  }
}

void StepViewRecorder::on_op(const executor::OpRecord& rec) {
  if (next_ != nullptr) next_->on_op(rec);
  const int i = index_[static_cast<std::size_t>(rec.rank)];
  if (i < 0) return;
  const workloads::Op& op = *rec.op;
  ViewSpan span;
  span.issued = rec.issued;
  span.start = rec.start;
  span.end = rec.end;
  span.stream = op.stream;
  span.kind = op.kind;
  span.dim = op.dim;
  span.label = executor::op_label(op);
  span.bytes = op.bytes;
  span.flops = op.flops;
  if (rec.algorithm != nullptr) span.algorithm = rec.algorithm;
  span.peer = rec.peer;
  ranks_[static_cast<std::size_t>(i)].spans.push_back(std::move(span));
}

void add_link_views(StepView& view, const topology::Topology& topology,
                    const executor::Executor& executor, const std::vector<std::uint32_t>& sampled,
                    Time step_time, std::size_t bins) {
  const auto& network = executor.network();
  const double seconds = step_time.seconds();
  for (std::uint32_t l : sampled) {
    const engine::LinkId id{l};
    const topology::LinkIndex index{l};
    LinkActivity activity;
    activity.link = topology.describe(index);
    activity.link_class = topology.link_class(index).name;
    const double bandwidth = network.bandwidth(id).value();
    if (seconds > 0) {
      activity.utilization = network.link_statistics(id).bytes_carried / (bandwidth * seconds);
    }
    std::vector<Time> times;
    std::vector<double> values;
    for (const auto& sample : network.utilization_samples(id)) {
      times.push_back(sample.time);
      values.push_back(sample.utilization);
    }
    activity.bins = bin_piecewise_constant(times, values, step_time, bins);
    view.links.push_back(std::move(activity));
  }
  // Per class, in the order the classes first appear among the links.
  std::map<std::string, std::size_t> position;
  for (std::uint32_t l = 0; l < topology.num_links(); ++l) {
    const engine::LinkId id{l};
    const std::string& name = topology.link_class(topology::LinkIndex{l}).name;
    auto [it, added] = position.emplace(name, view.link_classes.size());
    if (added) view.link_classes.push_back({name});
    LinkClassTotal& total = view.link_classes[it->second];
    const double bandwidth = network.bandwidth(id).value();
    const double bytes = network.link_statistics(id).bytes_carried;
    ++total.links;
    total.bytes_carried += bytes;
    total.capacity_Bps += bandwidth;
    if (seconds > 0)
      total.busiest_utilization =
          std::max(total.busiest_utilization, bytes / (bandwidth * seconds));
  }
  for (auto& total : view.link_classes) {
    if (seconds > 0 && total.capacity_Bps > 0)
      total.utilization = total.bytes_carried / (total.capacity_Bps * seconds);
  }
}

}  // namespace stepsim
