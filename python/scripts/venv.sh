#!/usr/bin/env bash
# The Python test environment: a fresh virtual environment with what the tests need from PyPI.
#   bash python/scripts/venv.sh            # into $OOMDOC_PY_VENV (default: target/python-venv)
# jax[cpu] for the real-JAX tests, pytest, and the official MCP SDK (the Rust suite's MCP client
# test drives `oomdoc mcp` with it). Pinned, so a new release cannot change a test run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$(cd "$here/.." && pwd)"
python="${PYTHON:-python3}"
venv="${OOMDOC_PY_VENV:-$root/target/python-venv}"
rm -rf "$venv"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
"${pip[@]}" install -q "jax[cpu]==0.10.2" "pytest>=8,<10" "mcp==2.3.0"
