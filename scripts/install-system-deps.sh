#!/usr/bin/env bash
# System packages the test suite needs beyond Python, all from Debian:
#   adb              the real ADB client that the protocol conformance test drives against the simulator;
#   chromium,        the headless browser (and its WebDriver) that tests/engine/faces/studio/test_browser.py drives
#   chromium-driver  through selenium;
#   graphviz         `dot`, which draws the studio's graph view as SVG on the server;
#   postgresql       the server (initdb, pg_ctl) of the throwaway cluster the schedule's fleet tests start
#                    (tests/postgres.py); the package's own cluster is not used, and runs as its `postgres` user.
# Idempotent: installs only what is missing, runs `apt-get update` at most once, and does nothing when all is there.
set -euo pipefail

# package name -> a file or command that shows it is installed
missing=()
command -v adb >/dev/null 2>&1 || missing+=(adb)
{ [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; } || missing+=(chromium)
{ [ -x /usr/bin/chromedriver ] || command -v chromedriver >/dev/null 2>&1; } || missing+=(chromium-driver)
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
if command -v apt-get >/dev/null 2>&1; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "install-system-deps: no apt-get here; install by hand: ${missing[*]}" >&2
fi
