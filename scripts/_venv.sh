# Sourced by scripts/demo and scripts/test: makes .venv (once) and installs dagrad with the given extras.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
extras=${1:-}
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}"
