#!/usr/bin/env python3
"""The training-step tables of validation/cases.yaml under both compute models.

For every scenario case of the named tables (default: the Megatron-LM H100 table and the two A100
tables), runs `stepsim run SCENARIO` with `-o compute.model=roofline` and `-o compute.model=kernels`
and prints one markdown table: the published TFLOP/s per GPU, each model's figure and its error
(stepsim - published) / published, then each table's mean |error| and largest |error|.

    python3 scripts/kernel_validation.py [--stepsim build/stepsim] [TABLE ...]
"""
import argparse
import os
import re
import subprocess

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VALIDATION = os.path.join(ROOT, "validation")
DEFAULT_TABLES = ["megatron", "megatron-a100-sc21", "megatron-a100-sp"]
MODELS = ["roofline", "kernels"]


def published(data, ref):
    name, path = ref.split(":", 1)
    node = data[name]
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return float(node)


def tflops(stepsim, scenario, overrides):
    args = [stepsim, "-q", "run", os.path.join(VALIDATION, scenario)]
    for o in overrides:
        args += ["-o", o]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"Model FLOP/s\s+([0-9.]+) TFLOP/s", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stepsim", default=os.path.join(ROOT, "build", "stepsim"))
    ap.add_argument("tables", nargs="*", default=DEFAULT_TABLES)
    a = ap.parse_args()
    cases = yaml.safe_load(open(os.path.join(VALIDATION, "cases.yaml")))
    data = {k: yaml.safe_load(open(os.path.join(VALIDATION, v))) for k, v in cases["data"].items()}
    for table in cases["tables"]:
        if table["name"] not in a.tables:
            continue
        print(f"\n### {table['title']}\n")
        print("| figure | published | roofline | error | kernels | error |")
        print("|---|---|---|---|---|---|")
        errors = {m: [] for m in MODELS}
        for case in table["cases"]:
            if "scenario" not in case:
                continue
            p = published(data, case["published"])
            cells = []
            for m in MODELS:
                v = tflops(a.stepsim, case["scenario"], case.get("overrides", []) +
                           [f"compute.model={m}"])
                e = (v - p) / p
                errors[m].append(abs(e))
                cells += [f"{v:.1f}", f"{100 * e:+.1f}%"]
            print(f"| {case['figure']} | {p:.1f} | " + " | ".join(cells) + " |")
        summary = [f"mean {100 * sum(e) / len(e):.1f}%, largest {100 * max(e):.1f}%"
                   for e in errors.values()]
        print(f"| mean / largest abs error | | {summary[0]} | | {summary[1]} | |")


if __name__ == "__main__":
    main()
