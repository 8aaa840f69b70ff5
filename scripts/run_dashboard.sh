#!/usr/bin/env bash
# Set up on first use (only what the dashboard needs; pip is skipped when nothing changed), then start the
# dashboard on a built-in sample workload (scripts/serve.py: `streamlit run app.py` with the libraries imported
# first). Extra arguments go to `streamlit run` (e.g. --server.port 8502).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dashboard
VENV=${FABRIC_VENV:-.venv}
exec "$VENV/bin/python" scripts/serve.py --browser.gatherUsageStats false "$@"
