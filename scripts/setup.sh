#!/usr/bin/env bash
# Create (once) the project's virtual environment in .venv and install fabric with its test and packet-level
# (ns-3) extras into it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test,packet]"
