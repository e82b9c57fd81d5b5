#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the quickstart example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "quickstart: building stepsim (a few minutes the first time)" >&2
scripts/build.sh build >/dev/null
build/stepsim run examples/quickstart.yaml
echo
echo "Next: build/stepsim --help, docs/commands.md, and the other examples in examples/."
