// `stepsim kernels`' table: every kernel of a step with its time, built from the layer costs.
#include "workloads/kernel_report.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/common/input_error.hpp"
#include "tests/workloads/workload_of.hpp"

namespace stepsim::workloads {
namespace {

const char* kGpt = "{layers: 4, hidden: 2048, heads: 16, vocab: 32000, ffn: 8192, bias: true}";
const char* kTraining = "{seq_len: 4096, micro_batch: 1, global_batch: 1}";

TEST(KernelReport, RowsAddUpToTheMicroBatchAndCountEveryLayer) {
  const auto spec = workload_of(kGpt, "{tp: 1}", kTraining, "{device: h100, model: kernels}");
  const KernelReport r = step_kernels(spec);
  EXPECT_EQ(r.device, "h100");
  EXPECT_TRUE(r.note.empty());
  Time total;
  bool saw_qkv = false;
  for (const KernelRow& row : r.rows) {
    EXPECT_GT(row.time, Time{}) << row.kernel;
    EXPECT_GT(row.efficiency, 0.0) << row.kernel;
    EXPECT_LE(row.efficiency, 1.0) << row.kernel;
    if (row.operation != "optimizer_step") total += row.time * row.count;
    if (row.kernel == "qkv" && row.pass == "fwd") {
      saw_qkv = true;
      EXPECT_EQ(row.count, 4);  // one per layer
      EXPECT_DOUBLE_EQ(row.flops, 2.0 * 4096 * 3 * 2048 * 2048);
      EXPECT_EQ(row.shape, "m=4096 n=6144 k=2048");
    }
  }
  EXPECT_TRUE(saw_qkv);
  EXPECT_EQ(total, r.total_per_micro_batch);
}

TEST(KernelReport, ARooflineScenarioIsListedWithItsPresetsKernelModel) {
  const auto kernels = workload_of(kGpt, "{tp: 1}", kTraining, "{device: h100, model: kernels}");
  const auto roofline = workload_of(kGpt, "{tp: 1}", kTraining);
  const KernelReport a = step_kernels(kernels);
  const KernelReport b = step_kernels(roofline);
  EXPECT_NE(b.note.find("roofline"), std::string::npos) << b.note;
  EXPECT_EQ(a.total_per_micro_batch, b.total_per_micro_batch);
}

TEST(KernelReport, ADeviceGivenByNumbersHasNoKernelsToList) {
  const auto spec =
      workload_of(kGpt, "{tp: 1}", kTraining,
                  "{peak: {bf16: 100TFLOP/s}, hbm_bandwidth: 1TB/s, hbm_capacity: 100GB}");
  EXPECT_THROW(step_kernels(spec), InputError);
}

}  // namespace
}  // namespace stepsim::workloads
