#!/usr/bin/env bash
# Every test of the project: the Rust workspace, then the Python package (built from
# python/ into a fresh virtual environment with jax and pytest from PyPI).
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
bash python/scripts/test.sh
