// DeepSeek-V3's MLA in decode (docs/serving.md, "MLA in decode"): the cache holds the compressed
// latent and the rotary key of each token in each layer, (kv_lora_rank 512 + qk_rope_head_dim 64)
// elements, on every tensor-parallel rank; the attention core runs with the up-projections
// absorbed, over that latent (DeepSeek-V2, arXiv 2405.04434, section 2.1.3).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/common/input_error.hpp"
#include "sim/run/serve.hpp"
#include "sim/scenario/serving_scenario.hpp"
#include "workloads/step_generator.hpp"

namespace stepsim {
namespace {

using workloads::ServingPhase;

// DeepSeek-V3's shapes (128 heads, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128,
// v_head_dim 128), 4 of its layers, decoding on one DGX H100 with attention data parallelism
// (tp 1: every rank attends over its own sequences) and 8-way expert parallelism.
const char* const kDecode = R"(
topology: cluster:nodes=1
model: {preset: deepseek-v3, layers: 4}
compute: {device: h100}
serving:
  precision: fp8
  decode: {tp: 1, ep: 8, batch: 16, context: 4096}
)";

ServingScenario load(const std::vector<std::string>& overrides = {}) {
  return load_serving_scenario(config::Document::parse(kDecode, "mla.yaml"), "mla", overrides);
}

TEST(ServeMla, KvBytesPerTokenAndLayerAreTheLatentAndTheRotaryKey) {
  const ServingScenario fp8 = load();
  // (512 + 64) x 1 byte in FP8, whatever the tensor parallelism (the latent is not split).
  EXPECT_EQ(workloads::kv_bytes_per_token_layer(fp8.serving, 1), 576.0);
  EXPECT_EQ(workloads::kv_bytes_per_token_layer(fp8.serving, 4), 576.0);
  const ServingScenario bf16 = load({"serving.kv_cache_dtype=bf16"});
  EXPECT_EQ(workloads::kv_bytes_per_token_layer(bf16.serving, 1), 1152.0);
  // Per accelerator at batch 16: 16 x 4096 tokens x 4 layers x 576 bytes.
  const auto memory = workloads::serving_memory(fp8.serving, ServingPhase::kDecode, 16);
  EXPECT_EQ(memory.kv_cache.count(), 16LL * 4096 * 4 * 576);
}

// With the up-projections absorbed, each of the 128 heads scores a 576-wide query against 4096
// cached latents and sums 512-wide latents: 2 x 16 x 4096 x 128 x (512 + 64 + 512) FLOPs per
// layer, 3.4 times the training convention's 2 x 16 x 4096 x 128 x (192 + 128) for the
// un-absorbed heads; the kernel reads the 16 x 4096 x 576 bytes of cache once.
TEST(ServeMla, DecodeAttentionRunsOverTheLatentWithAbsorbedProjections) {
  const ServingScenario s = load();
  const std::int64_t batch = 16;
  const double absorbed = 2.0 * batch * 4096 * 128 * (512 + 64 + 512);
  EXPECT_DOUBLE_EQ(workloads::absorbed_mla_decode_flops(s.serving, 1, batch), absorbed);
  EXPECT_DOUBLE_EQ(workloads::absorbed_mla_decode_flops(s.serving, 4, batch), absorbed / 4);
  const auto pass = workloads::serving_forward_pass(s.serving, ServingPhase::kDecode, batch);
  EXPECT_DOUBLE_EQ(pass.kv_cache_bytes_per_layer, 16.0 * 4096 * 576);
  const workloads::Program program = workloads::generate_forward_program(
      workloads::serving_workload(s.serving, ServingPhase::kDecode, batch), pass);
  int cores = 0;
  for (const workloads::Op& op : program.ops) {
    if (op.name != workloads::OpName::kAttentionCore) continue;
    ++cores;
    EXPECT_DOUBLE_EQ(op.flops, absorbed);
    EXPECT_GE(op.bytes, 16LL * 4096 * 576);
  }
  EXPECT_EQ(cores, 4);
  const double unabsorbed = 2.0 * batch * 4096 * 128 * (192 + 128);
  EXPECT_NEAR(absorbed / unabsorbed, 3.4, 1e-12);
  // A prefill pass keeps the training convention (no absorption: the prompt's keys and values
  // are up-projected once and attended over as in training).
  const ServingScenario prefill = load_serving_scenario(
      config::Document::parse(std::string(kDecode) + "  prefill: {tp: 1, ep: 8, prompt: 512}\n",
                              "mla.yaml"),
      "mla", {});
  EXPECT_LT(workloads::serving_forward_pass(prefill.serving, ServingPhase::kPrefill, 1)
                .attention_core_flops_per_layer,
            0.0);
}

// DeepSeek dispatches in FP8 and combines in BF16 (entry `ds-day6`): with combine_dtype bf16 each
// combine all-to-all moves 16 sequences x top-8 x 7168 x 2 bytes, twice its dispatch.
TEST(ServeExperts, CombineHasItsOwnPrecision) {
  const ServingScenario s = load({"serving.combine_dtype=bf16"});
  const workloads::Program program =
      workloads::serving_program(s.serving, ServingPhase::kDecode, 16);
  int dispatches = 0, combines = 0;
  for (const workloads::Op& op : program.ops) {
    if (op.name == workloads::OpName::kEpDispatch) {
      EXPECT_EQ(op.bytes, 16LL * 8 * 7168);
      ++dispatches;
    }
    if (op.name == workloads::OpName::kEpCombine) {
      EXPECT_EQ(op.bytes, 16LL * 8 * 7168 * 2);
      ++combines;
    }
  }
  EXPECT_EQ(dispatches, 1);  // one MoE layer in this slice
  EXPECT_EQ(combines, 1);
  // Without the key the combine moves the activation precision, FP8.
  const workloads::Program fp8 =
      workloads::serving_program(load().serving, ServingPhase::kDecode, 16);
  for (const workloads::Op& op : fp8.ops) {
    if (op.name == workloads::OpName::kEpCombine) {
      EXPECT_EQ(op.bytes, 16LL * 8 * 7168);
    }
  }
}

// Redundant experts (DeepSeek's 32 in prefill and decode): 8 copies over 8 ranks add one expert
// per rank, 7168 x 2048 x 3 weights (gate, up, down) = 44,040,192 bytes in FP8, to the grouped GEMM
// of each MoE layer (one in this 4-layer slice, whose first 3 layers are dense) and to the memory.
TEST(ServeExperts, RedundantExpertsAddTheirWeightsPerRank) {
  const ServingScenario plain = load();
  const ServingScenario redundant = load({"serving.decode.redundant_experts=8"});
  EXPECT_EQ(workloads::pool_model(redundant.serving, ServingPhase::kDecode).moe.experts, 264);
  auto experts_bytes = [](const ServingScenario& s) {
    const auto pass = workloads::serving_forward_pass(s.serving, ServingPhase::kDecode, 16);
    const workloads::Program program = workloads::generate_forward_program(
        workloads::serving_workload(s.serving, ServingPhase::kDecode, 16), pass);
    std::int64_t bytes = 0;
    for (const workloads::Op& op : program.ops)
      if (op.name == workloads::OpName::kExperts) bytes += op.bytes;
    return bytes;
  };
  const std::int64_t one_expert = 7168LL * 2048 * 3;
  EXPECT_EQ(experts_bytes(redundant) - experts_bytes(plain), one_expert);
  // The memory also counts the copies as 8 more columns of the router (7168 x 8 bytes), which a
  // server does not have: a known over-count of 57 KB per MoE layer (docs/serving.md).
  EXPECT_EQ((workloads::serving_memory(redundant.serving, ServingPhase::kDecode, 16).weights -
             workloads::serving_memory(plain.serving, ServingPhase::kDecode, 16).weights)
                .count(),
            one_expert + 7168 * 8);
  // 256 + 4 copies do not split over 8 ranks.
  try {
    load({"serving.decode.redundant_experts=4"});
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("serving.decode.ep"), std::string::npos) << what;
    EXPECT_NE(what.find("4 redundant"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace stepsim
