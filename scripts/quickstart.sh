#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the quickstart example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "quickstart: building stepsim (a few minutes the first time)" >&2
scripts/build.sh build >/dev/null
# The Python module (build/python/stepsim, built when pybind11 is found): a .pth file in Debian's
# python3 site directory points at it, so that `python3 -c "import stepsim"` works from anywhere
# and always loads this build.
if [ -d build/python/stepsim ] && [ "$(id -u)" = 0 ] && [ -x /usr/bin/python3 ]; then
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  mkdir -p "$site"
  echo "$PWD/build/python" >"$site/stepsim.pth"
  echo "quickstart: python3 imports stepsim from $PWD/build/python ($site/stepsim.pth)" >&2
fi
build/stepsim run examples/quickstart.yaml
echo
echo "Next: build/stepsim --help, docs/commands.md, and the other examples in examples/."
