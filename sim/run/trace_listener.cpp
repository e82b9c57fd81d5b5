#include "sim/run/trace_listener.hpp"

#include <fmt/format.h>

#include "sim/collectives/runner/placement.hpp"
#include "sim/common/input_error.hpp"
#include "sim/executor/op_label.hpp"
#include "sim/run/step_view.hpp"

namespace stepsim {
namespace {

constexpr int kStreams = static_cast<int>(workloads::Stream::kCount);
// Thread ids: one per stream; waits get the stream's id + kWaitOffset so they never overlap the
// operation that follows on the same stream.
constexpr int kWaitOffset = 100;

std::string_view category(const workloads::Op& op) {
  return op.kind == workloads::OpKind::kCompute ? "compute" : workloads::to_string(op.dim);
}

}  // namespace

std::vector<int> parse_trace_ranks(const std::string& text, const workloads::Workload& workload) {
  const int world_size = workload.world_size();
  std::vector<int> ranks;
  if (text == "all" || (text == "auto" && world_size <= kAutoTraceRanks)) return ranks;
  if (text == "auto") {
    const auto& map = workload.ranks();
    const int per_replica = world_size / workload.spec().parallel.dp;
    const int replicas = std::max(1, kAutoTraceRanks / per_replica);
    for (int r = 0; r < world_size; ++r)
      if (map.coordinate(r, workloads::OrderDim::kDp) < replicas) ranks.push_back(r);
    return ranks;
  }
  for (auto r :
       collectives::parse_ranks(text, static_cast<std::uint32_t>(world_size), "--trace-ranks")) {
    ranks.push_back(static_cast<int>(r));
  }
  return ranks;
}

TraceListener::TraceListener(const std::filesystem::path& path, const workloads::Workload& workload,
                             const topology::Topology& topology, std::vector<int> ranks,
                             output::OutputGuard* guard)
    : owned_(std::in_place, path, guard),
      writer_(*owned_),
      workload_(workload),
      topology_(topology) {
  name_processes(std::move(ranks));
}

TraceListener::TraceListener(output::TraceWriter& writer, const workloads::Workload& workload,
                             const topology::Topology& topology, std::vector<int> ranks,
                             TraceProcesses processes)
    : writer_(writer), workload_(workload), topology_(topology), processes_(std::move(processes)) {
  name_processes(std::move(ranks));
}

void TraceListener::name_processes(std::vector<int> ranks) {
  const int world = workload_.world_size();
  traced_.assign(static_cast<std::size_t>(world), ranks.empty());
  for (int r : ranks)
    traced_[static_cast<std::size_t>(r)] = true;
  for (int r = 0; r < world; ++r) {
    if (!traced(r)) continue;
    writer_.process_name(pid(r), processes_.name_prefix + rank_name(workload_, topology_, r,
                                                                    processes_.rank_accelerators));
    writer_.process_sort_index(pid(r), pid(r));
    for (int s = 0; s < kStreams; ++s) {
      const auto stream = std::string(workloads::to_string(static_cast<workloads::Stream>(s)));
      writer_.thread_name(pid(r), s, stream);
      writer_.thread_sort_index(pid(r), s, 2 * s);
      if (s != 0) {
        writer_.thread_name(pid(r), s + kWaitOffset, stream + " (waiting)");
        writer_.thread_sort_index(pid(r), s + kWaitOffset, 2 * s + 1);
      }
    }
  }
}

void TraceListener::on_op(const executor::OpRecord& rec) {
  if (!traced(rec.rank)) return;
  const workloads::Op& op = *rec.op;
  const int tid = static_cast<int>(op.stream);
  label_ = executor::op_label(op);
  if (op.kind == workloads::OpKind::kCompute) {
    writer_.complete(pid(rec.rank), tid, label_, "compute", rec.start, rec.end - rec.start,
                     {{"layer", std::int64_t{op.layer}},
                      {"micro_batch", std::int64_t{op.micro_batch}},
                      {"flops", op.flops},
                      {"hbm_bytes", op.bytes}});
    return;
  }
  if (rec.start > rec.issued) {
    writer_.complete(pid(rec.rank), tid + kWaitOffset, "wait: " + label_, "wait", rec.issued,
                     rec.start - rec.issued);
  }
  std::vector<output::TraceArg> args{{"layer", std::int64_t{op.layer}},
                                     {"micro_batch", std::int64_t{op.micro_batch}},
                                     {"bytes", op.bytes},
                                     {"collective", to_string(op.collective)}};
  if (rec.algorithm != nullptr && *rec.algorithm != '\0') {
    args.push_back({"algorithm", std::string_view(rec.algorithm)});
  }
  if (rec.peer >= 0) args.push_back({"peer", std::int64_t{rec.peer}});
  writer_.complete(pid(rec.rank), tid, label_, category(op), rec.start, rec.end - rec.start, args);
  // An arrow from the send to its receive, when both sides are traced; the ids of a later run
  // in the same trace are moved past its first process (runs have far fewer than 2^40 transfers).
  if (rec.transfer != 0 && traced(rec.peer)) {
    const std::uint64_t id =
        rec.transfer + (static_cast<std::uint64_t>(processes_.first_pid) << 40);
    if (op.kind == workloads::OpKind::kSend) {
      writer_.flow_start(pid(rec.rank), tid, id, "transfer", rec.start);
    } else {
      writer_.flow_end(pid(rec.rank), tid, id, "transfer", rec.start);
    }
  }
}

void TraceListener::finish(const executor::Executor& executor,
                           const std::vector<std::uint32_t>& links) {
  const int pid = this->pid(workload_.world_size());
  writer_.process_name(pid, processes_.name_prefix + "busiest links");
  writer_.process_sort_index(pid, processes_.first_pid - 1);
  for (std::uint32_t l : links) {
    const std::string name = topology_.describe(topology::LinkIndex{l});
    for (const auto& sample : executor.network().utilization_samples(engine::LinkId{l})) {
      writer_.counter(pid, name, "utilization", sample.time, sample.utilization);
    }
  }
  if (owned_) writer_.close();
}

}  // namespace stepsim
