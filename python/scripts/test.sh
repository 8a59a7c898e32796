#!/usr/bin/env bash
# Build the Python package from source and run its tests, in a fresh virtual environment:
#   bash python/scripts/test.sh
# Steps: python/scripts/venv.sh (a fresh venv with jax (CPU), pytest and the MCP SDK) →
# maturin build (one abi3 wheel, for every Python >= 3.9, as users install it) → pip install
# that wheel → pytest python/tests against it.
# OOMDOC_PY_REUSE_VENV=1 keeps a venv venv.sh already made (scripts/test.sh makes it first).
#
# The extension is built with Cargo's dev profile into the workspace's target/ directory, so
# after `cargo test --workspace` only PyO3 and the extension crate compile (measured in
# python/README.md). OOMDOC_PY_PROFILE=pip builds the optimized wheel a user gets instead.
# OOMDOC_PY_VENV sets the venv directory (default: a fresh one under target/).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$(cd "$here/.." && pwd)"
python="${PYTHON:-python3}"
venv="${OOMDOC_PY_VENV:-$root/target/python-venv}"
profile="${OOMDOC_PY_PROFILE:-dev}"

t0=$(date +%s)
step() { echo "== $1 ($(( $(date +%s) - t0 )) s)"; }

if [ "${OOMDOC_PY_REUSE_VENV:-0}" = 1 ] && [ -x "$venv/bin/python" ]; then
    step "venv $venv (reused)"
else
    step "venv $venv: jax (CPU), pytest, mcp"
    OOMDOC_PY_VENV="$venv" PYTHON="$python" bash "$here/scripts/venv.sh"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)

step "maturin build (one abi3 wheel, profile $profile) and pip install it"
"${pip[@]}" install -q "maturin>=1.5,<2"
wheels="$root/target/wheels"
rm -f "$wheels"/oomdoc-*.whl
# The workspace's target/ directory: after `cargo test --workspace` only PyO3 and the
# extension crate compile.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" "$venv/bin/maturin" build --quiet \
    --manifest-path "$here/Cargo.toml" --profile "$profile" --interpreter "$venv/bin/python" --out "$wheels"
wheel=$(ls "$wheels"/oomdoc-*-abi3-*.whl)
[ "$(echo "$wheel" | wc -l)" = 1 ] || { echo "expected one abi3 wheel in $wheels, got: $wheel" >&2; exit 1; }
echo "   $(basename "$wheel")"
"${pip[@]}" install -q --force-reinstall --no-deps "$wheel"
command -v "$venv/bin/oomdoc" >/dev/null || { echo "pip install ./python did not install the oomdoc command" >&2; exit 1; }

step "pytest python/tests"
set +e
(cd "$here/tests" && "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider .)
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: that is a failure here" >&2
    rc=1
fi
step "done (exit $rc)"
exit "$rc"
