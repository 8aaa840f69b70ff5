#!/usr/bin/env bash
# Set up on first use (virtual environment, Python packages, Debian's chromium for browser tests), then run
# the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "note: could not install chromium; browser tests will be skipped"
fi
exec .venv/bin/python -m pytest -q "$@"
