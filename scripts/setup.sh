#!/usr/bin/env bash
# Installs everything ppstream needs on Debian 12 (root or sudo): the C++ libraries from
# Debian's packages, a virtual environment in .venv with the Python requirements, and the
# project itself (pip install ., which builds ppstream._core and the executables ppstream and,
# when Open MPI is installed, ppstream-replay, into .venv/bin).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! dpkg -s $(cat scripts/apt-packages.txt) >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $(cat scripts/apt-packages.txt) >/dev/null
fi

. scripts/ccache_env.sh
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements.txt -r requirements-mindspore.txt
.venv/bin/python -m pip install -q --no-build-isolation . 
