#!/usr/bin/env bash
# Every test of the project, every suite even when one fails, then one summary line per suite:
#   bash scripts/test.sh
# 1. the Python test environment (a fresh venv with jax[cpu], pytest and the MCP SDK from PyPI);
# 2. the Rust workspace: `cargo test --workspace --locked --no-fail-fast` (the MCP client test
#    talks to oomdoc through the official SDK in that venv);
# 3. the Python package built into the venv, and pytest on python/tests;
# 4. the summary: passed, failed and skipped per suite, and the total, from the runners' own
#    result lines (logs under target/test-logs/). Exit 0 only when every suite ran and passed.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
logs="$root/target/test-logs"
mkdir -p "$logs"
rm -f "$logs"/*.log "$logs"/skips.txt
# Tests that cannot run here append a line (crates/testkit); in CI a missing tool fails instead.
export OOMDOC_TEST_SKIPS="$logs/skips.txt"
venv="${OOMDOC_PY_VENV:-$root/target/python-venv}"
export OOMDOC_PY_VENV="$venv"

echo "== python environment ($venv)"
bash python/scripts/venv.sh 2>&1 | tee "$logs/venv.log"
venv_rc=${PIPESTATUS[0]}
if [ "$venv_rc" -eq 0 ]; then
    export OOMDOC_MCP_PYTHON="$venv/bin/python"
fi

echo "== rust: cargo test --workspace --locked --no-fail-fast"
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$logs/rust.log"
rust_rc=${PIPESTATUS[0]}

echo "== python: the package and its tests"
if [ "$venv_rc" -eq 0 ]; then
    OOMDOC_PY_REUSE_VENV=1 bash python/scripts/test.sh 2>&1 | tee "$logs/python.log"
    py_rc=${PIPESTATUS[0]}
else
    echo "the python environment could not be made (see above): python tests not run" | tee "$logs/python.log"
    py_rc=1
fi

bash scripts/test-summary.sh "$logs" "$rust_rc" "$py_rc"
