#!/usr/bin/env python3
"""Hold the kernel-level compute model against whole decoder layers measured on one H200.

For every fwd+bwd row of validation/data/kernels/h200/layers.csv (two layers of a GPT or Llama
shape in plain PyTorch, scripts/gpu/kernels.py), writes a one-node scenario of the same layers,
lists its kernels with `stepsim kernels --csv`, adds up the layer kernels (the embedding, the output
layer, the loss and the optimizer are not in the measurement) and prints the model against the
measurement. The measurement's attention is PyTorch's SDPA default backend; the model's is cuDNN's.

    python3 scripts/kernel_layers.py [build/stepsim]
"""
import csv
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPSIM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "stepsim")
LAYERS = os.path.join(ROOT, "validation", "data", "kernels", "h200", "layers.csv")
NOT_LAYERS = {"embedding", "logits", "loss", "optimizer_step"}


def scenario(r):
    gated = r["gated"] == "1"
    b = int(r["batch"])
    return f"""name: layers-{r['model']}
topology: dgx-h100
model: {{layers: {r['layers']}, hidden: {r['h']}, heads: {r['heads']}, kv_heads: {r['kv_heads']},
        head_dim: {r['head_dim']}, ffn: {r['ffn']}, gated_mlp: {str(gated).lower()}, vocab: 1024,
        bias: {str(not gated).lower()}, norm: {'rmsnorm' if gated else 'layernorm'},
        position: {'rotary' if gated else 'learned'}, max_positions: {r['seq']},
        dropout: {0.0 if gated else 0.1}}}
parallelism: {{tp: 1, pp: 1, dp: 8}}
training: {{seq_len: {r['seq']}, micro_batch: {b}, global_batch: {8 * b}, recompute: none}}
compute: {{device: h200, model: kernels}}
"""


def main():
    rows = [r for r in csv.DictReader(open(LAYERS)) if r["pass"] == "fwd+bwd"]
    print("| layers (H200, fwd+bwd) | tokens | measured (ms) | model (ms) | model / measured |")
    print("|---|---|---|---|---|")
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            y, c = os.path.join(tmp, "s.yaml"), os.path.join(tmp, "k.csv")
            open(y, "w").write(scenario(r))
            subprocess.run([STEPSIM, "-q", "kernels", y, "--csv", c], check=True,
                           stdout=subprocess.DEVNULL)
            model_us = sum(float(k["time_us"]) * int(k["count"]) for k in csv.DictReader(open(c))
                           if k["operation"] not in NOT_LAYERS)
            measured_us = float(r["time_s"]) * 1e6
            errors.append(abs(model_us / measured_us - 1))
            tokens = int(r["batch"]) * int(r["seq"])
            print(f"| {r['model']} | {tokens} | {measured_us / 1e3:.2f} | {model_us / 1e3:.2f} | "
                  f"{model_us / measured_us:.3f} |")
    print(f"\nmean |error| {100 * sum(errors) / len(errors):.1f}%, largest {100 * max(errors):.1f}%")


if __name__ == "__main__":
    main()
