#!/usr/bin/env bash
# Coverage-guided fuzzing campaign with libFuzzer (docs/reliability.md, "Fuzzing"): builds the
# harnesses with clang, ASan and UBSan into build-fuzz/, runs each for a time or a number of
# executions over a copy of its committed corpus, and merges what was new back into
# tests/fuzz/corpus/HARNESS (minimized: only inputs that add coverage). Crashes are written to
# build-fuzz/crashes/HARNESS/ and fail the campaign.
#
#   scripts/fuzz.sh [-t SECONDS | -n RUNS] [-j JOBS] [HARNESS...]   (default: 60 s each, all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
runs=""
jobs=1
while getopts "t:n:j:" opt; do
  case $opt in
    t) seconds=$OPTARG ;;
    n) runs=$OPTARG ;;
    j) jobs=$OPTARG ;;
    *) sed -n '2,9p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(units scenario topology csv cli overrides kernel_table)

scripts/setup.sh clang  # libFuzzer comes with Debian's clang
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTEPSIM_FUZZ=ON \
  -DSTEPSIM_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target $(printf 'fuzz_%s ' "${harnesses[@]}")

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
for h in "${harnesses[@]}"; do
  work=build-fuzz/campaign/$h
  crashes=build-fuzz/crashes/$h
  rm -rf "$work" && mkdir -p "$work" "$crashes"
  cp tests/fuzz/corpus/"$h"/* "$work"/
  limit=(-max_total_time="$seconds")
  # A unit slower than this is reported as a timeout. fuzz_cli runs whole commands: a valid
  # collective sweep over 64 GPUs takes up to 9 s under the sanitizers on an idle core, so it
  # gets more room than the loaders (docs/reliability.md).
  unit_timeout=20
  [ "$h" = cli ] && unit_timeout=60
  [ -n "$runs" ] && limit=(-runs="$runs")
  echo "== fuzz_$h: ${limit[*]} =="
  # libFuzzer's jobs write fuzz-JOB.log in the current directory: each harness gets its own, so
  # that two campaigns run side by side keep their logs apart (the whole log stays there). One job
  # runs in-process. Paths are absolute: fuzz_cli changes directory while a command runs.
  logs=$PWD/build-fuzz/campaign/$h-logs
  rm -rf "$logs" && mkdir -p "$logs"
  parallel=()
  [ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs")
  if ! (cd "$logs" && "$OLDPWD"/build-fuzz/tests/fuzz/fuzz_"$h" "$OLDPWD/$work" \
      -dict="$OLDPWD"/tests/fuzz/stepsim.dict "${limit[@]}" -timeout="$unit_timeout" \
      -rss_limit_mb=4096 -max_len=8192 "${parallel[@]}" -artifact_prefix="$OLDPWD/$crashes/" \
      -print_final_stats=1 >"$logs/campaign.log" 2>&1); then
    status=1
  fi
  tail -25 "$logs/campaign.log"
  # Keep only what adds coverage to the committed corpus.
  # (Its own slow or crashing inputs go beside the campaign's, not into the working directory.)
  build-fuzz/tests/fuzz/fuzz_"$h" -merge=1 tests/fuzz/corpus/"$h" "$work" -dict=tests/fuzz/stepsim.dict \
    -timeout="$unit_timeout" -rss_limit_mb=4096 -artifact_prefix="$PWD/$crashes/" 2>&1 \
    | grep -E "MERGE-OUTER: [0-9]+ new files" || true
done
if ls build-fuzz/crashes/*/* >/dev/null 2>&1; then
  echo "fuzz: crashes found:" >&2
  ls build-fuzz/crashes/*/* >&2
  status=1
fi
exit $status
