// Reading model/parallelism/training/compute sections, and rejecting impossible layouts with the
// reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/common/config.hpp"
#include "sim/common/input_error.hpp"
#include "workloads/workload_spec.hpp"

namespace stepsim::workloads {
namespace {

WorkloadSpec parse(const std::string& yaml) {
  const auto doc = config::Document::parse(yaml, "scenario.yaml");
  return parse_workload(doc.root());
}

// The error message of parsing `yaml`, or "" when it parses.
std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const std::string kCompute = "compute: {device: h100}\n";
const std::string kTraining = "training: {seq_len: 4096, micro_batch: 1, global_batch: 64}\n";

TEST(ParseWorkload, ReadsAPresetLayoutAndDefaults) {
  const auto spec = parse(
      "name: x\ntopology: whatever\nmodel: llama3-8b\n"
      "parallelism: {tp: 8, pp: 2, dp: 4, sp: true, zero: 1}\n" +
      kTraining + kCompute);
  EXPECT_EQ(spec.model.name, "llama3-8b");
  EXPECT_EQ(spec.parallel.world_size(), 64);
  EXPECT_EQ(spec.micro_batches(), 16);                      // 64 / (1 x 4)
  EXPECT_EQ(spec.training.grad_bucket, Bytes(25'000'000));  // 25 MB default
  EXPECT_EQ(spec.parallel.schedule, PipelineSchedule::kOneFOneB);
  EXPECT_EQ(spec.compute.device.name, "h100");
  EXPECT_NO_THROW(validate_layout(spec, 64));
}

TEST(ParseWorkload, PresetWithOverridesAndInlineModels) {
  const auto spec = parse("model: {preset: llama3-70b, layers: 4}\nparallelism: {tp: 8}\n" +
                          kTraining + kCompute);
  EXPECT_EQ(spec.model.layers, 4);
  EXPECT_EQ(spec.model.hidden, 8192);
  const auto inline_spec =
      parse("model: {layers: 2, hidden: 1024, heads: 16, vocab: 32000}\nparallelism: {}\n" +
            kTraining + kCompute);
  EXPECT_EQ(inline_spec.model.head_dim, 64);
  EXPECT_EQ(inline_spec.model.kv_heads, 16);
  EXPECT_EQ(inline_spec.model.ffn, 4096);  // 4h default
}

TEST(ParseWorkload, FsdpIsZeroThreeAndVppImpliesInterleaved) {
  const auto spec = parse("model: llama3-8b\nparallelism: {pp: 4, vpp: 2, dp: 2, zero: fsdp}\n" +
                          std::string("training: {seq_len: 4096, global_batch: 16}\n") + kCompute);
  EXPECT_EQ(spec.parallel.zero, 3);
  EXPECT_EQ(spec.parallel.schedule, PipelineSchedule::kInterleaved);
}

TEST(ParseWorkload, InlineDeviceNumbersWithUnits) {
  const auto spec =
      parse("model: llama3-8b\nparallelism: {}\n" + kTraining +
            "compute: {peak: {bf16: 500 TFLOP/s}, hbm_bandwidth: 2TB/s, hbm_capacity: 96GB, "
            "efficiency: {gemm: 0.5}, launch_overhead: 2us}\n");
  EXPECT_DOUBLE_EQ(spec.compute.device.peak_bf16_flops_per_s, 500e12);
  EXPECT_DOUBLE_EQ(spec.compute.device.hbm_bandwidth.value(), 2e12);
  EXPECT_EQ(spec.compute.device.hbm_capacity, Bytes(96'000'000'000));
  EXPECT_DOUBLE_EQ(spec.compute.efficiency_of(ComputeKind::kGemm), 0.5);
  EXPECT_EQ(spec.compute.launch_overhead, Time::us(2));
}

TEST(ParseWorkload, KernelTimesTableOverridesTheRoofline) {
  const auto dir = std::filesystem::temp_directory_path() / "stepsim_workloads_kernel_table";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "kernels.yaml") << "kernels:\n  - {op: qkv, phase: fwd, time: 120us}\n";
  std::ofstream(dir / "bad.yaml") << "kernels:\n  - {op: qkvv, phase: fwd, time: 1us}\n";
  const std::string head = "model: llama3-8b\nparallelism: {}\n" + kTraining;
  const auto doc =
      config::Document::parse(head + "compute: {device: h100, kernel_times: kernels.yaml}\n",
                              (dir / "scenario.yaml").string(), dir);
  const auto spec = parse_workload(doc.root());
  EXPECT_EQ(spec.compute.duration(OpName::kQkv, Phase::kForward, ComputeKind::kGemm, 1e15, 0),
            Time::us(120));
  const auto bad =
      config::Document::parse(head + "compute: {device: h100, kernel_times: bad.yaml}\n",
                              (dir / "scenario.yaml").string(), dir);
  try {
    parse_workload(bad.root());
    FAIL() << "unknown operation accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:2"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

struct BadLayout {
  std::string yaml;
  std::string expected;  // a part of the message that states the reason
};

TEST(ParseWorkload, ImpossibleLayoutsAreRejectedWithTheReason) {
  const BadLayout cases[] = {
      {"model: llama3-8b\nparallelism: {tp: 3}\n" + kTraining + kCompute,
       "parallelism.tp: tp 3 must divide the 32 attention heads"},
      {"model: llama3-8b\nparallelism: {tp: 16}\n" + kTraining + kCompute,
       "tp 16 must divide the 8 key/value heads"},
      {"model: llama3-8b\nparallelism: {ep: 2}\n" + kTraining + kCompute,
       "ep 2 needs a mixture-of-experts model"},
      {"model: mixtral-8x7b\nparallelism: {ep: 3, dp: 3}\ntraining: {seq_len: 4096, "
       "global_batch: 3}\n" +
           kCompute,
       "ep 3 must divide the 8 experts"},
      {"model: mixtral-8x7b\nparallelism: {ep: 4, dp: 2}\n" + kTraining + kCompute,
       "ep 4 must divide tp x cp x dp = 2"},
      {"model: mixtral-8x7b\nparallelism: {tp: 2}\n" + kTraining + kCompute, "needs sp: true"},
      {"model: llama3-8b\nparallelism: {pp: 64}\n" + kTraining + kCompute,
       "64 pipeline stages for 32 layers: a stage would have no layer"},
      {"model: llama3-8b\nparallelism: {pp: 8, vpp: 8}\n" + kTraining + kCompute,
       "parallelism.vpp: pp x vpp = 64"},
      {"model: llama3-8b\nparallelism: {dp: 3}\n" + kTraining + kCompute,
       "global batch 64 is not divisible by micro_batch x dp = 1 x 3 = 3"},
      {"model: llama3-8b\nparallelism: {pp: 4, vpp: 2, dp: 2}\ntraining: {seq_len: 4096, "
       "global_batch: 12}\n" +
           kCompute,
       "micro-batches (6 = global_batch / (micro_batch x dp)) divisible by pp 4"},
      {"model: llama3-8b\nparallelism: {cp: 3}\n" + kTraining + kCompute,
       "seq_len 4096 must be divisible by 6"},
      {"model: llama3-8b\nparallelism: {tp: 8, cp: 2, cp_mode: ulysses}\n" + kTraining + kCompute,
       "Ulysses cp 2 must divide the heads per tensor-parallel rank (4 query, 1 key/value"},
      {"model: llama3-8b\nparallelism: {pp: 2, vpp: 2, schedule: 1f1b}\n" + kTraining + kCompute,
       "vpp 2 needs schedule: interleaved"},
      {"model: llama3-8b\nparallelism: {pp: 3, schedule: dualpipe}\n" + kTraining + kCompute,
       "DualPipe needs an even pp >= 2"},
      {"model: llama3-8b\nparallelism: {pp: 4, schedule: dualpipe}\ntraining: {seq_len: 4096, "
       "global_batch: 6}\n" +
           kCompute,
       "DualPipe needs an even number of micro-batches, at least 2 x pp = 8"},
      {"model: {preset: mixtral-8x7b, moe: {experts: 8, top_k: 2, expert_ffn: 100, dispatch: "
       "nvlink}}\nparallelism: {}\n" +
           kTraining + kCompute,
       "expected one of direct, relayed"},
      {"model: llama3-8b\nparallelism: {order: tp-cp-dp-pp}\n" + kTraining + kCompute,
       "the five dimensions tp, cp, ep, dp, pp"},
      {"model: llama3-8b\nparallelism: {order: tp-cp-ep-dp-dp}\n" + kTraining + kCompute,
       "dimension 'dp' appears twice"},
      {"model: mixtral-8x7b\nparallelism: {tp: 2, sp: true, ep: 2, order: tp-pp-cp-ep-dp, pp: "
       "2}\n" +
           kTraining + kCompute,
       "the order must give pp the same position for dense and expert groups"},
      {"model: llama3-8b\nparallelism: {tp: 2}\ntraining: {seq_len: 4096, global_batch: 8, "
       "precision: fp8}\ncompute: {device: a100}\n",
       "device 'a100' has no fp8 peak FLOP rate"},
      {"model: llama3-9b\nparallelism: {}\n" + kTraining + kCompute, "model: expected one of"},
      {"model: llama3-8b\nparallelism: {tpp: 2}\n" + kTraining + kCompute,
       "unknown key 'tpp' (did you mean 'tp'?)"},
      {"model: llama3-8b\nparallelism: {tp: 0}\n" + kTraining + kCompute, "parallelism.tp"},
      {"model: {preset: llama3-8b, kv_heads: 5}\nparallelism: {}\n" + kTraining + kCompute,
       "kv_heads 5 must divide the 32 attention heads"},
      {"model: {preset: mixtral-8x7b, moe: {experts: 8, top_k: 9, expert_ffn: 100}}\n"
       "parallelism: {}\n" +
           kTraining + kCompute,
       "top_k 9 is more than the 8 experts"},
      // Fewer experts than the preset's top_k: the message names the key the user gave.
      {"model: {preset: mixtral-8x7b, moe: {experts: 1}}\nparallelism: {}\n" + kTraining + kCompute,
       "model.moe.experts: top_k 2 (from the preset) is more than the 1 experts"},
      {"model: llama3-8b\nparallelism: {}\n" + kTraining + "compute: {peak: {bf16: 5 TB/s}}\n",
       "expected a FLOP rate with a unit"},
      {"model: {preset: mixtral-8x7b, moe: {expert_load: [1, 2, 3]}}\nparallelism: {}\n" +
           kTraining + kCompute,
       "model.moe.expert_load: 3 loads for 8 routed experts: give one per expert"},
      {"model: {preset: mixtral-8x7b, moe: {expert_load: [1, 2, 3, 4, 5, 6, 7, -8]}}\n"
       "parallelism: {}\n" +
           kTraining + kCompute,
       "model.moe.expert_load[7]"},
      {"model: {preset: mixtral-8x7b, moe: {expert_load: [0, 0, 0, 0, 0, 0, 0, 0]}}\n"
       "parallelism: {}\n" +
           kTraining + kCompute,
       "every expert's load is zero"},
      {"model: {preset: mixtral-8x7b, moe: {expert_load: 5}}\nparallelism: {}\n" + kTraining +
           kCompute,
       "a list of non-negative numbers, one per routed expert"},
      {"model: {preset: mixtral-8x7b, moe: {expert_load: [1, 1, 1, 1, 1, 1, 1, 2]}}\n"
       "parallelism: {}\ntraining: {seq_len: 4096, global_batch: 64, routing_skew: 1}\n" +
           kCompute,
       "training.routing_skew: model.moe.expert_load already sets each expert's load"},
      {"model: llama3-8b\nparallelism: {pp: 2, dualpipe_overlap: false}\n" + kTraining + kCompute,
       "parallelism.dualpipe_overlap: dualpipe_overlap needs schedule: dualpipe"},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.yaml);
    EXPECT_NE(message.find(c.expected), std::string::npos) << "input:\n"
                                                           << c.yaml << "message: " << message;
    if (!message.empty()) {
      EXPECT_EQ(message.rfind("scenario.yaml:", 0), 0u) << "located: " << message;
    }
  }
}

TEST(ValidateLayout, WorldSizeMustEqualTheProduct) {
  const auto spec =
      parse("model: llama3-8b\nparallelism: {tp: 8, pp: 2, dp: 4}\n" + kTraining + kCompute);
  try {
    validate_layout(spec, 48);
    FAIL() << "48 accepted for 64 ranks";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "tp x cp x dp x pp = 8 x 1 x 4 x 2 = 64 ranks, but the topology has 48"),
              std::string::npos)
        << e.what();
  }
}

TEST(LayersPerVirtualStage, SpreadsTheRemainderOverTheFirstStages) {
  // Llama 3 405B on 16 stages: 126 = 14 x 8 + 2 x 7.
  const auto v = layers_per_virtual_stage(126, 16);
  EXPECT_EQ(v.front(), 8);
  EXPECT_EQ(v[13], 8);
  EXPECT_EQ(v[14], 7);
  EXPECT_EQ(v.back(), 7);
}

}  // namespace
}  // namespace stepsim::workloads
