#!/usr/bin/env bash
# DeepSeek-V3 on a Huawei CloudMatrix384 against an H800 cluster of 384 GPUs, each at its best
# layout: `stepsim compare --search` searches the layout of each (docs/search.md) and
# compares the best of each. The scenarios are examples/deepseek-v3-cloudmatrix384.yaml and
# examples/deepseek-v3-h800.yaml (their headers describe the machines), with 768 sequences of 4K
# tokens per step. Extra arguments go to `stepsim compare` (--csv FILE, --json FILE, -j N).
#   examples/deepseek-v3-compare-search.sh
#
# The space: what a user would try for DeepSeek-V3: tp 1, 2, 4 (with sequence parallelism), pp 1, 2,
# 3, 6 (384 = 2^7 x 3; dp is what is left), ep 16, 32, 64, ZeRO 0 or 1, micro-batch 1 or 2, every
# recomputation; 432 layouts per machine.
#
# A slice, checked for memory as the whole model: one layout of the whole 61-layer model takes 13
# to 30 s of CPU on the H800 cluster and minutes on the CloudMatrix384, where every transfer of its
# single fabric joins one max-min problem (docs/search.md), so the search simulates 6 layers
# (the first dense, five MoE: pp 6 keeps a layer per stage, every pp of the space splits them
# evenly), while the memory rule checks each layout as the whole model (--memory-with: 61 layers,
# the first 3 dense), so the memory limits that decide are the real ones. Step times are the
# slice's. The slice has the whole model's kinds of work in each stage (attention, AllToAll
# dispatch and combine, the TP collectives, the gradient reduction), each in proportion to layers,
# except that the first dense layer and the last stage's logits and loss weigh about 10 times more
# against a stage's layers than in the whole model (6 layers against 61), which penalizes pipelines
# (an unbalanced last stage); whole-model runs check the ranking it gives (docs/search.md).
#
# What it found (docs/search.md, "DeepSeek-V3 on CloudMatrix384 against an H800 cluster"):
#   CloudMatrix384  tp4 sp pp1 dp96 ep64 zero1 mb1 selective   669.8 ms (slice)  MFU 53.1%
#   H800 cluster    tp4 sp pp2 dp48 ep64 zero1 mb1 selective     1.291 s (slice) MFU 20.9%
# Why the CloudMatrix384 layout wins there: the memory limit. With 128 GB per 910C, the whole
# model fits on every NPU without a pipeline (102.83 GiB per rank: 4-way TP with sequence
# parallelism divides the activations, 64-way EP the experts, ZeRO-1 the optimizer states), so there
# is no bubble; TP 4 is the least TP that fits without a pipeline and with selective recomputation
# (tp2 pp1 needs full recomputation, 97.17 GiB; tp1 pp1 does not fit even so, 126.67 GiB). The
# fabric then hides the communication: TP and the 64-way AllToAlls cross the single Unified-Bus
# domain at 392 GB/s per NPU (exposed on rank 0: sp 33.5 ms, ep 30.0 ms, dp 2.4 ms); the lower
# bound, which charges communication at that rate, is within 9% (610.4 ms), so the bound stopped
# the search after one simulation.
# Why the H800 layout wins there: the 80 GB limit rules out the CloudMatrix384 layout (102.83 GiB),
# so the fewest stages that fit with selective recomputation is pp 2 (70.78 GiB; tp1 needs full
# recomputation and pp 3, 59.17 GiB: 1.890 s, 19th); then the exposed expert-parallel time decides:
# the 64-way AllToAlls cross InfiniBand at 50 GB/s per GPU (exposed on rank 0: ep 261.8 ms, sp
# 85.9 ms over NVLink, pp 10.5 ms, dp 10.8 ms; pipeline bubble 378.1 ms). The runner-up, tp4 pp3
# dp32 ep32 (1.360 s), exposes less ep (164.0 ms, with 32-way AllToAlls) but adds a stage.
# The whole model on the H800 cluster (`stepsim run examples/deepseek-v3-h800.yaml -o
# model.layers=61 -o model.moe.dense_layers=3 -o training.global_batch=768` and the layout as -o):
# the best, 8.636 s per step; the runner-up, 8.650 s: the slice's order, nearly tied. On the
# CloudMatrix384, the best: 5.994 s (682.5 s of CPU), 1.44 times as fast (docs/search.md).
#
# Time: this script took 600 s of wall time and 210.6 s of CPU (-j 2, 834 MiB) on the shared
# 2-core sandbox under a load average of about 10; about its CPU time on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${STEPSIM:-build/stepsim}" compare \
  examples/deepseek-v3-cloudmatrix384.yaml examples/deepseek-v3-h800.yaml --search \
  -o model.layers=6 -o model.moe.dense_layers=1 -o training.global_batch=768 \
  --memory-with model.layers=61 --memory-with model.moe.dense_layers=3 \
  --space tp=1,2,4 --space pp=1,2,3,6 --space vpp=1 --space ep=16,32,64 --space zero=0,1 \
  --space micro_batch=1,2 --space recompute=none,selective,full \
  "$@"
