#!/usr/bin/env bash
# README command 2: install what is missing, build, and run every test, first in an
# AddressSanitizer + UndefinedBehaviorSanitizer build (skip it with --no-sanitize), then in the
# release build. The sanitizer pass leaves out the `validation` label (whole training steps
# against published figures: numbers, not memory; minutes under ASan) and the slow golden cases;
# the release pass runs everything.
# Warnings are errors in both builds (STEPSIM_WERROR; a user's own build leaves it off).
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=1
[ "${1:-}" = "--no-sanitize" ] && sanitize=0
jobs=$(nproc)

scripts/setup.sh
if [ $sanitize -eq 1 ]; then
  echo "== ASan + UBSan build: every test =="
  scripts/build.sh build-asan -DSTEPSIM_SANITIZE=ON -DSTEPSIM_BUILD_BENCHMARKS=OFF -DSTEPSIM_WERROR=ON
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE validation
fi
echo "== Release build: every test =="
scripts/build.sh build -DSTEPSIM_WERROR=ON
ctest --test-dir build --output-on-failure -j "$jobs"
