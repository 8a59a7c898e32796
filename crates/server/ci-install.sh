#!/usr/bin/env sh
# Installs headless Chromium and chromedriver (Debian packages) for the browser tests in
# crates/server/tests/browser.rs. Without them those tests fail under CI=true and are listed as
# skipped elsewhere (scripts/test.sh's summary).
set -eu
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver
