#!/usr/bin/env bash
# Every test of the project: the Rust workspace, then the Python package (built from
# python/ into a fresh virtual environment with jax and pytest from PyPI).
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rm -f target/postgres-skipped.txt
cargo test --workspace --locked
# Tests that needed PostgreSQL and could not start it (outside CI they skip; in CI they fail).
if [ -s target/postgres-skipped.txt ]; then
  echo "skipped: $(wc -l < target/postgres-skipped.txt) PostgreSQL tests (run crates/server/ci-postgres.sh):"
  cat target/postgres-skipped.txt
fi
bash python/scripts/test.sh
