#!/usr/bin/env bash
# The README's two quick-start commands, and what CI runs:
#   bash scripts/quickstart.sh demo [OUT]   install into .venv, run `dataset-devkit demo`
#   bash scripts/quickstart.sh test [ARGS]  install into .venv (with dev tools), run every test
#   bash scripts/quickstart.sh lint         ruff check, ruff format --check, mypy --strict
# Needs only Python >= 3.11 and the package registries. Set VENV to use another folder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${VENV:-.venv}"
python="${PYTHON:-python3}"

ensure_venv() {
  local extras="$1"
  if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
  fi
  # torch is pinned to the CPU wheel (extra `torch`); nuscenes-devkit pins numpy<2.
  "$venv/bin/python" -m pip install --quiet -e ".[$extras]"
}

command="${1:-}"
[ $# -gt 0 ] && shift
case "$command" in
  demo)
    ensure_venv "all"
    exec "$venv/bin/dataset-devkit" demo "$@"
    ;;
  test)
    ensure_venv "all,dev"
    set +e
    "$venv/bin/python" -m pytest "$@"
    status=$?
    set -e
    if [ "$status" -eq 5 ]; then
      echo "quickstart: pytest collected no tests; that is a failure, not a pass" >&2
      exit 1
    fi
    exit "$status"
    ;;
  lint)
    ensure_venv "all,dev"
    "$venv/bin/ruff" check src tests benchmarks
    "$venv/bin/ruff" format --check src tests benchmarks
    "$venv/bin/mypy"
    ;;
  *)
    echo "usage: bash scripts/quickstart.sh demo [OUT] | test [PYTEST ARGS] | lint" >&2
    exit 2
    ;;
esac
