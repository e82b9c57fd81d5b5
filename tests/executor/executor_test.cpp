// The executor against closed forms: the 1F1B pipeline bubble (p-1)/m, its division by v when
// interleaved (Narayanan et al., SC'21, section 2.2), gradient communication hidden behind the
// backward pass when shorter and exposed when longer, and byte-for-byte determinism.
#include "sim/executor/executor.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "sim/common/config.hpp"
#include "sim/engine/flow_network.hpp"
#include "topology/load_topology.hpp"
#include "workloads/workload.hpp"

namespace stepsim::executor {
namespace {

using workloads::OpKind;
using workloads::Phase;

// `n` accelerators on one switch, links of `bandwidth` each way and no latency, plus the model
// and layout sections in `rest`.
std::string scenario_text(int n, const std::string& bandwidth, const std::string& rest) {
  std::string text = "topology:\n  nodes:\n";
  text += fmt::format("    - {{name: \"gpu{{}}\", kind: accelerator, count: {}}}\n", n);
  text += "    - {name: sw, kind: switch}\n  links:\n";
  for (int i = 0; i < n; ++i) {
    text += fmt::format(
        "    - {{from: gpu{}, to: sw, bandwidth: {}, latency: 0ns, duplex: true}}\n", i, bandwidth);
  }
  return text + rest;
}

struct Run {
  config::Document doc;
  topology::Topology topology;
  workloads::Workload workload;
  ExecutionResult result;
};

const std::string kSmallModel =
    "model: {layers: 8, hidden: 1024, heads: 8, ffn: 4096, vocab: 64, gated_mlp: false}\n"
    "compute: {device: h100, launch_overhead: 0us}\n";
// The same with the embedding, output layer and loss made free, so that all stages are equal.
const std::string kEqualStages =
    "model: {layers: 8, hidden: 1024, heads: 8, ffn: 4096, vocab: 64, gated_mlp: false}\n"
    "compute: {device: h100, launch_overhead: 0us, kernel_times: " STEPSIM_SOURCE_DIR
    "/tests/inputs/kernels/no_embedding_or_head.yaml}\n";

// No software latency, line-rate links: transfers cost only bytes / bandwidth.
ExecutorOptions ideal_options(std::vector<int> detail) {
  ExecutorOptions o;
  o.network.calibration = collectives::line_rate_presets();
  o.network.plan.step_latency = Time::zero();
  o.network.plan.op_latency = Time::zero();
  o.network.algorithm = "ring";
  o.detail_ranks = std::move(detail);
  return o;
}

std::unique_ptr<Run> simulate(const std::string& text, ExecutorOptions options) {
  auto doc = config::Document::parse(text, "test.yaml");
  auto topo = topology::load_topology(doc.root().at("topology"));
  auto spec = workloads::parse_workload(doc.root());
  // Each rank's scale-up domain, as load_scenario gives it (node-limited routing, relayed
  // dispatch).
  for (const topology::NodeId a : topo.accelerators()) {
    const auto g = topo.group_of(a, topology::GroupKind::kScaleUp);
    spec.rank_domains.push_back(g ? static_cast<int>(*g) : 0);
  }
  workloads::validate_layout(spec, static_cast<int>(topo.accelerators().size()));
  auto run =
      std::make_unique<Run>(Run{std::move(doc), std::move(topo), workloads::Workload(spec), {}});
  Executor executor(run->workload, run->topology, std::move(options));
  run->result = executor.run();
  return run;
}

// Forward and backward compute time of one micro-batch on one stage (a middle stage, which has
// neither the embedding nor the output layer).
std::pair<Time, Time> stage_times(const workloads::Workload& w, int stage) {
  Time forward, backward;
  for (const auto& op : w.stage_program(stage).ops) {
    if (op.kind != OpKind::kCompute || op.micro_batch != 0) continue;
    if (op.phase == Phase::kForward) forward += op.duration;
    if (op.phase == Phase::kBackward || op.phase == Phase::kRecompute) backward += op.duration;
  }
  return {forward, backward};
}

double ratio(Time a, Time b) {
  return static_cast<double>(a.picoseconds()) / static_cast<double>(b.picoseconds());
}

// Stage 0's bubble in a 1F1B pipeline of p stages and m micro-batches: (p - 1)(tf + tb) while the
// pipeline fills and drains, plus, when a later stage is slower by d per micro-batch, m d, since
// the slowest stage paces the steady state (Narayanan et al., SC'21, section 2.2). With v model
// chunks per stage (interleaved 1F1B) the fill and drain shrink to (p - 1)(tf + tb) / v. Here the
// last stage carries the final norm (d is about 2% of tf + tb); the embedding, output layer and
// loss are made free so that no other stage differs.
Time expected_bubble(const workloads::Workload& w, int p, int m, int v) {
  const auto [f0, b0] = stage_times(w, 0);
  Time slowest = f0 + b0;
  for (int s = 1; s < p; ++s) {
    const auto [f, b] = stage_times(w, s);
    slowest = std::max(slowest, f + b);
  }
  return Time::ps((f0 + b0).picoseconds() * (p - 1) / v) + (slowest - (f0 + b0)) * m;
}

TEST(Executor, OneFOneBBubbleIsPMinusOneOverM) {
  // p = 4, m = 8: the bubble is (p - 1) / m = 0.375 of the ideal time m (tf + tb), plus the pacing.
  const int p = 4, m = 8;
  const auto run =
      simulate(scenario_text(
                   p, "1000TB/s",
                   kEqualStages + fmt::format("parallelism: {{pp: {}}}\ntraining: {{seq_len: 1024, "
                                              "micro_batch: 1, global_batch: {}}}\n",
                                              p, m)),
               ideal_options({0}));
  const RankBreakdown& b = run->result.breakdowns.at(0);
  const Time expected = expected_bubble(run->workload, p, m, 1);
  EXPECT_NEAR(ratio(b.bubble, expected), 1.0, 1e-4)
      << "bubble " << format_time(b.bubble) << ", expected " << format_time(expected);
  EXPECT_EQ(b.total(), run->result.step_time);
}

// Interleaved 1F1B on p stages with v chunks each, m micro-batches of one 1024-token sequence.
std::string interleaved_layout(int p, int v, int m) {
  return fmt::format(
      "parallelism: {{pp: {}, vpp: {}, schedule: interleaved}}\n"
      "training: {{seq_len: 1024, micro_batch: 1, global_batch: {}}}\n",
      p, v, m);
}

TEST(Executor, InterleavingDividesTheBubbleByV) {
  // Interleaved 1F1B with v = 2 model chunks per stage: fill and drain (p - 1)(tf + tb) / v.
  const int p = 4, m = 8, v = 2;
  const auto run = simulate(
      scenario_text(p, "1000TB/s", kEqualStages + interleaved_layout(p, v, m)), ideal_options({0}));
  const RankBreakdown& b = run->result.breakdowns.at(0);
  const Time expected = expected_bubble(run->workload, p, m, v);
  EXPECT_NEAR(ratio(b.bubble, expected), 1.0, 1e-4)
      << "bubble " << format_time(b.bubble) << ", expected " << format_time(expected);
}

// Every norm, the embedding, the output layer and the loss made free: every model chunk of every
// stage does the same work, f forward and b backward.
const std::string kEqualChunks =
    "model: {layers: 8, hidden: 1024, heads: 8, ffn: 4096, vocab: 64, gated_mlp: false}\n"
    "compute: {device: h100, launch_overhead: 0us, kernel_times: " STEPSIM_SOURCE_DIR
    "/tests/inputs/kernels/equal_chunks.yaml}\n";

TEST(Executor, InterleavedTransfersCrossEveryVirtualStageBoundaryOnTheCriticalPath) {
  // Interleaved 1F1B, p = 2 stages, v = 2 chunks, m = p = 2 micro-batches: Megatron runs every
  // forward, then every backward. Each activation or gradient crosses a stage boundary in time
  // t = bytes / bandwidth (2 MiB at 50 GB/s, about a third of f). Stage 0 runs chunk 0 of both
  // micro-batches, then waits for micro-batch 0 to come back from stage 1's chunk 0 (the
  // wrap-around from the last stage to the first); chunk by chunk, stage s starts virtual
  // micro-batch k = c p + j at s (f + t) + c p (f + t) + j f. Stage 1 ends the forwards at
  // T_F = (pv - 1)(f + t) + p f and the backwards mirror them, so stage 0 ends at
  // (pv - 1)(f + b + 2t) + p (f + b): besides its p v (f + b) of compute, the bubble
  // (p - 1)(f + b) = (p - 1)/v of a micro-batch's time through the stage, plus 2 (pv - 1) t, the
  // transfers of micro-batch 0 through all pv virtual stages and back, which no overlap can hide.
  const int p = 2, v = 2, m = 2;
  const auto run = simulate(scenario_text(p, "50GB/s", kEqualChunks + interleaved_layout(p, v, m)),
                            ideal_options({0}));
  const auto [tf, tb] = stage_times(run->workload, 0);  // both chunks of stage 0
  const auto [tf1, tb1] = stage_times(run->workload, 1);
  ASSERT_EQ(tf, tf1);
  ASSERT_EQ(tb, tb1);
  const Time f = Time::ps(tf.picoseconds() / v);
  const Time b = Time::ps(tb.picoseconds() / v);
  const Time t = Time::from_seconds(1024.0 * 1024 * 2 / 50e9);
  ASSERT_LT(t, f);
  const Time expected = (f + b) * (p - 1) + t * (2 * (p * v - 1));
  const RankBreakdown& r = run->result.breakdowns.at(0);
  const Time not_computing = r.total() - r.compute;
  EXPECT_NEAR(ratio(not_computing, expected), 1.0, 1e-3)
      << "not computing " << format_time(not_computing) << ", expected " << format_time(expected);
  const auto pp = static_cast<std::size_t>(workloads::ParallelDim::kPp);
  EXPECT_GT(r.exposed[pp], Time::zero());
}

// Only GEMMs cost anything (norms, attention core, embedding and head free): see the table.
const std::string kGemmsOnly =
    "model: {layers: 8, hidden: 1024, heads: 8, ffn: 4096, vocab: 64, gated_mlp: false}\n"
    "compute: {device: h100, launch_overhead: 0us, kernel_times: " STEPSIM_SOURCE_DIR
    "/tests/inputs/kernels/dualpipe_equal.yaml}\n";

// Compute time of the operations of (micro-batch, chunk) in `phase` on `stage`, split into the
// runs they form in program order: a backward that defers its weights is two runs, its
// input-gradient pass and, later, its weight pass.
std::vector<Time> runs_of(const workloads::Workload& w, int stage, int micro_batch, int chunk,
                          Phase phase) {
  std::vector<Time> runs;
  bool in_run = false;
  for (const auto& op : w.stage_program(stage).ops) {
    const bool mine = op.micro_batch == micro_batch && op.chunk == chunk && op.phase == phase;
    if (op.kind != OpKind::kCompute) continue;
    if (mine && !in_run) runs.emplace_back();
    if (mine) runs.back() += op.duration;
    in_run = mine;
  }
  return runs;
}

TEST(Executor, DualPipeBubbleFollowsDeepSeekV3Formula) {
  // DualPipe (arXiv 2412.19437 table 2): bubble (PP/2 - 1)(F&B + B - 3W), F a forward chunk, B a
  // full backward chunk, W its weight half, F&B an overlapped forward and backward (F + B here:
  // free transfers leave nothing to overlap). Rank 0's bubble, p = 4 stages, m = 8 micro-batches
  // of 2 layers each; F, B, W from rank 1's program (every stage does the same work): micro-batch
  // 0 runs a full backward there, micro-batch 7 (chunk 1) defers its weights to a later step. Only
  // GEMMs cost time, so the input-gradient half equals F (stepsim splits a GEMM's backward into two
  // forwards' worth); the schedule's bubble is (PP/2 - 1)(2F + B - 2W) in general, the report's
  // formula when F = B - W.
  const int p = 4, m = 8;
  const auto run = simulate(
      scenario_text(
          p, "1000TB/s",
          kGemmsOnly +
              fmt::format("parallelism: {{pp: {}, schedule: dualpipe}}\n"
                          "training: {{seq_len: 1024, micro_batch: 1, global_batch: {}}}\n",
                          p, m)),
      ideal_options({0}));
  const auto f = runs_of(run->workload, 1, 0, 0, Phase::kForward);
  const auto b = runs_of(run->workload, 1, 0, 0, Phase::kBackward);
  const auto split = runs_of(run->workload, 1, 7, 1, Phase::kBackward);
  ASSERT_EQ(f.size(), 1u);
  ASSERT_FALSE(b.empty());
  ASSERT_EQ(split.size(), 2u);
  const Time F = f[0], W = split[1];
  // Micro-batch 0's backward runs in an F&B pair, interleaved with a forward layer by layer.
  Time B;
  for (const Time part : b)
    B += part;
  // The two halves make the full backward, and the input half costs a forward (each operation's
  // time is rounded to the picosecond).
  EXPECT_NEAR(static_cast<double>((split[0] + split[1] - B).picoseconds()), 0.0, 20.0);
  EXPECT_NEAR(static_cast<double>((split[0] - F).picoseconds()), 0.0, 20.0);
  const Time expected = (F + B + B - W * 3) * (p / 2 - 1);
  const RankBreakdown& r = run->result.breakdowns.at(0);
  const Time not_computing = r.total() - r.compute;
  EXPECT_NEAR(ratio(not_computing, expected), 1.0, 1e-3)
      << "not computing " << format_time(not_computing) << ", expected " << format_time(expected)
      << " (F " << format_time(F) << ", B " << format_time(B) << ", W " << format_time(W) << ")";
  // Against 1F1B on the same stages: (p - 1)(F + B).
  EXPECT_LT(not_computing, (F + B) * (p - 1));
}

// Every operation of the detail ranks, by rank and program index.
class Recorder final : public OpListener {
 public:
  void on_op(const OpRecord& record) override {
    if (record.rank == 0) records[record.index] = {record.start, record.end};
  }
  std::map<std::uint32_t, std::pair<Time, Time>> records;
};

// DualPipe on 4 GPUs: pp 2, ep 2 (= dp), 2 MoE layers of top-2 over 4 experts per stage. The
// expert peers (ranks 0-1, 2-3) are joined by a link of `ep_bandwidth` each way, the pipeline
// peers (0-2, 1-3) by a link so fast that transfers cost nothing (a switch joins all four for
// connectivity; no route of this program crosses it); GEMMs and the expert GEMMs carry the cost
// (the embedding, output layer, loss, norms and attention core are free).
std::string dualpipe_moe_scenario(const std::string& ep_bandwidth, const std::string& extra) {
  std::string text =
      "topology:\n  nodes:\n    - {name: \"gpu{}\", kind: accelerator, count: 4}\n"
      "    - {name: sw, kind: switch}\n  links:\n";
  for (int i = 0; i < 4; ++i) {
    text += fmt::format(
        "    - {{from: gpu{}, to: sw, bandwidth: 1GB/s, latency: 0ns, duplex: true}}\n", i);
  }
  for (const auto& [a, b, bw] :
       {std::tuple{0, 1, ep_bandwidth}, std::tuple{2, 3, ep_bandwidth},
        std::tuple{0, 2, std::string("1000TB/s")}, std::tuple{1, 3, std::string("1000TB/s")}}) {
    text += fmt::format(
        "    - {{from: gpu{}, to: gpu{}, bandwidth: {}, latency: 0ns, duplex: true}}\n", a, b, bw);
  }
  return text +
         "model: {layers: 4, hidden: 1024, heads: 8, ffn: 4096, vocab: 64, gated_mlp: false,\n"
         "        moe: {experts: 4, top_k: 2, expert_ffn: 1024, dense_layers: 0}}\n"
         "compute: {device: h100, launch_overhead: 0us, kernel_times: " STEPSIM_SOURCE_DIR
         "/tests/inputs/kernels/dualpipe_equal.yaml}\n"
         "parallelism: {pp: 2, dp: 2, ep: 2, schedule: dualpipe" +
         extra + "}\ntraining: {seq_len: 1024, micro_batch: 1, global_batch: 16}\n";
}

// Compute time of the operations of one layer of (micro-batch, chunk, phase) with these names.
Time piece(const workloads::Program& program, int micro_batch, int chunk, Phase phase, int layer,
           std::initializer_list<workloads::OpName> names) {
  Time total;
  for (const auto& op : program.ops) {
    if (op.kind != OpKind::kCompute || op.micro_batch != micro_batch || op.chunk != chunk ||
        op.phase != phase || op.layer != layer)
      continue;
    if (std::find(names.begin(), names.end(), op.name) != names.end()) total += op.duration;
  }
  return total;
}

// Span of the compute of (micro-batch, chunk) forward and (micro-batch, chunk) backward on rank
// 0: first start to last end.
Time pair_span(const workloads::Program& program, const Recorder& recorder, int f_micro_batch,
               int f_chunk, int b_micro_batch, int b_chunk) {
  Time first = Time::max(), last;
  for (std::uint32_t i = 0; i < program.ops.size(); ++i) {
    const auto& op = program.ops[i];
    const bool mine =
        op.kind == OpKind::kCompute &&
        ((op.phase == Phase::kForward && op.micro_batch == f_micro_batch && op.chunk == f_chunk) ||
         (op.phase == Phase::kBackward && op.micro_batch == b_micro_batch && op.chunk == b_chunk));
    if (!mine) continue;
    const auto& [start, end] = recorder.records.at(i);
    first = std::min(first, start);
    last = std::max(last, end);
  }
  return last - first;
}

TEST(Executor, DualPipeOverlapTakesTheMaxOfEachComputePieceAndTheAllToAllBesideIt) {
  // DualPipe's F&B chunks interleaved as figure 4 of arXiv 2412.19437 orders them: per pair of
  // layers the compute stream runs attention F | MLP B | MLP F | attention B while the expert
  // stream runs combine B | dispatch F | dispatch B | combine F. Each boundary waits for both the
  // compute piece and the all-to-all beside it, so on an idle network a pair of layers takes
  // max(aF, c) + max(mB, c) + max(mF, c) + max(aB, c), c an all-to-all: its send buffer S over
  // 2 ranks moves S / 2 across the link, c = S / 2 / bandwidth. Rank 0's overlapped pair of
  // forward micro-batch 2 (chunk 0, layers 0-1, from the embedding) and backward micro-batch 5
  // (chunk 1, layers 3-2, from the loss) receives nothing, so nothing but the pair sets its span.
  // The communication's SMs are left out here (dualpipe_comm_sm_share: 0). The bandwidth puts c
  // between the pieces: some slots wait for the all-to-all, others for compute.
  Recorder recorder;
  const std::string text = dualpipe_moe_scenario("70GB/s", ", dualpipe_comm_sm_share: 0");
  auto doc = config::Document::parse(text, "test.yaml");
  auto topo = topology::load_topology(doc.root().at("topology"));
  auto spec = workloads::parse_workload(doc.root());
  workloads::validate_layout(spec, 4);
  const workloads::Workload workload(spec);
  Executor executor(workload, topo, ideal_options({0}), &recorder);
  const ExecutionResult result = executor.run();
  const workloads::Program& program = workload.stage_program(0);
  using workloads::OpName;
  const Phase fwd = Phase::kForward, bwd = Phase::kBackward;
  std::int64_t all_to_all_bytes = 0;
  for (const auto& op : program.ops)
    if (op.name == OpName::kEpDispatch) all_to_all_bytes = op.bytes;
  const Time c = Time::from_seconds(static_cast<double>(all_to_all_bytes) / 2 / 70e9);
  Time expected;
  const std::initializer_list<OpName> attention = {
      OpName::kNorm, OpName::kQkv, OpName::kAttentionCore, OpName::kAttentionOut, OpName::kRouter};
  const std::initializer_list<OpName> mlp = {OpName::kExperts, OpName::kSharedExperts};
  for (const auto& [fl, bl] : {std::pair{0, 3}, std::pair{1, 2}}) {
    const Time af = piece(program, 2, 0, fwd, fl, attention);
    const Time mb = piece(program, 5, 1, bwd, bl, mlp);
    const Time mf = piece(program, 2, 0, fwd, fl, mlp);
    const Time ab = piece(program, 5, 1, bwd, bl, attention);
    // The bandwidth puts c inside the range of the pieces (the formula's maxima go both ways),
    // and below the last piece, whose end is the span's end.
    const std::string pieces =
        fmt::format("aF {}, mB {}, mF {}, aB {}, c {}", format_time(af), format_time(mb),
                    format_time(mf), format_time(ab), format_time(c));
    ASSERT_LT(af, c) << pieces;
    ASSERT_GT(mb, c) << pieces;
    ASSERT_LT(mf, c) << pieces;
    ASSERT_GT(ab, c) << pieces;
    expected += std::max(af, c) + std::max(mb, c) + std::max(mf, c) + std::max(ab, c);
  }
  const Time span = pair_span(program, recorder, 2, 0, 5, 1);
  EXPECT_NEAR(ratio(span, expected), 1.0, 1e-6)
      << "pair " << format_time(span) << ", expected " << format_time(expected);

  // Issued forward then backward (dualpipe_overlap: false), each all-to-all waits in line: the
  // same pair takes longer, and the step too.
  Recorder sequential;
  auto doc2 = config::Document::parse(
      dualpipe_moe_scenario("70GB/s", ", dualpipe_comm_sm_share: 0, dualpipe_overlap: false"),
      "test.yaml");
  auto spec2 = workloads::parse_workload(doc2.root());
  workloads::validate_layout(spec2, 4);
  const workloads::Workload workload2(spec2);
  Executor executor2(workload2, topo, ideal_options({0}), &sequential);
  const ExecutionResult result2 = executor2.run();
  EXPECT_GT(pair_span(workload2.stage_program(0), sequential, 2, 0, 5, 1), span);
  EXPECT_LT(result.step_time, result2.step_time);
}

TEST(Executor, DualPipeOverlapSlowsTheComputeBesideAnAllToAllByTheSmsItTakes) {
  // DeepSeek-V3 (arXiv 2412.19437 section 3.2.2) gives the dispatch and combine kernels 20 of the
  // H800's 132 SMs: in an overlapped pair, GEMMs and attention run 132 / 112 times longer than
  // the same kernels outside (here rank 0's forward of micro-batch 0, which no backward pairs).
  const auto run = simulate(dualpipe_moe_scenario("100GB/s", ""), ideal_options({0}));
  const workloads::Program& program = run->workload.stage_program(0);
  using workloads::OpName;
  for (const OpName name : {OpName::kQkv, OpName::kAttentionOut, OpName::kExperts}) {
    const Time alone = piece(program, 0, 0, Phase::kForward, 0, {name});
    const Time paired = piece(program, 2, 0, Phase::kForward, 0, {name});
    ASSERT_GT(alone, Time::zero());
    EXPECT_NEAR(static_cast<double>(paired.picoseconds()),
                static_cast<double>(alone.picoseconds()) * 132.0 / 112.0, 1.0)
        << workloads::to_string(name);
  }
}

// Bytes the step put on InfiniBand: the links from a NIC into the fabric.
double infiniband_bytes(const Run& run, const Executor& executor) {
  const topology::Topology& t = run.topology;
  double bytes = 0;
  for (std::uint32_t l = 0; l < t.num_links(); ++l) {
    const topology::LinkInfo& link = t.link(topology::LinkIndex{l});
    if (t.kind(link.source) == topology::NodeKind::kNic &&
        t.kind(link.target) == topology::NodeKind::kSwitch)
      bytes += executor.network().link_statistics(engine::LinkId{l}).bytes_carried;
  }
  return bytes;
}

TEST(Executor, RelayedDispatchCrossesInfinibandOncePerReachedNode) {
  // Two 8-GPU nodes, ep 16 = dp 16, one MoE layer of 16 experts (one per rank), top-2, uniform
  // routing, one micro-batch of T = 1024 tokens of h = 1024 BF16 values (b = 2 KiB) per rank. The
  // direct dispatch sends each token's 2 copies to their experts, half of them on the other node:
  // T b over InfiniBand per rank and all-to-all. The relayed dispatch with at most M = 1 node per
  // token sends a token across only when its node is the other one, probability 1/2: T b / 2.
  // Four expert all-to-alls per step (dispatch and combine, forward and backward), 16 ranks: the
  // relayed step puts 4 x 16 x T b / 2 = 64 MiB less on InfiniBand; everything else is equal.
  const std::string rest =
      "model: {{layers: 2, hidden: 1024, heads: 8, ffn: 4096, vocab: 64, gated_mlp: false,\n"
      "        moe: {{experts: 16, top_k: 2, expert_ffn: 1024, dense_layers: 1{}}}}}\n"
      "compute: {{device: h100, launch_overhead: 0us}}\n"
      "parallelism: {{dp: 16, ep: 16}}\n"
      "training: {{seq_len: 1024, micro_batch: 1, global_batch: 16}}\n";
  const std::string topology =
      "topology: {preset: cluster, params: {machine: dgx-h100, nodes: 2}}\n";
  double ib[2];
  for (int relayed = 0; relayed < 2; ++relayed) {
    const std::string moe = relayed ? ", max_nodes_per_token: 1, dispatch: relayed" : "";
    auto doc = config::Document::parse(topology + fmt::format(fmt::runtime(rest), moe), "t.yaml");
    auto topo = topology::load_topology(doc.root().at("topology"));
    auto spec = workloads::parse_workload(doc.root());
    for (const topology::NodeId a : topo.accelerators())
      spec.rank_domains.push_back(
          static_cast<int>(*topo.group_of(a, topology::GroupKind::kScaleUp)));
    workloads::validate_layout(spec, 16);
    executor::Run run{std::move(doc), std::move(topo), workloads::Workload(spec), {}};
    Executor executor(run.workload, run.topology, ideal_options({0}));
    run.result = executor.run();
    ib[relayed] = infiniband_bytes(run, executor);
  }
  const double tb = 1024.0 * 1024 * 2;
  EXPECT_NEAR(ib[0] - ib[1], 4 * 16 * tb / 2, 1e-6 * ib[0])
      << "direct " << ib[0] << " bytes, relayed " << ib[1];
}

TEST(Executor, InterleavedSteadyStateHidesTransfersShorterThanAChunk) {
  // Interleaved 1F1B, p = 4, v = 2, m = 2p and 4p. In the steady state neighbouring stages'
  // warm-ups differ by two virtual micro-batches, which leaves one forward-backward pair of slack
  // for each transfer (Megatron overlaps them: overlap_p2p_comm). Transfers of t < f then cost
  // only the fill and drain: the 2 (pv - 1) t of micro-batch 0 through every virtual stage and
  // back, whatever m.
  const int p = 4, v = 2;
  const Time t = Time::from_seconds(1024.0 * 1024 * 2 / 50e9);
  for (const int m : {2 * p, 4 * p}) {
    Time off_compute[2];
    for (int i = 0; i < 2; ++i) {
      const auto run = simulate(scenario_text(p, i == 0 ? "1000TB/s" : "50GB/s",
                                              kEqualChunks + interleaved_layout(p, v, m)),
                                ideal_options({0}));
      const RankBreakdown& r = run->result.breakdowns.at(0);
      off_compute[i] = r.total() - r.compute;
    }
    const Time expected = t * (2 * (p * v - 1));
    EXPECT_NEAR(ratio(off_compute[1] - off_compute[0], expected), 1.0, 1e-3)
        << "m " << m << ": transfers added " << format_time(off_compute[1] - off_compute[0])
        << ", expected " << format_time(expected);
  }
}

TEST(Executor, GradientReductionHidesBehindBackwardWhenShorter) {
  // dp = 2 on one switch. Gradients (bf16) of all parameters are all-reduced in 25 MB buckets as
  // the backward pass produces them. With fast links the reduction hides behind the backward
  // pass: only the last bucket shows. With slow links it cannot: the exposed time is at least the
  // ring AllReduce time 2(n-1)/n S/B (n = 2) minus the whole backward pass.
  const std::string rest = kSmallModel +
                           "parallelism: {dp: 2}\ntraining: {seq_len: 1024, micro_batch: 1, "
                           "global_batch: 2}\n";
  const auto fast = simulate(scenario_text(2, "1TB/s", rest), ideal_options({0}));
  const auto slow = simulate(scenario_text(2, "1GB/s", rest), ideal_options({0}));
  const auto dp = static_cast<std::size_t>(workloads::ParallelDim::kDp);
  const double grad_bytes = fast->result.traffic[dp].payload.as_double() / 2;  // per rank
  const Time slow_allreduce = Time::from_seconds(grad_bytes / 1e9);            // 2(n-1)/n = 1
  const Time fast_allreduce = Time::from_seconds(grad_bytes / 1e12);
  const auto [tf, tb] = stage_times(fast->workload, 0);

  EXPECT_LT(fast_allreduce, tb);
  EXPECT_LT(ratio(fast->result.breakdowns[0].exposed[dp], fast_allreduce), 0.5);

  EXPECT_GT(slow_allreduce, tb);
  EXPECT_GE(slow->result.breakdowns[0].exposed[dp], slow_allreduce - tb);
  EXPECT_LE(slow->result.breakdowns[0].exposed[dp], slow_allreduce);
}

TEST(Executor, AStalledGraphNamesTheRanksAndOperationsThatWait) {
  // pp = 2: stage 1's first receive gets a tag no send carries, so stage 0's first send and that
  // receive wait for each other forever; the executor must say so, naming both ranks.
  const std::string text =
      scenario_text(2, "100GB/s",
                    kSmallModel +
                        "parallelism: {pp: 2}\ntraining: {seq_len: 1024, micro_batch: 1, "
                        "global_batch: 2}\n");
  auto doc = config::Document::parse(text, "test.yaml");
  auto topo = topology::load_topology(doc.root().at("topology"));
  workloads::Workload workload(workloads::parse_workload(doc.root()));
  workloads::Program program = workload.stage_program(1);
  for (auto& op : program.ops) {
    if (op.kind == OpKind::kRecv) {
      op.seq = 999'999;
      break;
    }
  }
  workload.replace_stage_program(1, std::move(program));
  Executor executor(workload, topo, ideal_options({}));
  try {
    executor.run();
    FAIL() << "the step should stall";
  } catch (const ExecutionStalled& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("stalled"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 0: waits in fwd"), std::string::npos) << message;
    EXPECT_NE(message.find("waits for rank 1"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 1: waits in"), std::string::npos) << message;
  }
}

TEST(Executor, SameInputSameResult) {
  const std::string text = scenario_text(
      8, "100GB/s",
      kSmallModel +
          "parallelism: {tp: 2, pp: 2, dp: 2}\ntraining: {seq_len: 1024, micro_batch: 1, "
          "global_batch: 8}\n");
  const auto a = simulate(text, ideal_options({0, 4}));
  const auto b = simulate(text, ideal_options({0, 4}));
  EXPECT_EQ(a->result.step_time, b->result.step_time);
  EXPECT_EQ(a->result.rank_end, b->result.rank_end);
  EXPECT_EQ(a->result.events, b->result.events);
  EXPECT_EQ(a->result.breakdowns[1].bubble, b->result.breakdowns[1].bubble);
}

}  // namespace
}  // namespace stepsim::executor
