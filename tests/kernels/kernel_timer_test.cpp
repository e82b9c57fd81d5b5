// The attention model against the measured rows it was set from and those it was not, and the
// kernel timer's closed forms: a GEMM's backward is its dgrad and wgrad products, a memory-bound
// kernel takes its bytes over its kind's rate, launch costs bound a stream of small kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "workloads/kernels/attention_model.hpp"
#include "workloads/kernels/gemm_table.hpp"
#include "workloads/kernels/kernel_timer.hpp"

namespace stepsim::workloads::kernels {
namespace {

AttentionShape attention(std::int64_t batch, std::int64_t heads, std::int64_t seq,
                         std::int64_t head_dim, bool causal) {
  return {batch, heads, heads, seq, seq, head_dim, head_dim, causal};
}

TEST(AttentionShape, CausalMaskHalvesTheSquareScoresPlusTheDiagonal) {
  const AttentionShape full = attention(2, 16, 4096, 128, false);
  EXPECT_DOUBLE_EQ(full.forward_flops(), 4.0 * 2 * 16 * 4096.0 * 4096.0 * 128);
  const AttentionShape causal = attention(2, 16, 4096, 128, true);
  EXPECT_DOUBLE_EQ(causal.forward_flops(), full.forward_flops() * (4097.0 / 2.0) / 4096.0);
}

// validation/data/kernels/h200/attention.csv, cuDNN rows with few heads (not in the table the
// model reads; u0 was fitted to them): 1 x 8, 1 x 16 and 1 x 64 heads of 128 at 4,096 tokens.
TEST(AttentionModel, OccupancyOfFewHeadsMatchesTheMeasuredRows) {
  const AttentionModel m = *attention_model_preset("h100");
  const double tera = 1e12;
  EXPECT_NEAR(m.flops_per_s(attention(1, 8, 4096, 128, true), KernelPass::kForward) / tera, 332,
              0.05 * 332);
  EXPECT_NEAR(m.flops_per_s(attention(1, 16, 4096, 128, true), KernelPass::kForward) / tera, 446,
              0.05 * 446);
  EXPECT_NEAR(m.flops_per_s(attention(1, 64, 4096, 128, true), KernelPass::kForward) / tera, 559,
              0.05 * 559);
  // A GQA row never read by the model: 64 heads over 8 KV heads at 8,192 tokens, 628 TFLOP/s.
  EXPECT_NEAR(m.flops_per_s(attention(1, 64, 8192, 128, true), KernelPass::kForward) / tera, 628,
              0.05 * 628);
}

TEST(AttentionModel, TableRowsComeBackAndHeadDimsInterpolate) {
  const AttentionModel m = *attention_model_preset("h100");
  // 8 x 32 heads x 4,096 tokens is a table row (u = 8,192): its rate exactly.
  EXPECT_NEAR(m.flops_per_s(attention(8, 32, 4096, 128, true), KernelPass::kForward), 603e12, 1e9);
  EXPECT_NEAR(m.flops_per_s(attention(8, 32, 4096, 128, true), KernelPass::kBackward), 458e12, 1e9);
  // Head dim 96 lies between the 64 and 128 rows.
  const double r96 = m.flops_per_s(attention(8, 32, 4096, 96, true), KernelPass::kForward);
  EXPECT_NEAR(r96, (415e12 + 603e12) / 2, 1e9);
  // Backward FLOPs are 2.5 x the forward's.
  const AttentionShape s = attention(8, 32, 4096, 128, true);
  EXPECT_NEAR(m.time(s, KernelPass::kBackward).seconds(), 2.5 * s.forward_flops() / 458e12, 1e-9);
  EXPECT_EQ(m.time(s, KernelPass::kBackwardWeight), Time::zero());
}

TEST(AttentionModel, DevicesWithoutAttentionDataSaySo) {
  EXPECT_TRUE(attention_model_preset("h100")->rates().calibrated);
  EXPECT_TRUE(attention_model_preset("a100")->rates().calibrated);
  EXPECT_FALSE(attention_model_preset("b200")->rates().calibrated);
  EXPECT_FALSE(attention_model_preset("ascend-910c")->rates().calibrated);
  EXPECT_FALSE(attention_model_preset("tpu").has_value());
  EXPECT_FALSE(kernel_timer_preset("ascend-910c")->calibrated());
  EXPECT_TRUE(kernel_timer_preset("h100")->calibrated());
}

TEST(KernelTimer, GemmBackwardIsDgradPlusWgrad) {
  const KernelTimer t = *kernel_timer_preset("h100");
  Kernel g;
  g.kind = KernelKind::kGemm;
  g.gemm = {4096, 6144, 2048, 1};
  const Time dgrad = t.time(g, KernelPass::kBackwardInput).time;
  const Time wgrad = t.time(g, KernelPass::kBackwardWeight).time;
  EXPECT_EQ(t.time(g, KernelPass::kBackward).time, dgrad + wgrad);
  // dgrad is the m x k product over n; wgrad the k x n product over m.
  Kernel d = g;
  d.gemm = {4096, 2048, 6144, 1};
  EXPECT_EQ(dgrad, t.time(d, KernelPass::kForward).time);
  Kernel w = g;
  w.gemm = {2048, 6144, 4096, 1};
  EXPECT_EQ(wgrad, t.time(w, KernelPass::kForward).time);
  EXPECT_DOUBLE_EQ(g.flops(KernelPass::kBackward), 2 * g.flops(KernelPass::kForward));
  EXPECT_EQ(g.launches(KernelPass::kBackward), 2);
}

TEST(KernelTimer, SustainedClockScalesComputeBoundGemmsOnly) {
  const KernelTimer t = *kernel_timer_preset("h100");
  EXPECT_DOUBLE_EQ(t.gemm_time_scale(GemmDtype::kBf16), 1.176);
  EXPECT_DOUBLE_EQ(t.gemm_time_scale(GemmDtype::kFp8), 1.388);
  const GemmShape big{8192, 8192, 8192, 1};
  Kernel g;
  g.kind = KernelKind::kGemm;
  g.gemm = big;
  const GemmEstimate e = t.gemm().estimate(big, GemmDtype::kBf16);
  ASSERT_FALSE(e.memory_bound);
  EXPECT_NEAR(t.time(g, KernelPass::kForward).time.seconds(), 1.176 * e.time.seconds(), 1e-11);
  // A skinny (memory-bound) product is not scaled: HBM does not slow with the SM clock.
  g.gemm = {1, 8192, 8192, 1};
  const GemmEstimate skinny = t.gemm().estimate(g.gemm, GemmDtype::kBf16);
  ASSERT_TRUE(skinny.memory_bound);
  EXPECT_EQ(t.time(g, KernelPass::kForward).time, skinny.time);
  EXPECT_DOUBLE_EQ(kernel_timer_preset("a100")->gemm_time_scale(GemmDtype::kBf16), 1.0);
}

TEST(KernelTimer, AUsersTableIsTakenAsMeasured) {
  KernelTimer t = *kernel_timer_preset("h100");
  const GemmShape s{4096, 4096, 4096, 1};
  GemmModel gemm = t.gemm();
  gemm.set_table(std::make_shared<const GemmTable>(
      GemmTable::from_csv("m,n,k,dtype,time_us\n4096,4096,4096,bf16,200\n", "mine.csv")));
  t.set_gemm(std::move(gemm));
  t.set_table_is_sustained(true);
  Kernel g;
  g.kind = KernelKind::kGemm;
  g.gemm = s;
  EXPECT_EQ(t.time(g, KernelPass::kForward).time, Time::us(200));
}

TEST(KernelTimer, MemoryKernelTakesItsBytesAtItsKindsRate) {
  const KernelTimer t = *kernel_timer_preset("h200");
  Kernel norm;
  norm.kind = KernelKind::kMemory;
  norm.memory = MemoryKind::kLayerNorm;
  norm.forward_bytes = 2.25e9;
  norm.backward_bytes = 1.53e9;
  EXPECT_NEAR(t.time(norm, KernelPass::kForward).time.seconds(), 1e-3, 1e-12);
  EXPECT_NEAR(t.time(norm, KernelPass::kBackward).time.seconds(), 1e-3, 1e-12);
  EXPECT_TRUE(t.time(norm, KernelPass::kForward).memory_bound);
  // H100 moves the same bytes 4.8 / 3.35 times slower.
  const KernelTimer h100 = *kernel_timer_preset("h100");
  EXPECT_NEAR(h100.time(norm, KernelPass::kForward).time.seconds(), 1e-3 * 4.8 / 3.35, 1e-9);
}

TEST(KernelTimer, LaunchCostsBoundAStreamOfSmallKernels) {
  const KernelTimer t = *kernel_timer_preset("h100");
  Kernel tiny;
  tiny.kind = KernelKind::kMemory;
  tiny.memory = MemoryKind::kElementwise;
  tiny.forward_bytes = 1000;  // well under a microsecond of bandwidth
  const std::vector<Kernel> ten(10, tiny);
  // Ten kernels shorter than the host's 6.48 us per launch: the host's rate sets the time.
  EXPECT_EQ(t.operation_time(ten, KernelPass::kForward), Time::ps(6'480'000) * 10);
  // One long kernel: its time plus the GPU's 0.97 us.
  Kernel big = tiny;
  big.forward_bytes = 4.18e12 * 3.35 / 4.8 * 1e-3;  // 1 ms at the H100 copy rate
  EXPECT_NEAR(t.operation_time({big}, KernelPass::kForward).seconds(), 1e-3 + 0.97e-6, 1e-9);
  // No backward bytes: no backward kernel, no launch.
  EXPECT_EQ(t.operation_time(ten, KernelPass::kBackward), Time::zero());
}

TEST(KernelTimer, ASplitProductIsItsSlicesBackToBack) {
  const KernelTimer t = *kernel_timer_preset("h100");
  Kernel g;
  g.kind = KernelKind::kGemm;
  g.gemm = {4096, 4608, 12288, 1};
  Kernel slice = g;
  slice.gemm.m = 512;
  g.forward_splits = 8;  // TE's ring exchange at TP 8
  g.dgrad_splits = 8;
  EXPECT_EQ(t.time(g, KernelPass::kForward).time, t.time(slice, KernelPass::kForward).time * 8);
  EXPECT_DOUBLE_EQ(t.time(g, KernelPass::kForward).flops, 2.0 * 4096 * 4608 * 12288);
  // Slices of 512 tokens fill fewer waves: slower than the whole product.
  Kernel whole = g;
  whole.forward_splits = 1;
  whole.dgrad_splits = 1;
  EXPECT_GT(t.time(g, KernelPass::kForward).time, t.time(whole, KernelPass::kForward).time);
  // The dgrad is split, the wgrad is not.
  EXPECT_EQ(t.time(g, KernelPass::kBackwardWeight).time,
            t.time(whole, KernelPass::kBackwardWeight).time);
  EXPECT_EQ(t.time(g, KernelPass::kBackwardInput).time,
            t.time(slice, KernelPass::kBackwardInput).time * 8);
  EXPECT_EQ(g.launches(KernelPass::kForward), 8);
  EXPECT_EQ(g.launches(KernelPass::kBackward), 9);
  // m not a multiple of the splits: the first slices one row longer.
  g.gemm.m = 4099;
  g.forward_splits = 4;
  Kernel a = g, b = g;
  a.forward_splits = b.forward_splits = 1;
  a.gemm.m = 1025;
  b.gemm.m = 1024;
  EXPECT_EQ(t.time(g, KernelPass::kForward).time,
            t.time(a, KernelPass::kForward).time * 3 + t.time(b, KernelPass::kForward).time);
}

}  // namespace
}  // namespace stepsim::workloads::kernels
