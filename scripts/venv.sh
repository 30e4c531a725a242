#!/usr/bin/env bash
# `make venv`: the project's virtualenv in .venv with both distributions editable (the operator with its test
# extras, and the lab), and pip in it (tests build wheels and make virtualenvs with it).
#
# The packages are installed by uv, not pip: from its cache (~/.cache/uv) a fresh clone's ~150 packages take
# about 20 s (their bytecode compiled) where pip took about 60 s, and every `make test` from a clean clone
# makes this venv anew. uv is PyPI's `uv` wheel at UV_VERSION, installed once into its own virtualenv outside
# the checkout (~/.cache/homecluster/tools/uv-<version>). Where uv cannot be had or fails (it does not read
# pip.conf: a machine that reaches PyPI only through a mirror set there), pip does the same install.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
UV_VERSION=0.13.9
TOOLS=${HOMECLUSTER_TOOLS_DIR:-$HOME/.cache/homecluster/tools}
UV_HOME="$TOOLS/uv-$UV_VERSION"
# uv is run by name from its own virtualenv (tests/install/test_system_deps.py: FROM_PYPI)
UV_PATH="$UV_HOME/bin:$PATH"

have_uv() { [ -x "$UV_HOME/bin/uv" ] && PATH="$UV_PATH" uv --version >/dev/null 2>&1; }
if ! have_uv; then
  echo "venv: installing uv $UV_VERSION into $UV_HOME (once per machine)"
  rm -rf "$UV_HOME"
  mkdir -p "$TOOLS"
  if ! { "$PYTHON" -m venv "$UV_HOME" && "$UV_HOME/bin/pip" install -q "uv==$UV_VERSION"; }; then
    echo "venv: uv $UV_VERSION could not be installed; pip installs the packages instead" >&2
    rm -rf "$UV_HOME"
  fi
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv --without-pip "$VENV"
# --compile-bytecode: pip compiles what it installs, uv only when asked; without the .pyc files every
# ansible-playbook and operator the tests start would compile its imports again (PYTHONDONTWRITEBYTECODE=1
# in the environment keeps Python itself from saving them).
if have_uv && PATH="$UV_PATH" uv pip install -q --compile-bytecode --python "$VENV/bin/python" pip -e '.[test]' -e ./lab; then
  exit 0
fi
echo "venv: uv is missing or failed; installing with pip (about a minute)" >&2
[ -x "$VENV/bin/pip" ] || "$VENV/bin/python" -m ensurepip -q
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -e '.[test]' -e ./lab
