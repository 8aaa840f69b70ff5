#!/usr/bin/env bash
# Set up on first use (Python packages with the test and ns-3 extras, pip skipped when nothing changed; Debian's
# chromium for the browser tests when run as root), then run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "note: could not install chromium; browser tests will be skipped"
fi
VENV=${FABRIC_VENV:-.venv}
exec "$VENV/bin/python" -m pytest -q "$@"
