#!/usr/bin/env bash
# The closing lines of scripts/test.sh: one per suite, from the runners' own result lines.
#   bash scripts/test-summary.sh LOGDIR RUST_EXIT PYTHON_EXIT
# A suite whose runner failed without a result line (a build error, a crash) counts as failed.
set -uo pipefail
logs="$1"; rust_rc="$2"; py_rc="$3"

# cargo: one `test result:` line per test binary and doc-test run.
read -r r_pass r_fail r_ign r_bins < <(awk '
    /^test result: / {
        bins++
        for (i = 1; i <= NF; i++) {
            v = $i; gsub(/[^0-9]/, "", v)
            if ($(i+1) ~ /^passed/) p += v
            if ($(i+1) ~ /^failed/) f += v
            if ($(i+1) ~ /^ignored/) g += v
        }
    }
    END { print p+0, f+0, g+0, bins+0 }' "$logs/rust.log" 2>/dev/null || echo "0 0 0 0")
r_failed_bins=$(grep -c '^test result: FAILED' "$logs/rust.log" 2>/dev/null)
r_skips=$(grep -c . "$logs/skips.txt" 2>/dev/null)
[ -n "$r_skips" ] || r_skips=0

# pytest: its closing line, e.g. `37 passed, 1 skipped in 12.3s`.
py_line=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error|skipped)' "$logs/python.log" 2>/dev/null | tail -n 1)
count() { echo "$py_line" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
p_pass=$(count passed); p_fail=$(( $(count failed) + $(count error) )); p_skip=$(count skipped)

echo
echo "== summary"
rust_note=""
if [ "$rust_rc" -ne 0 ] && [ "$r_fail" -eq 0 ]; then
    rust_note=" (cargo exited $rust_rc without a failed test: a build error or a crash; see target/test-logs/rust.log)"
    r_fail=$(( r_fail + 1 ))
elif [ "$r_failed_bins" -gt 0 ]; then
    rust_note=" (in $r_failed_bins of $r_bins test binaries: $(grep -E '^\s+`-p ' "$logs/rust.log" | sed 's/^ *//' | paste -sd ',' - | sed 's/,/, /g'))"
fi
echo "rust: $r_pass passed, $r_fail failed, $r_skips skipped ($r_bins test binaries, $r_ign ignored)$rust_note"
if [ "$r_skips" -gt 0 ]; then
    sed 's/^/  /' "$logs/skips.txt"
fi
py_note=""
if [ -z "$py_line" ]; then
    py_note=" (pytest gave no result line: see target/test-logs/python.log)"
    [ "$py_rc" -ne 0 ] && p_fail=$(( p_fail + 1 ))
elif [ "$py_rc" -ne 0 ] && [ "$p_fail" -eq 0 ]; then
    py_note=" (exit $py_rc)"
    p_fail=1
fi
echo "python: $p_pass passed, $p_fail failed, $p_skip skipped$py_note"
total_fail=$(( r_fail + p_fail ))
echo "total: $(( r_pass + p_pass )) passed, $total_fail failed, $(( r_skips + p_skip )) skipped"
[ "$total_fail" -eq 0 ] && [ "$rust_rc" -eq 0 ] && [ "$py_rc" -eq 0 ]
