// Generation time and memory of whole-step workloads at scale (docs/performance.md, "Workloads").
#include <benchmark/benchmark.h>

#include <string>

#include "sim/common/config.hpp"
#include "workloads/workload.hpp"

namespace {

using stepsim::workloads::Workload;

stepsim::workloads::WorkloadSpec spec_of(const std::string& yaml) {
  const auto doc = stepsim::config::Document::parse(yaml, "bench.yaml");
  return stepsim::workloads::parse_workload(doc.root());
}

void run(benchmark::State& state, const std::string& yaml) {
  const auto spec = spec_of(yaml);
  std::size_t ops = 0;
  std::size_t bytes = 0;
  for (auto _ : state) {
    const Workload w(spec);
    ops = 0;
    for (int s = 0; s < spec.parallel.pp; ++s)
      ops += w.stage_program(s).ops.size();
    bytes = w.memory_bytes();
    benchmark::DoNotOptimize(ops);
  }
  state.counters["stage_ops"] = static_cast<double>(ops);
  state.counters["program_MiB"] = static_cast<double>(bytes) / (1 << 20);
}

// GPT-3 175B on 1,024 GPUs: TP 8 (SP), PP 8 interleaved x2, DP 16, ZeRO-1, 1,536 sequences.
void BM_Gpt3On1024(benchmark::State& state) {
  run(state,
      "model: gpt3-175b\nparallelism: {tp: 8, sp: true, pp: 8, vpp: 2, dp: 16, zero: 1}\n"
      "training: {seq_len: 2048, micro_batch: 1, global_batch: 1536}\ncompute: {device: h100}\n");
}
BENCHMARK(BM_Gpt3On1024)->Unit(benchmark::kMillisecond);

// Llama 3 405B on 16,384 GPUs (Llama 3 paper: TP 8, CP 1, PP 16, DP 128; 16M tokens of 8192).
void BM_Llama405bOn16384(benchmark::State& state) {
  run(state,
      "model: llama3-405b\nparallelism: {tp: 8, sp: true, pp: 16, dp: 128, zero: 1}\n"
      "training: {seq_len: 8192, micro_batch: 1, global_batch: 2048}\ncompute: {device: h100}\n");
}
BENCHMARK(BM_Llama405bOn16384)->Unit(benchmark::kMillisecond);

// DeepSeek-V3 on 2,048 GPUs (DeepSeek-V3 report: PP 16, EP 64, ZeRO-1 DP).
void BM_DeepSeekV3On2048(benchmark::State& state) {
  run(state,
      "model: deepseek-v3\nparallelism: {pp: 16, dp: 128, ep: 64, zero: 1}\n"
      "training: {seq_len: 4096, micro_batch: 1, global_batch: 3840}\ncompute: {device: h100}\n");
}
BENCHMARK(BM_DeepSeekV3On2048)->Unit(benchmark::kMillisecond);

}  // namespace
