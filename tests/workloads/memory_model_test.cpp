// Memory per rank against Korthikanti et al. 2022 and the mixed-precision Adam byte counts.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/workloads/workload_of.hpp"
#include "workloads/memory_model.hpp"

namespace stepsim::workloads {
namespace {

TEST(MemoryModel, ActivationsPerLayerFollowKorthikanti) {
  // GPT-3 175B, s = 2048, b = 1, t = 8 (a = 96, h = 12288, so 5as/(ht) = 10):
  // TP alone sbh(10 + 24/8 + 10) = 23 sbh; TP + SP sbh(34/8 + 10) = 14.25 sbh; selective with
  // SP 34/8 sbh = 4.25 sbh; full with SP 2sbh/8; no TP 34 + 80 = 114 sbh (Table 2 of the paper).
  const double sbh = 2048.0 * 12288 * 1;
  const std::string tr = "{seq_len: 2048, global_batch: 8";
  EXPECT_DOUBLE_EQ(layer_activation_bytes(workload_of("gpt3-175b", "{tp: 8}", tr + "}"), 0),
                   23 * sbh);
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(workload_of("gpt3-175b", "{tp: 8, sp: true}", tr + "}"), 0),
      14.25 * sbh);
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(
          workload_of("gpt3-175b", "{tp: 8, sp: true}", tr + ", recompute: selective}"), 0),
      4.25 * sbh);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(
                       workload_of("gpt3-175b", "{tp: 8, sp: true}", tr + ", recompute: full}"), 0),
                   2 * sbh / 8);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(workload_of("gpt3-175b", "{}", tr + "}"), 0), 114 * sbh);
}

TEST(MemoryModel, DeepSeekRecomputationDropsTheNormOutputsAndMlaProjections) {
  // recompute: norm_and_mla_up (DeepSeek-V3, arXiv 2412.19437 section 3.3) against selective, per
  // layer, no TP: the two norms' outputs (2 + 2 sbh) and, with MLA, the queries, keys and values
  // (2 + 2 + 2 sbh) are recomputed; the latents stay, 2 (q_lora 1536 + kv_lora 512 + rope 64) /
  // h sbh. A dense layer of DeepSeek-V3 (layer 0, h = 7168, s = 4096): selective keeps
  // 10 + 8 + 6 x 18432 / 7168 sbh, the new mode 10 - 4 + 4224 / 7168 + 2 + 6 x 18432 / 7168.
  // GPT-3 has no MLA: only the norms' 4 sbh go.
  const std::string tr = "{seq_len: 4096, global_batch: 8, recompute: ";
  const double h = 7168, sbh = 4096.0 * h;
  const double selective =
      layer_activation_bytes(workload_of("deepseek-v3", "{}", tr + "selective}"), 0);
  EXPECT_DOUBLE_EQ(selective, (18 + 6 * 18432 / h) * sbh);
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(workload_of("deepseek-v3", "{}", tr + "norm_and_mla_up}"), 0),
      (6 + 2 * 2112 / h + 2 + 6 * 18432 / h) * sbh);
  const double gpt_sbh = 4096.0 * 12288;
  EXPECT_DOUBLE_EQ(
      layer_activation_bytes(workload_of("gpt3-175b", "{}", tr + "selective}"), 0) -
          layer_activation_bytes(workload_of("gpt3-175b", "{}", tr + "norm_and_mla_up}"), 0),
      4 * gpt_sbh);
}

