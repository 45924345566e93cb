#!/usr/bin/env bash
# Sets everything up (if needed) and runs the whole test suite. Extra args go to pytest,
# e.g. `bash scripts/test.sh -m "not ui"` for the engine suite alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export QT_QPA_PLATFORM=offscreen HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check .
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
