#!/usr/bin/env bash
# Debian's chromium for the browser tests (loopwright dev's pages), driven
# by playwright-core from tests-deps with this system browser (Playwright's
# own browser downloads are never used).
#
#   bash scripts/chromium.sh install   # when missing (needs root)
#
# scripts/test.sh sources this file and calls chromium_install while the
# tests build. Without recommends: 26 packages (about 440 MB), not the 116
# (systemd, avahi, cups) the recommends pull in. fonts-liberation gives the
# screenshots metric-compatible fonts. bookworm-security keeps only the
# newest build, so the version is not pinned: the tests log the version
# they ran with.
set -euo pipefail

chromium_install() {
    if command -v chromium >/dev/null; then
        return
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "chromium.sh: chromium is not installed, and installing it needs root:" >&2
        echo "  apt-get install --no-install-recommends chromium fonts-liberation" >&2
        return 1
    fi
    echo "chromium.sh: installing Debian's chromium (no recommends)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
    command -v chromium >/dev/null || { echo "chromium.sh: chromium installed, but not on PATH" >&2; return 1; }
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    case "${1:-}" in
        install) chromium_install ;;
        *) echo "usage: bash scripts/chromium.sh install" >&2; exit 2 ;;
    esac
fi
