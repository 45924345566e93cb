#!/usr/bin/env bash
# Sets everything up (if needed) and runs the whole test suite (all but the long "soak"
# runs). Extra args go to pytest instead, e.g. `bash scripts/test.sh -m "not ui"` for the
# engine suite alone, or `bash scripts/test.sh -m soak` for the soak runs.
set -euo pipefail
cd "$(dirname "$0")/.."
MODRAG_SKIP_QWEN=1 bash scripts/setup.sh  # the suite runs on SmolLM2
export QT_QPA_PLATFORM=offscreen HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check .
if [ $# -eq 0 ]; then
    set -- -m "not soak"   # soak runs on demand: bash scripts/test.sh -m soak
fi
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
