#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks:
#   tools/setup.sh                  doctest-dev (apt) and the Python tools in .venv
#   tools/setup.sh --doctest-only   doctest-dev alone (what `make test` needs)
#   tools/setup.sh --torch          also torch and transformers, the logit oracle
# The Python packages go into a virtual environment inside the project (.venv, ignored by git),
# since a current Debian refuses `pip install` into the system Python; the tools/ scripts are
# run with .venv/bin/python3.
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
requirements=tools/requirements.txt
[ "${1:-}" = "--torch" ] && requirements=tools/requirements-torch.txt
if [ ! -x .venv/bin/python3 ]; then
    echo "creating .venv"
    python3 -m venv .venv 2>/dev/null || {
        echo "python3 -m venv failed: install Debian's python3-venv (apt-get install python3-venv)" >&2
        exit 1
    }
fi
echo "installing $requirements into .venv"
.venv/bin/python3 -m pip install -q -r "$requirements"
