#!/bin/sh
# Runs `PROGRAM ARGS...`, keeps its standard output in OUTPUT, and compares it with GOLDEN byte for
# byte. Used by the `golden` ctest label (tests/golden/CMakeLists.txt); regenerate the golden files
# with scripts/update-golden.sh when a change of the model moves the figures on purpose.
#   check-golden.sh GOLDEN OUTPUT PROGRAM ARGS...
set -u
golden=$1
output=$2
shift 2
"$@" >"$output"
code=$?
if [ $code -ne 0 ]; then
  echo "stepsim exited with $code: $*"
  exit 1
fi
if ! diff -u "$golden" "$output"; then
  echo "The summary differs from $golden (above: - golden, + now)."
  echo "If the change is intended, run scripts/update-golden.sh and commit the golden files."
  exit 1
fi