TEST(MemoryModel, ZeroStagesShardStatesOverDataParallelRanks) {
  // Llama 3 8B (8,030,261,248 parameters) on dp 8: 2 + 2 + 12 bytes per parameter; ZeRO-1
  // shards the 12, ZeRO-2 also the gradient's 2, ZeRO-3 everything.
  const double psi = 8030261248.0;
  const std::string tr = "{seq_len: 1024, global_batch: 8, recompute: full}";
  const auto z0 = estimate_memory(workload_of("llama3-8b", "{dp: 8}", tr)).at(0);
  EXPECT_EQ(z0.parameters.count(), std::llround(2 * psi));
  EXPECT_EQ(z0.gradients.count(), std::llround(2 * psi));
  EXPECT_EQ(z0.optimizer_states.count(), std::llround(12 * psi));
  EXPECT_TRUE(z0.exceeds_capacity);  // 128 GB of states on an 80 GB H100
  EXPECT_NE(z0.warning.find("but h100 has 80 GB"), std::string::npos) << z0.warning;
  const auto z1 = estimate_memory(workload_of("llama3-8b", "{dp: 8, zero: 1}", tr)).at(0);
  EXPECT_EQ(z1.optimizer_states.count(), std::llround(12 * psi / 8));
  EXPECT_EQ(z1.gradients.count(), std::llround(2 * psi));
  const auto z2 = estimate_memory(workload_of("llama3-8b", "{dp: 8, zero: 2}", tr)).at(0);
  EXPECT_EQ(z2.gradients.count(), std::llround(2 * psi / 8));
  const auto z3 = estimate_memory(workload_of("llama3-8b", "{dp: 8, zero: 3}", tr)).at(0);
  EXPECT_EQ(z3.parameters.count(), std::llround(2 * psi / 8));
  EXPECT_FALSE(z3.exceeds_capacity);
  EXPECT_TRUE(z3.warning.empty());
  // Gradients reduced in FP32 (Megatron-LM's FP32 main grads) are held in FP32: 2 + 4 + 12 / DP
  // bytes per parameter with ZeRO-1, Megatron's own "6 + 12 / DP"
  // (megatron/training/theoretical_memory_usage.py).
  const auto main_grads = estimate_memory(workload_of("llama3-8b", "{dp: 8, zero: 1}",
                                                      "{seq_len: 1024, global_batch: 8, "
                                                      "recompute: full, grad_reduce_dtype: fp32}"))
                              .at(0);
  EXPECT_EQ(main_grads.gradients.count(), std::llround(4 * psi));
  EXPECT_EQ(main_grads.parameters.count() + main_grads.gradients.count() +
                main_grads.optimizer_states.count(),
            std::llround(6 * psi) + std::llround(12 * psi / 8));
}

TEST(MemoryModel, OneFOneBKeepsPMinusSMicroBatchesAliveGpipeKeepsAll) {
  const std::string tr = "{seq_len: 1024, global_batch: 8}";
  const auto f1b = estimate_memory(workload_of("llama3-8b", "{pp: 4}", tr));
  EXPECT_DOUBLE_EQ(f1b[0].peak_in_flight_micro_batches, 4);
  EXPECT_DOUBLE_EQ(f1b[1].peak_in_flight_micro_batches, 3);
  EXPECT_DOUBLE_EQ(f1b[3].peak_in_flight_micro_batches, 1);
  const auto gpipe = estimate_memory(workload_of("llama3-8b", "{pp: 4, schedule: gpipe}", tr));
  EXPECT_DOUBLE_EQ(gpipe[0].peak_in_flight_micro_batches, 8);
  // Interleaved, p = 4, v = 2, m = 8: stage 0 warms up (4-1) x 2 + 4 = 10 chunk passes of half a
  // micro-batch each, plus one: 5.5 micro-batches, the (1 + (p-1)/(pv)) x p = 5.5 of Korthikanti.
  const auto inter = estimate_memory(workload_of("llama3-8b", "{pp: 4, vpp: 2}", tr));
  EXPECT_DOUBLE_EQ(inter[0].peak_in_flight_micro_batches, 5.5);
}

TEST(MemoryModel, RankParametersAddUpToTheModel) {
  // tp 2 x pp 4: summing every stage's rank parameters times the ranks that split them gives the
  // model total (norms are replicated over tp, so count them once).
  const auto spec = workload_of("llama3-8b", "{tp: 2, pp: 4}", "{seq_len: 1024, global_batch: 8}");
  const ParameterCount c = count_parameters(spec.model);
  double sum = 0;
  for (int s = 0; s < 4; ++s)
    sum += rank_parameters(spec, s).total();
  const double replicated = 32 * c.norms + c.final_norm;
  EXPECT_DOUBLE_EQ(2 * (sum - replicated) + replicated, c.total);
}

TEST(MemoryModel, DualPipeHoldsTwoStagesPerRank) {
  // DualPipe, p = 4: rank s holds stages s and 3 - s, two copies of the model over the pipeline
  // (Llama 3 8B does not tie its embeddings: each parameter is on one stage of each copy).
  const std::string tr = "{seq_len: 1024, global_batch: 8}";
  const auto one_f_one_b = workload_of("llama3-8b", "{pp: 4}", tr);
  const auto dualpipe = workload_of("llama3-8b", "{pp: 4, schedule: dualpipe}", tr);
  double total = 0;
  for (int s = 0; s < 4; ++s) {
    EXPECT_DOUBLE_EQ(
        rank_parameters(dualpipe, s).total(),
        rank_parameters(one_f_one_b, s).total() + rank_parameters(one_f_one_b, 3 - s).total());
    total += rank_parameters(dualpipe, s).total();
  }
  EXPECT_DOUBLE_EQ(total, 2 * count_parameters(dualpipe.model).total);
}

}  // namespace
}  // namespace stepsim::workloads
