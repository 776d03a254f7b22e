#!/usr/bin/env bash
# System packages the test suite needs beyond Python: Debian's `adb` (the real ADB client that the protocol
# conformance test drives against the simulator). Idempotent; does nothing when adb is already on PATH.
set -euo pipefail
if command -v adb >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
if command -v apt-get >/dev/null 2>&1; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq adb >/dev/null
else
    echo "install-system-deps: no apt-get here; install Android's adb by hand for the real-client test" >&2
fi
