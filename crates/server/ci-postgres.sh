#!/usr/bin/env sh
# Installs Debian's PostgreSQL server binaries (initdb, pg_ctl, postgres) for the store
# conformance and replica tests (crates/server/tests/store.rs, process.rs). The tests
# start their own throwaway cluster in a temp dir on loopback; no service is started
# here. With CI=true those tests fail when PostgreSQL cannot start; elsewhere they print
# SKIPPED on stderr and list themselves in target/postgres-skipped.txt.
set -eu
for bin in /usr/lib/postgresql/*/bin/initdb; do
  if [ -x "$bin" ]; then exit 0; fi
done
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql
