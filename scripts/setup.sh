#!/usr/bin/env bash
# Create (once) the project's virtual environment and install fabric into it, for the dashboard or for the tests:
#
#   bash scripts/setup.sh dashboard   # fabric and its base dependencies: pip install -e .      (the default)
#   bash scripts/setup.sh test        # also the test tools and ns-3:     pip install -e ".[packet,test]"
#
# pip runs only when something changed: after an install, a stamp file in the environment (.fabric-setup) records
# the SHA-256 of pyproject.toml, the project's path and the extras installed. When the stamp matches and its
# extras cover what is asked (the test set-up covers the dashboard's), pip is skipped entirely.
#
# Environment: FABRIC_VENV   where the environment lives (default .venv in the project; a relative path is taken
#                            from the project folder)
#              PYTHON        the Python 3.11+ that creates it (default python3)
#              FABRIC_SETUP_DRY_RUN=1   print what would be done and change nothing
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
cd "$ROOT"

MODE=${1:-dashboard}
case "$MODE" in
  dashboard) EXTRAS="" ;;
  test) EXTRAS="packet,test" ;;
  *) echo "usage: bash scripts/setup.sh [dashboard|test]" >&2; exit 2 ;;
esac
VENV=${FABRIC_VENV:-.venv}
PY=${PYTHON:-python3}
DRY=${FABRIC_SETUP_DRY_RUN:-0}
STAMP="$VENV/.fabric-setup"

say() { echo "setup ($MODE): $*"; }

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    "$PY" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"
  fi
}

# value of KEY in the stamp file (empty when missing)
stamp_get() { sed -n "s/^$1=//p" "$STAMP" 2>/dev/null | head -n 1; }

# true when every extra in the comma list $1 is in the comma list $2
extras_covered() {
  local want e
  [ -z "$1" ] && return 0
  IFS=, read -r -a want <<< "$1"
  for e in "${want[@]}"; do
    [ -z "$e" ] && continue
    case ",$2," in *",$e,"*) ;; *) return 1 ;; esac
  done
  return 0
}

HASH=$(sha256_of pyproject.toml)

# 1. the environment itself: create it when there is no working interpreter in it
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  NEW_VENV=0
else
  NEW_VENV=1
  if [ "$DRY" = "1" ]; then
    say "would create $VENV with $PY -m venv"
  else
    say "creating $VENV"
    "$PY" -m venv --clear "$VENV"
  fi
fi

# 2. the packages: skip pip when the stamp says this project, this pyproject.toml and these extras are installed
REASON=""
if [ "$NEW_VENV" = "1" ] || [ ! -f "$STAMP" ]; then
  REASON="no stamp in $VENV"
elif [ "$(stamp_get pyproject_sha256)" != "$HASH" ]; then
  REASON="pyproject.toml changed since the last install"
elif [ "$(stamp_get project)" != "$ROOT" ]; then
  REASON="the environment was set up for $(stamp_get project)"
elif ! extras_covered "$EXTRAS" "$(stamp_get extras)"; then
  REASON="extras [$EXTRAS] not installed yet (have [$(stamp_get extras)])"
fi

if [ -z "$REASON" ]; then
  [ "$DRY" = "1" ] && say "up to date ($STAMP matches): pip skipped"
  exit 0
fi

TARGET="."
[ -n "$EXTRAS" ] && TARGET=".[$EXTRAS]"
if [ "$DRY" = "1" ]; then
  say "would run: $VENV/bin/python -m pip install --quiet --upgrade pip"
  say "would run: $VENV/bin/python -m pip install --quiet -e $TARGET  ($REASON)"
  exit 0
fi
say "installing fabric with pip install -e $TARGET into $VENV ($REASON)"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e "$TARGET"
printf 'pyproject_sha256=%s\nproject=%s\nextras=%s\n' "$HASH" "$ROOT" "$EXTRAS" > "$STAMP.tmp"
mv "$STAMP.tmp" "$STAMP"
