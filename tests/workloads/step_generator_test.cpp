// The generated step against the closed forms of docs/design.md ("Reference formulas"): bytes of
// each collective per step for every strategy alone and combined, FLOPs per step, and a replay of
// all ranks' programs that proves every collective and transfer matches and nothing stalls.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/model.hpp"
#include "workloads/step_generator.hpp"
#include "workloads/workload.hpp"

namespace stepsim::workloads {
namespace {

// A small GPT-like model: 4 layers, h = 1024, 16 heads, vocabulary 32000 (divisible by tp).
const char* kSmallModel = "model: {layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096}\n";
const char* kSmallMoe =
    "model: {layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096, gated_mlp: true,\n"
    "        moe: {experts: 8, top_k: 2, expert_ffn: 2048, dense_layers: 1}}\n";

WorkloadSpec spec_of(const std::string& model, const std::string& parallelism,
                     const std::string& training) {
  const auto doc =
      config::Document::parse(model + "parallelism: " + parallelism + "\ntraining: " + training +
                                  "\ncompute: {device: h100}\n",
                              "test.yaml");
  return parse_workload(doc.root());
}

// Sum of op.bytes over a program for operations matching the filter.
template <typename Pred>
std::int64_t sum_bytes(const Program& p, Pred pred) {
  std::int64_t total = 0;
  for (const auto& op : p.ops) {
    if (pred(op)) total += op.bytes;
  }
  return total;
}

std::int64_t bytes_of(const Program& p, OpName name, CollectiveKind kind,
                      bool layers_only = false) {
  return sum_bytes(p, [&](const Op& op) {
    return op.name == name && op.collective == kind && (!layers_only || op.layer != kNoLayer);
  });
}

// Replays every rank's program with rendezvous semantics: a stream runs its operations in order;
// an operation starts when its dependencies are done; a collective completes when every member
// of its group has reached it (same group, same seq, same name and size); a send completes with
// the matching receive. Returns "" when every operation completes, else what waits.
std::string replay(const Workload& w) {
  const int world = w.world_size();
  struct RankState {
    std::vector<std::vector<std::uint32_t>> streams;
    std::vector<std::size_t> head;
    std::vector<bool> done;
    std::size_t remaining = 0;
  };
  std::vector<RankState> st(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    const Program& p = w.program(r);
    auto& s = st[static_cast<std::size_t>(r)];
    s.streams.resize(static_cast<std::size_t>(Stream::kCount));
    for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
      s.streams[static_cast<std::size_t>(p.ops[i].stream)].push_back(i);
    }
    s.head.assign(s.streams.size(), 0);
    s.done.assign(p.ops.size(), false);
    s.remaining = p.ops.size();
  }
  // Arrivals: collective key (group, seq) -> ranks; p2p key (src, dst, tag) -> (send?, recv?).
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::pair<int, std::uint32_t>>>
      arrived;
  std::map<std::tuple<int, int, std::uint32_t>, std::vector<std::pair<int, std::uint32_t>>> p2p;
  std::map<std::pair<int, std::uint32_t>, bool> posted;
  bool progress = true;
  std::string mismatch;
  while (progress) {
    progress = false;
    for (int r = 0; r < world; ++r) {
      auto& s = st[static_cast<std::size_t>(r)];
      const Program& p = w.program(r);
      for (std::size_t k = 0; k < s.streams.size(); ++k) {
        while (s.head[k] < s.streams[k].size()) {
          const std::uint32_t i = s.streams[k][s.head[k]];
          const Op& op = p.ops[i];
          bool ready = true;
          for (std::uint32_t dep : p.deps_of(op))
            ready = ready && s.done[dep];
          if (!ready) break;
          if (op.kind == OpKind::kCompute) {
            s.done[i] = true;
            --s.remaining;
            ++s.head[k];
            progress = true;
            continue;
          }
          if (posted[{r, i}]) break;  // waiting for partners
          posted[{r, i}] = true;
          progress = true;
          std::vector<std::pair<int, std::uint32_t>>* waiting = nullptr;
          std::size_t needed = 2;
          if (op.kind == OpKind::kCollective) {
            const GroupId g = w.group(r, op);
            waiting = &arrived[{g.value(), op.seq}];
            needed = w.ranks().members(g).size();
          } else {
            const int peer = w.peer(r, op);
            const auto key = op.kind == OpKind::kSend ? std::make_tuple(r, peer, op.seq)
                                                      : std::make_tuple(peer, r, op.seq);
            waiting = &p2p[key];
          }
          waiting->push_back({r, i});
          if (waiting->size() == needed) {
            const Op& first = w.program(waiting->front().first).ops[waiting->front().second];
            for (const auto& [rr, ii] : *waiting) {
              const Op& other = w.program(rr).ops[ii];
              if (other.bytes != first.bytes || other.name != first.name) {
                mismatch = "mismatched " + std::string(to_string(other.name)) + " on rank " +
                           std::to_string(rr);
              }
              auto& os = st[static_cast<std::size_t>(rr)];
              os.done[ii] = true;
              --os.remaining;
              ++os.head[static_cast<std::size_t>(other.stream)];
            }
          }
          break;
        }
      }
    }
  }
  if (!mismatch.empty()) return mismatch;
  for (int r = 0; r < world; ++r) {
    const auto& s = st[static_cast<std::size_t>(r)];
    if (s.remaining == 0) continue;
    for (std::size_t k = 0; k < s.streams.size(); ++k) {
      if (s.head[k] < s.streams[k].size()) {
        const Op& op = w.program(r).ops[s.streams[k][s.head[k]]];
        return "rank " + std::to_string(r) + " stalls at " + std::string(to_string(op.name)) +
               " (" + std::string(to_string(op.phase)) + ", layer " + std::to_string(op.layer) +
               ", micro-batch " + std::to_string(op.micro_batch) + ") on stream " +
               std::string(to_string(op.stream));
      }
    }
  }
  return "";
}

TEST(StepGenerator, TensorParallelIsFourAllReducesOfBshPerLayerPerMicroBatch) {
  // tp 4, micro-batch 2, sequence 2048, 3 micro-batches (global batch 6): per layer and micro-
  // batch 4 AllReduces (2 forward, 2 backward) of b*s*h = 2 x 2048 x 1024 elements of 2 bytes.
  const auto spec =
      spec_of(kSmallModel, "{tp: 4}", "{seq_len: 2048, micro_batch: 2, global_batch: 6}");
  const Program p = generate_stage_program(spec, 0);
  const std::int64_t bsh_bytes = 2LL * 2048 * 1024 * 2;
  EXPECT_EQ(bytes_of(p, OpName::kTpAllReduce, CollectiveKind::kAllReduce, true),
            4 * 4 * 3 * bsh_bytes);
  // Outside the layers: the vocabulary-parallel embedding (forward) and the output layer's input
  // gradient (backward), one b*s*h AllReduce each per micro-batch.
  EXPECT_EQ(bytes_of(p, OpName::kTpAllReduce, CollectiveKind::kAllReduce),
            (4 * 4 + 2) * 3 * bsh_bytes);
  EXPECT_EQ(replay(Workload(spec)), "");
}

TEST(StepGenerator, SequenceParallelMovesTheSameVolumeAsAllGatherPlusReduceScatter) {
  // With SP each of the 4 AllReduces per layer and micro-batch becomes an AllGather and a
  // ReduceScatter of the same b*s*h buffer (2 of each forward, 2 backward). Bus bytes: 4 x 2(n-1)/n
  // for the AllReduces = 4 x (n-1)/n + 4 x (n-1)/n for AG + RS.
  const auto spec =
      spec_of(kSmallModel, "{tp: 4, sp: true}", "{seq_len: 2048, micro_batch: 2, global_batch: 6}");
  const Program p = generate_stage_program(spec, 0);
  const std::int64_t bsh_bytes = 2LL * 2048 * 1024 * 2;
  EXPECT_EQ(bytes_of(p, OpName::kSpAllGather, CollectiveKind::kAllGather, true),
            4 * 4 * 3 * bsh_bytes);
  EXPECT_EQ(bytes_of(p, OpName::kSpReduceScatter, CollectiveKind::kReduceScatter, true),
            4 * 4 * 3 * bsh_bytes);
  EXPECT_EQ(bytes_of(p, OpName::kTpAllReduce, CollectiveKind::kAllReduce), 0);
  EXPECT_EQ(replay(Workload(spec)), "");
}

TEST(StepGenerator, PipelineSendsBshPerBoundaryPerMicroBatchEachWay) {
  // pp 4, 8 micro-batches of b = 2: stage s < 3 sends 8 activations of b*s*h forward and
  // receives 8 gradients; stage s > 0 receives 8 activations and sends 8 gradients.
  const auto spec =
      spec_of(kSmallModel, "{pp: 4}", "{seq_len: 2048, micro_batch: 2, global_batch: 16}");
  const std::int64_t bsh_bytes = 2LL * 2048 * 1024 * 2;
  for (int s = 0; s < 4; ++s) {
    const Program p = generate_stage_program(spec, s);
    auto count = [&](OpName name, OpKind kind) {
      return sum_bytes(p, [&](const Op& op) { return op.name == name && op.kind == kind; });
    };
    EXPECT_EQ(count(OpName::kPpActivation, OpKind::kSend), s < 3 ? 8 * bsh_bytes : 0) << s;
    EXPECT_EQ(count(OpName::kPpGradient, OpKind::kRecv), s < 3 ? 8 * bsh_bytes : 0) << s;
    EXPECT_EQ(count(OpName::kPpActivation, OpKind::kRecv), s > 0 ? 8 * bsh_bytes : 0) << s;
    EXPECT_EQ(count(OpName::kPpGradient, OpKind::kSend), s > 0 ? 8 * bsh_bytes : 0) << s;
  }
  EXPECT_EQ(replay(Workload(spec)), "");
}

TEST(StepGenerator, InterleavedAndGpipeSchedulesReplayWithoutStalls) {
  for (const char* par : {"{pp: 2, vpp: 2, dp: 2}", "{pp: 4, schedule: gpipe}",
                          "{pp: 2, tp: 2, sp: true, vpp: 2, zero: 1, dp: 2}"}) {
    const auto spec = spec_of(kSmallModel, par, "{seq_len: 1024, micro_batch: 1, global_batch: 8}");
    EXPECT_EQ(replay(Workload(spec)), "") << par;
  }
}

TEST(StepGenerator, ExpertParallelDispatchAndCombineMoveTkhPerMoeLayer) {
  // ep 4 over dp 4, 3 MoE layers, 2 micro-batches of b = 1, s = 1024: T = 1024 tokens per rank,
  // k = 2, h = 1024. Each MoE layer per micro-batch: dispatch and combine of T*k*h elements in
  // forward, and again in backward.
  const auto spec =
      spec_of(kSmallMoe, "{ep: 4, dp: 4}", "{seq_len: 1024, micro_batch: 1, global_batch: 8}");
  const Program p = generate_stage_program(spec, 0);
  const std::int64_t tkh_bytes = 1024LL * 2 * 1024 * 2;
  EXPECT_EQ(bytes_of(p, OpName::kEpDispatch, CollectiveKind::kAllToAll), 3 * 2 * 2 * tkh_bytes);
  EXPECT_EQ(bytes_of(p, OpName::kEpCombine, CollectiveKind::kAllToAll), 3 * 2 * 2 * tkh_bytes);
  EXPECT_EQ(replay(Workload(spec)), "");
}

TEST(StepGenerator, RoutingSkewTurnsAllToAllIntoAllToAllvWithAMatrix) {
  const auto spec = spec_of(kSmallMoe, "{ep: 4, dp: 4}",
                            "{seq_len: 1024, micro_batch: 1, global_batch: 4, routing_skew: 1.0}");
  const Workload w(spec);
  const Program& p = w.program(0);
  const std::int64_t tkh_bytes = 1024LL * 2 * 1024 * 2;
  EXPECT_EQ(bytes_of(p, OpName::kEpDispatch, CollectiveKind::kAllToAllv), 3 * 2 * tkh_bytes);
  const auto& dispatch = w.traffic_matrix(0);
  ASSERT_EQ(dispatch.size(), 16u);
  // Zipf(1) over 8 experts, 2 per rank: rank 0 holds experts 1 and 1/2 of H_8 = 2.718: 55.2%.
  const double h8 = 1 + 1 / 2. + 1 / 3. + 1 / 4. + 1 / 5. + 1 / 6. + 1 / 7. + 1 / 8.;
  EXPECT_NEAR(static_cast<double>(dispatch[0]) / tkh_bytes, 1.5 / h8, 1e-6);
  std::int64_t row = 0;
  for (int j = 0; j < 4; ++j)
    row += dispatch[static_cast<std::size_t>(j)];
  EXPECT_NEAR(static_cast<double>(row), static_cast<double>(tkh_bytes), 4.0);
  EXPECT_EQ(w.traffic_matrix(1)[1 * 4 + 0], dispatch[0 * 4 + 1]);  // combine = transpose
  EXPECT_EQ(replay(w), "");
}

// The runs of compute operations of forward (micro-batch f, chunk fc) and backward (micro-batch
// b, chunk bc) in a program, in order, as "F<layer>" and "B<layer>" (layer -1: the embedding or
// the output layer and loss), and the order of their expert all-to-alls as "<name> F|B<layer>".
std::pair<std::vector<std::string>, std::vector<std::string>> pair_order(const Program& p, int f,
                                                                         int fc, int b, int bc) {
  std::vector<std::string> compute, expert;
  for (const auto& op : p.ops) {
    const bool fwd = op.phase == Phase::kForward && op.micro_batch == f && op.chunk == fc;
    const bool bwd = op.phase == Phase::kBackward && op.micro_batch == b && op.chunk == bc;
    if (!fwd && !bwd) continue;
    const std::string run = (fwd ? "F" : "B") + std::to_string(op.layer);
    if (op.kind == OpKind::kCompute && (compute.empty() || compute.back() != run))
      compute.push_back(run);
    if (op.stream == Stream::kEp) expert.push_back(std::string(to_string(op.name)) + " " + run);
  }
  return {compute, expert};
}

TEST(StepGenerator, DualPipeOverlapInterleavesTheForwardAndBackwardChunksAsFigure4) {
  // pp 2, ep 2 = dp 2, 4 MoE layers (2 per stage), 8 micro-batches under DualPipe. Rank 0's
  // overlapped pair of forward micro-batch 2 (chunk 0: the embedding, layers 0-1) and backward
  // micro-batch 5 (chunk 1: the loss and output layer, layers 3-2): figure 4 of arXiv 2412.19437
  // pairs layer 0 with layer 3 and layer 1 with layer 2, the compute stream running attention
  // (F), MLP (B), MLP (F), attention (B) while the expert stream runs combine (B), dispatch (F),
  // dispatch (B), combine (F). With dualpipe_overlap: false the forward runs whole, then the
  // backward.
  const char* moe =
      "model: {layers: 4, hidden: 1024, heads: 16, vocab: 32000, ffn: 4096, gated_mlp: true,\n"
      "        moe: {experts: 8, top_k: 2, expert_ffn: 2048, dense_layers: 0}}\n";
  const char* training = "{seq_len: 1024, micro_batch: 1, global_batch: 16}";
  const auto overlapped = spec_of(moe, "{pp: 2, ep: 2, dp: 2, schedule: dualpipe}", training);
  const auto [compute, expert] = pair_order(generate_stage_program(overlapped, 0), 2, 0, 5, 1);
  EXPECT_EQ(compute, (std::vector<std::string>{"F-1", "B-1", "F0", "B3", "F0", "B3", "F1", "B2",
                                               "F1", "B2"}));
  EXPECT_EQ(expert, (std::vector<std::string>{"ep_combine B3", "ep_dispatch F0", "ep_dispatch B3",
                                              "ep_combine F0", "ep_combine B2", "ep_dispatch F1",
                                              "ep_dispatch B2", "ep_combine F1"}));
  EXPECT_EQ(replay(Workload(overlapped)), "");
  const auto sequential =
      spec_of(moe, "{pp: 2, ep: 2, dp: 2, schedule: dualpipe, dualpipe_overlap: false}", training);
  const auto [compute2, expert2] = pair_order(generate_stage_program(sequential, 0), 2, 0, 5, 1);
  EXPECT_EQ(compute2, (std::vector<std::string>{"F-1", "F0", "F1", "B-1", "B3", "B2"}));
  EXPECT_EQ(expert2, (std::vector<std::string>{"ep_dispatch F0", "ep_combine F0", "ep_dispatch F1",
                                               "ep_combine F1", "ep_combine B3", "ep_dispatch B3",
                                               "ep_combine B2", "ep_dispatch B2"}));
  EXPECT_EQ(replay(Workload(sequential)), "");
  // The overlap reorders and (with the communication's SMs) lengthens operations; it adds none.
  EXPECT_EQ(generate_stage_program(overlapped, 0).ops.size(),
            generate_stage_program(sequential, 0).ops.size());
}

TEST(StepGenerator, DualPipeOverlapNeedsDualPipe) {
  EXPECT_THROW(spec_of(kSmallModel, "{pp: 2, dualpipe_overlap: true}",
                       "{seq_len: 1024, micro_batch: 1, global_batch: 8}"),
               InputError);
  EXPECT_THROW(spec_of(kSmallModel, "{pp: 2, schedule: dualpipe, dualpipe_comm_sm_share: 1.5}",
                       "{seq_len: 1024, micro_batch: 1, global_batch: 8}"),
               InputError);
}

TEST(StepGenerator, DualPipeSumsTheGradientsOfTheMirroredCopies) {
  // DualPipe, pp 4: rank s holds stages s and 3 - s, as does rank 3 - s (deepseek-ai/DualPipe,
  // examples/example_dualpipe.py sums p0.grad and the mirror's p1.grad). After the data-parallel
  // reductions each rank exchanges its gradients with rank 3 - s, a 2-rank AllReduce moving the
  // buffer once each way: every gradient it holds in 2 bytes (ZeRO 0), or the 1/dp shard it
  // updates (ZeRO 1).
  for (const int zero : {0, 1}) {
    const auto spec =
        spec_of(kSmallModel, fmt::format("{{pp: 4, dp: 2, zero: {}, schedule: dualpipe}}", zero),
                "{seq_len: 1024, micro_batch: 1, global_batch: 16}");
    for (int s = 0; s < 4; ++s) {
      const Program p = generate_stage_program(spec, s);
      const double params = rank_parameters(spec, s).total() / (zero == 0 ? 1 : 2);
      std::int64_t sent = 0, received = 0;
      for (const auto& op : p.ops) {
        if (op.name != OpName::kDpGradients || op.group != Communicator::kPipeline) continue;
        EXPECT_EQ(op.peer_offset, 3 - 2 * s);
        (op.kind == OpKind::kSend ? sent : received) += op.bytes;
      }
      EXPECT_EQ(sent, std::llround(params * 2)) << "zero " << zero << ", stage " << s;
      EXPECT_EQ(received, sent);
    }
    EXPECT_EQ(replay(Workload(spec)), "") << "zero " << zero;
  }
  // Both copies of stage 0 hold the same parameters: ranks 0 and 3 exchange equal buffers.
  const auto spec = spec_of(kSmallModel, "{pp: 4, schedule: dualpipe}",
                            "{seq_len: 1024, micro_batch: 1, global_batch: 16}");
  EXPECT_DOUBLE_EQ(rank_parameters(spec, 0).total(), rank_parameters(spec, 3).total());
}

TEST(StepGenerator, DataParallelReducesEveryGradientOnceInBuckets) {
  // dp 4, ZeRO 0: the AllReduce buckets add up to all parameters x 2 bytes (116M parameters,
  // 232 MB), and every bucket but the last holds at least the 25 MB bucket size.
  const auto spec =
      spec_of(kSmallModel, "{dp: 4}", "{seq_len: 1024, micro_batch: 1, global_batch: 8}");
  const Program p = generate_stage_program(spec, 0);
  const double params = count_parameters(spec.model).total;
  EXPECT_EQ(bytes_of(p, OpName::kDpGradients, CollectiveKind::kAllReduce),
            static_cast<std::int64_t>(params) * 2);
  std::vector<std::int64_t> buckets;
  for (const auto& op : p.ops) {
    if (op.name == OpName::kDpGradients) buckets.push_back(op.bytes);
  }
  ASSERT_GE(buckets.size(), 2u);
  for (std::size_t i = 0; i + 1 < buckets.size(); ++i)
    EXPECT_GE(buckets[i], 25'000'000);
  EXPECT_EQ(replay(Workload(spec)), "");
}

TEST(StepGenerator, GradientBucketsOverlapWithBackward) {
  // The first bucket depends on a backward compute operation of the last micro-batch, and some
  // backward compute comes after it in program order: the reduction overlaps the backward.
  const auto spec =
      spec_of(kSmallModel, "{dp: 2}", "{seq_len: 1024, micro_batch: 1, global_batch: 4}");
  const Program p = generate_stage_program(spec, 0);
  std::size_t first_bucket = 0;
  while (p.ops[first_bucket].name != OpName::kDpGradients)
    ++first_bucket;
  const Op& bucket = p.ops[first_bucket];
  ASSERT_EQ(bucket.dep_count, 1);
  const Op& producer = p.ops[p.deps_of(bucket)[0]];
  EXPECT_EQ(producer.kind, OpKind::kCompute);
  EXPECT_EQ(producer.phase, Phase::kBackward);
  EXPECT_EQ(producer.micro_batch, 1);
  // The output layer's gradients are ready first; its 32.8M-parameter weight fills a bucket.
  EXPECT_EQ(producer.name, OpName::kLogits);
  bool later_backward = false;
  for (std::size_t i = first_bucket + 1; i < p.ops.size(); ++i) {
    later_backward =
        later_backward || (p.ops[i].kind == OpKind::kCompute && p.ops[i].phase == Phase::kBackward);
  }
  EXPECT_TRUE(later_backward);
  // Without overlap, every bucket waits for the end of the backward.
  const auto serial = spec_of(kSmallModel, "{dp: 2}",
                              "{seq_len: 1024, micro_batch: 1, global_batch: 4, "
                              "overlap_grad_reduce: false}");
  const Program q = generate_stage_program(serial, 0);
  for (const auto& op : q.ops) {
    if (op.name == OpName::kDpGradients) {
      EXPECT_EQ(q.ops[q.deps_of(op)[0]].name, OpName::kEmbedding);
    }
  }
}

TEST(StepGenerator, ZeroStagesSplitTheGradientAllReduce) {
  const std::string training = "{seq_len: 1024, micro_batch: 1, global_batch: 4}";
  const std::int64_t param_bytes =
      static_cast<std::int64_t>(
          count_parameters(spec_of(kSmallModel, "{dp: 4}", training).model).total) *
      2;
  // ZeRO-1/2: ReduceScatter of the gradients + AllGather of the parameters, same volume as the
  // AllReduce (design.md).
  for (const char* zero : {"{dp: 4, zero: 1}", "{dp: 4, zero: 2}"}) {
    const Program p = generate_stage_program(spec_of(kSmallModel, zero, training), 0);
    EXPECT_EQ(bytes_of(p, OpName::kDpGradients, CollectiveKind::kReduceScatter), param_bytes);
    EXPECT_EQ(bytes_of(p, OpName::kZeroParamGather, CollectiveKind::kAllGather), param_bytes);
  }
  // ZeRO-3 with one micro-batch: parameters gathered in forward and again in backward, gradients
  // reduce-scattered: 3 x (n-1)/n x params of bus traffic against 2 x (n-1)/n for the AllReduce.
  const auto z3 =
      spec_of(kSmallModel, "{dp: 4, zero: 3}", "{seq_len: 1024, micro_batch: 1, global_batch: 4}");
  const Program p = generate_stage_program(z3, 0);
  const std::int64_t gathered = bytes_of(p, OpName::kZeroParamGather, CollectiveKind::kAllGather);
  const std::int64_t scattered = bytes_of(p, OpName::kDpGradients, CollectiveKind::kReduceScatter);
  EXPECT_EQ(gathered, 2 * param_bytes);
  EXPECT_EQ(scattered, param_bytes);
  EXPECT_DOUBLE_EQ(static_cast<double>(gathered + scattered) / (2.0 * param_bytes), 1.5);
  EXPECT_EQ(replay(Workload(z3)), "");
}

TEST(StepGenerator, OverlappedParamGatherOpensTheStepAndOnlyTheFirstForwardWaits) {
  // ZeRO-1 with overlap_param_gather (Megatron's --overlap-param-gather): the AllGathers of the
  // previous optimizer step run at the start of this one, first layers first; the first forward
  // waits for the first bucket only, and nothing is gathered after the optimizer. Same bytes as
  // the gradient ReduceScatter (design.md: ZeRO-1 moves the AllReduce's volume).
  const std::string training = "{seq_len: 1024, micro_batch: 1, global_batch: 8}";
  const auto spec = spec_of(kSmallModel, "{dp: 4, zero: 1}", training);
  const Program p = generate_stage_program(spec, 0);
  std::size_t gathers = 0;
  while (gathers < p.ops.size() && p.ops[gathers].name == OpName::kZeroParamGather)
    ++gathers;
  ASSERT_GT(gathers, 0u);
  EXPECT_EQ(sum_bytes(p, [](const Op& op) { return op.name == OpName::kZeroParamGather; }),
            bytes_of(p, OpName::kDpGradients, CollectiveKind::kReduceScatter));
  std::size_t waiting = 0;
  for (const Op& op : p.ops)
    for (std::uint32_t i = 0; i < op.dep_count; ++i)
      if (p.deps[op.dep_begin + i] < gathers) ++waiting;
  EXPECT_EQ(waiting, 1u);
  EXPECT_EQ(p.ops.back().name, OpName::kOptimizerStep);
  EXPECT_EQ(replay(Workload(spec)), "");
  // Without the overlap the gathers follow the optimizer step, as before.
  const auto late = spec_of(kSmallModel, "{dp: 4, zero: 1}",
                            "{seq_len: 1024, micro_batch: 1, global_batch: 8, "
                            "overlap_param_gather: false}");
  const Program q = generate_stage_program(late, 0);
  EXPECT_EQ(q.ops.back().name, OpName::kZeroParamGather);
}

TEST(StepGenerator, TpCommOverlapRunsEachSpCollectiveBesideItsGemm) {
  // tp_comm_overlap: the QKV GEMM no longer waits for the SP AllGather; both start after the
  // norm and the attention core waits for both. Volumes are unchanged (4 AG + 4 RS of b*s*h per
  // layer and micro-batch), and every rank's program still replays.
  const std::string training = "{seq_len: 2048, micro_batch: 2, global_batch: 6}";
  const auto spec = spec_of(kSmallModel, "{tp: 4, sp: true, tp_comm_overlap: true}", training);
  const Program p = generate_stage_program(spec, 0);
  const std::int64_t bsh_bytes = 2LL * 2048 * 1024 * 2;
  EXPECT_EQ(bytes_of(p, OpName::kSpAllGather, CollectiveKind::kAllGather, true),
            4 * 4 * 3 * bsh_bytes);
  EXPECT_EQ(bytes_of(p, OpName::kSpReduceScatter, CollectiveKind::kReduceScatter, true),
            4 * 4 * 3 * bsh_bytes);
  auto deps_of = [&](std::size_t i) {
    std::vector<std::uint32_t> v(p.deps.begin() + p.ops[i].dep_begin,
                                 p.deps.begin() + p.ops[i].dep_begin + p.ops[i].dep_count);
    return v;
  };
  std::size_t qkv = 0;
  while (!(p.ops[qkv].name == OpName::kQkv && p.ops[qkv].phase == Phase::kForward))
    ++qkv;
  for (std::uint32_t d : deps_of(qkv))
    EXPECT_NE(p.ops[d].name, OpName::kSpAllGather);
  const std::size_t core = qkv + 1;
  ASSERT_EQ(p.ops[core].name, OpName::kAttentionCore);
  bool waits_for_gather = false;
  for (std::uint32_t d : deps_of(core))
    waits_for_gather |= p.ops[d].name == OpName::kSpAllGather;
  EXPECT_TRUE(waits_for_gather);
  EXPECT_EQ(replay(Workload(spec)), "");
}

TEST(StepGenerator, TpCommOverlapNeedsSequenceParallelism) {
  EXPECT_THROW(spec_of(kSmallModel, "{tp: 4, tp_comm_overlap: true}",
                       "{seq_len: 1024, micro_batch: 1, global_batch: 4}"),
               InputError);
}

TEST(StepGenerator, ContextParallelRingSendsKvBlocksAndUlyssesAllToAll) {
  // cp 2, ring: per layer per micro-batch one KV block of (b*s/cp) x (k + v width) forward and
  // twice that in backward (keys/values and their gradients).
  const std::string training = "{seq_len: 2048, micro_batch: 1, global_batch: 2}";
  const auto ring = spec_of(kSmallModel, "{cp: 2}", training);
  const Program p = generate_stage_program(ring, 0);
  const std::int64_t kv_bytes = 1024LL * (1024 + 1024) * 2;
  const auto sent = [&](Phase phase) {
    return sum_bytes(p, [&](const Op& op) {
      return op.name == OpName::kCpKvExchange && op.kind == OpKind::kSend && op.phase == phase;
    });
  };
  EXPECT_EQ(sent(Phase::kForward), 4 * 2 * kv_bytes);
  EXPECT_EQ(sent(Phase::kBackward), 4 * 2 * 2 * kv_bytes);
  EXPECT_EQ(replay(Workload(ring)), "");
  // Ulysses: queries, keys and values in, the attention output out (forward), mirrored in
  // backward; 1024 local tokens of widths 3 x 1024 and 1024.
  const auto uly = spec_of(kSmallModel, "{cp: 2, cp_mode: ulysses}", training);
  const Program q = generate_stage_program(uly, 0);
  const std::int64_t in_bytes = 1024LL * 3 * 1024 * 2;
  const std::int64_t out_bytes = 1024LL * 1024 * 2;
  EXPECT_EQ(bytes_of(q, OpName::kCpAllToAll, CollectiveKind::kAllToAll),
            4 * 2 * 2 * (in_bytes + out_bytes));
  EXPECT_EQ(replay(Workload(uly)), "");
}

TEST(StepGenerator, CombinedLayoutKeepsEveryFormula) {
  // tp 2 (SP) x cp 2 x pp 2 x dp 2, ep 4, interleaved with 2 chunks, ZeRO-1, selective
  // recompute: 16 ranks. The local sequence is s/cp = 1024, SP shards it over tp for PP/EP.
  const auto spec =
      spec_of(kSmallMoe, "{tp: 2, sp: true, cp: 2, pp: 2, vpp: 2, dp: 2, ep: 4, zero: 1}",
              "{seq_len: 2048, micro_batch: 1, global_batch: 4, recompute: selective}");
  const Workload w(spec);
  EXPECT_EQ(w.world_size(), 16);
  const std::int64_t bsh_bytes = 1LL * 1024 * 1024 * 2;  // b * s/cp * h * 2 bytes
  const std::int64_t m = 2;
  // Stage 0 holds layers 0 (dense) and 2 (MoE) in its two chunks: 4 SP ReduceScatters of b*s*h
  // per dense layer per micro-batch, 2 per MoE layer (its MLP is expert-parallel).
  const Program& p0 = w.stage_program(0);
  EXPECT_EQ(bytes_of(p0, OpName::kSpReduceScatter, CollectiveKind::kReduceScatter, true),
            (4 + 2) * m * bsh_bytes);
  EXPECT_EQ(bytes_of(p0, OpName::kEpDispatch, CollectiveKind::kAllToAll),
            2 * m * 512LL * 2 * 1024 * 2);
  // Pipeline: SP-sharded activations (b*s/cp/tp*h): each of the 3 boundaries, each way.
  const auto pp_sent = [&](const Program& p) {
    return sum_bytes(
        p, [](const Op& op) { return op.kind == OpKind::kSend && op.dim == ParallelDim::kPp; });
  };
  EXPECT_EQ(pp_sent(w.stage_program(0)) + pp_sent(w.stage_program(1)), 3 * 2 * m * bsh_bytes / 2);
  EXPECT_EQ(replay(w), "");
}

TEST(StepGenerator, FullRecomputationRepeatsTheForwardCommunication) {
  const auto spec = spec_of(kSmallModel, "{tp: 2}",
                            "{seq_len: 1024, micro_batch: 1, global_batch: 1, recompute: full}");
  const Program p = generate_stage_program(spec, 0);
  const std::int64_t bsh_bytes = 1024LL * 1024 * 2;
  // 4 AllReduces per layer plus 2 recomputed forward ones.
  EXPECT_EQ(bytes_of(p, OpName::kTpAllReduce, CollectiveKind::kAllReduce, true), 6 * 4 * bsh_bytes);
}

TEST(StepGenerator, DeepSeekRecomputationRerunsTheNormsAndMlaUpProjections) {
  // recompute: norm_and_mla_up (DeepSeek-V3, arXiv 2412.19437 section 3.3), DeepSeek-V3's shapes
  // cut to 4 layers, 2 micro-batches of T = 1024 tokens: before each layer's backward, its two
  // norms and the MLA up-projections run again, 2 T (q_lora 1536 x 128 heads x (128 + 64) +
  // kv_lora 512 x 128 x (128 + 128)) FLOPs; nothing else is recomputed and no communication.
  const auto spec =
      spec_of("model: {preset: deepseek-v3, layers: 4, moe: {dense_layers: 1}}\n", "{}",
              "{seq_len: 1024, micro_batch: 1, global_batch: 2, "
              "recompute: norm_and_mla_up}");
  const Program p = generate_stage_program(spec, 0);
  int norms = 0, gemms = 0, other = 0;
  double gemm_flops = 0;
  for (const auto& op : p.ops) {
    if (op.phase != Phase::kRecompute) continue;
    if (op.name == OpName::kNorm) {
      ++norms;
    } else if (op.name == OpName::kQkv && op.kind == OpKind::kCompute) {
      ++gemms;
      gemm_flops += op.flops;
    } else {
      ++other;
    }
  }
  EXPECT_EQ(norms, 2 * 4 * 2);
  EXPECT_EQ(gemms, 4 * 2);
  EXPECT_EQ(other, 0);
  EXPECT_DOUBLE_EQ(gemm_flops, 4 * 2 * 2.0 * 1024 * (1536.0 * 128 * 192 + 512.0 * 128 * 256));
  EXPECT_EQ(replay(Workload(spec)), "");
}

TEST(StepGenerator, FlopsPerStepAreSixTimesParametersTimesTokensPlusAttention) {
  // Llama 3 70B, tp 8, pp 4, 4 micro-batches of 1 x 4096 tokens. Model FLOPs (recomputation
  // excluded) summed over all ranks against 6 * P * tokens + 12 * l * s * h * tokens (design.md).
  const auto spec = spec_of("model: llama3-70b\n", "{tp: 8, pp: 4}",
                            "{seq_len: 4096, micro_batch: 1, global_batch: 4, recompute: full}");
  const Workload w(spec);
  double flops = 0;
  for (int s = 0; s < 4; ++s) {
    for (const auto& op : w.stage_program(s).ops) {
      if (op.kind == OpKind::kCompute && op.phase != Phase::kRecompute &&
          op.phase != Phase::kOptimizer) {
        flops += op.flops * 8;  // 8 tensor-parallel ranks per stage
      }
    }
  }
  const double tokens = 4.0 * 4096;
  const double expected =
      6.0 * count_parameters(spec.model).total * tokens + 12.0 * 80 * 4096 * 8192 * tokens;
  EXPECT_NEAR(flops / expected, 1.0, 0.02);
  // And exactly three times the model's forward matrix FLOPs, plus element-wise work below 0.5%.
  const TokenFlops f = forward_flops_per_token(spec.model, 4096);
  EXPECT_NEAR(flops / (3.0 * f.total() * tokens), 1.0, 0.005);
  EXPECT_GE(flops, 3.0 * f.total() * tokens);
}

TEST(StepGenerator, OperationsStayCompactAtScale) {
  // GPT-3 175B on 1,024 GPUs (tp 8, pp 8, dp 16, 1,536 sequences: 96 micro-batches): the eight
  // stage programs together stay well under 64 MiB, and every op is 56 bytes.
  static_assert(sizeof(Op) <= 56);
  const auto spec = spec_of("model: gpt3-175b\n", "{tp: 8, pp: 8, dp: 16, sp: true, zero: 1}",
                            "{seq_len: 2048, micro_batch: 1, global_batch: 1536}");
  const Workload w(spec);
  EXPECT_EQ(w.world_size(), 1024);
  EXPECT_LT(w.memory_bytes(), 64u << 20);
  EXPECT_GT(w.stage_program(0).ops.size(), 96u * 12 * 20);
}

}  // namespace
}  // namespace stepsim::workloads
