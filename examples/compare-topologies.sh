#!/usr/bin/env bash
# The topology comparison of examples/compare-topologies.yaml: one job, five networks, side by side.
# Extra arguments go to `stepsim compare` (for example --csv compare.csv or --json compare.json).
# tests/golden/cases.txt runs the same list of topologies (keep the two equal).
#   examples/compare-topologies.sh [--csv FILE] [--json FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${STEPSIM:-build/stepsim}" compare examples/compare-topologies.yaml \
  --topology dgx-h100-superpod:nodes=4 \
  --topology cluster:nodes=4,nvlink_bandwidth=200GB/s \
  --topology cluster:nodes=4,nic_speed=200Gbps \
  --topology cluster:nodes=4,nic_speed=100Gbps \
  --topology cluster:nodes=4,rail_optimized=false,radix=16,oversubscription=3 \
  "$@"
