#!/usr/bin/env bash
# Sets everything up (if needed) and runs the main job: the basic RAG sample graph on the
# embedded defaults (no Ollama needed), printing the answer and the per-node trace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error
question=${1:-"How often is the lubrication pump LP-07 serviced?"}
exec .venv/bin/modrag run sample_graphs/basic_rag.json --input "question=$question"
