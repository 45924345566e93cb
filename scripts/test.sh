#!/usr/bin/env bash
# Sets everything up (if needed) and runs the whole test suite (all but the long "soak"
# runs). Extra args go to pytest instead, e.g. `bash scripts/test.sh -m "not ui"` for the
# engine suite alone, or `bash scripts/test.sh -m soak` for the soak runs.
set -euo pipefail
cd "$(dirname "$0")/.."
MODRAG_SKIP_QWEN=1 bash scripts/setup.sh  # the suite runs on SmolLM2
# The OTLP receiver of tests/tracing, Arize Phoenix's local server, in a venv of its own: its
# ~75 dependencies (pinned downgrades among them) stay out of the app's environment.
PHOENIX_VERSION=20.26.1
if [ "$(cat .venv-phoenix/.modrag-phoenix 2>/dev/null)" != "$PHOENIX_VERSION" ]; then
    "${PYTHON:-python3}" -m venv .venv-phoenix
    .venv-phoenix/bin/python -m pip install --quiet --upgrade pip
    .venv-phoenix/bin/python -m pip install --quiet --no-compile "arize-phoenix==$PHOENIX_VERSION"
    echo "$PHOENIX_VERSION" > .venv-phoenix/.modrag-phoenix
fi
export MODRAG_PHOENIX_PYTHON="$PWD/.venv-phoenix/bin/python"
export QT_QPA_PLATFORM=offscreen HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/ruff check .
if [ $# -eq 0 ]; then
    set -- -m "not soak"   # soak runs on demand: bash scripts/test.sh -m soak
fi
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
