#!/bin/sh
# Slurm Epilog for oomdoc: when a job ends with a non-zero exit code, diagnose its
# output files and post the report to the team server. Install it as (or call it from)
# the `Epilog=` script in slurm.conf; it runs as root on each compute node of the job,
# and every node posts under one report id (slurm-JOBID), so a job is stored once.
#
# Settings (environment, or /etc/oomdoc/epilog.env, which this script sources):
#   OOMDOC_URL         the team server, e.g. http://oomdoc.internal:8080   (required)
#   OOMDOC_TOKEN_FILE  file holding an API token (`oomdoc serve token create slurm-epilog`)
#   OOMDOC_BIN         the oomdoc binary (default: oomdoc on PATH)
#   OOMDOC_CLUSTER     a cluster label (default: SLURM_CLUSTER_NAME)
#   OOMDOC_POST_TIMEOUT seconds spent posting at most (default 20)
#   OOMDOC_EPILOG_LOG  file for oomdoc's messages (default: discarded)
#   SCONTROL           the scontrol binary (default: scontrol on PATH)
#
# The job's exit code and output paths come from `scontrol show job -o` (ExitCode=N:S,
# StdOut=, StdErr=, UserId=). The script always exits 0: a failing Epilog drains the node.
# Epilog scripts have no search path set; set PATH here.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}
[ -r /etc/oomdoc/epilog.env ] && . /etc/oomdoc/epilog.env
OOMDOC_BIN=${OOMDOC_BIN:-oomdoc}
job=${SLURM_JOB_ID:-${SLURM_JOBID:-}}
[ -n "$job" ] && [ -n "${OOMDOC_URL:-}" ] || exit 0

record=$("${SCONTROL:-scontrol}" show job -o "$job" 2>/dev/null) || exit 0
field() { printf '%s\n' "$record" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
exit_code=$(field ExitCode)     # N:S, the job script's exit status and the signal that ended it
status=${exit_code%%:*}
signal=${exit_code#*:}
[ "${status:-0}" != 0 ] || [ "${signal:-0}" != 0 ] || exit 0

out=$(field StdOut)
err=$(field StdErr)
user=$(field UserId)
user=${user%%(*}
set --
for f in "$out" "$err"; do
  if [ -n "$f" ] && [ -f "$f" ] && [ -r "$f" ]; then
    case " $* " in *" $f "*) ;; *) set -- "$@" "$f" ;; esac
  fi
done
[ $# -gt 0 ] || exit 0
code=$status
[ "${signal:-0}" != 0 ] && code=$((128 + signal))

token_args=
[ -n "${OOMDOC_TOKEN_FILE:-}" ] && token_args="--token-file $OOMDOC_TOKEN_FILE"
cluster=${OOMDOC_CLUSTER:-${SLURM_CLUSTER_NAME:-}}
# shellcheck disable=SC2086 # token_args is one flag and one path, or nothing
"$OOMDOC_BIN" diagnose "$@" --format json --post "$OOMDOC_URL" $token_args \
  --report-id "slurm-$job" --post-timeout "${OOMDOC_POST_TIMEOUT:-20}" \
  --label "job_id=$job" --label "user=$user" --label "exit_status=$code" \
  ${cluster:+--label "cluster=$cluster"} --label "host=${SLURMD_NODENAME:-$(hostname 2>/dev/null || echo unknown)}" \
  >/dev/null 2>>"${OOMDOC_EPILOG_LOG:-/dev/null}" || true
exit 0
