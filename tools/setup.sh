#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks: doctest-dev from apt, and (unless
# --doctest-only) the Python packages that the scripts in tools/ use.
set -eu
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ! -f /usr/include/doctest/doctest.h ]; then
    echo "installing doctest-dev (apt)"
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq doctest-dev
fi
[ "${1:-}" = "--doctest-only" ] && exit 0
python3 -m pip install -q -r tools/requirements.txt
