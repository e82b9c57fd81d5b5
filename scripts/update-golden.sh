#!/usr/bin/env bash
# Regenerates the golden summaries (tests/golden/<name>.txt) from the cases in
# tests/golden/cases.txt, with the program in build/ (or $STEPSIM). Run it after a change that moves
# the figures on purpose (a recalibrated compute efficiency, a new link preset), review the diff
# (git diff tests/golden), and commit it with the change. The `golden` ctest label checks them.
#   scripts/update-golden.sh               # every case
#   scripts/update-golden.sh quickstart    # only the cases named
set -euo pipefail
cd "$(dirname "$0")/.."
program=${STEPSIM:-build/stepsim}
if [ ! -x "$program" ]; then
  echo "update-golden: $program not found; build it first (scripts/build.sh build)" >&2
  exit 2
fi
selected=" $* "
updated=0
while IFS= read -r line; do
  [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
  # The case's fields, split as a shell would (tests/golden/CMakeLists.txt splits them the same way).
  eval "fields=($line)"
  name=${fields[0]}
  args=("${fields[@]:2}")
  [ "$selected" = "  " ] || [[ "$selected" == *" $name "* ]] || continue
  echo "== $name: stepsim ${args[*]}" >&2
  start=$SECONDS
  "$program" "${args[@]}" >"tests/golden/$name.txt"
  echo "   $((SECONDS - start)) s" >&2
  updated=$((updated + 1))
done <tests/golden/cases.txt
if [ "$updated" -eq 0 ]; then
  echo "update-golden: no case named$selected in tests/golden/cases.txt" >&2
  exit 2
fi
echo "updated $updated golden file(s); review with: git diff tests/golden" >&2
