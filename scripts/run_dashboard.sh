#!/usr/bin/env bash
# Set up on first use, then start the dashboard (opens on a built-in sample workload).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/streamlit run app.py --browser.gatherUsageStats false "$@"
