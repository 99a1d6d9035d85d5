#!/usr/bin/env bash
# The README's two quick-start commands, and what CI runs:
#   bash scripts/quickstart.sh demo [OUT]   install into .venv, run `dataset-devkit demo`
#   bash scripts/quickstart.sh test [ARGS]  install into .venv (with dev tools), run every test
#   bash scripts/quickstart.sh lint         ruff check, ruff format --check, mypy --strict
#   bash scripts/quickstart.sh test-numpy2  tests on numpy 2.x (in .venv-numpy2; CI passes the
#                                           ones the Python 3.13 run skipped)
#   bash scripts/quickstart.sh test-py313   the tests on Python 3.13 with the newest zarr,
#                                           numcodecs and numpy (in .venv-py313)
#   bash scripts/quickstart.sh test-unpack PYTHON  the unpack.py tests with the script run by
#                                           PYTHON (a version such as 3.9, or a path)
#   bash scripts/quickstart.sh nuscenes-extra  a fresh venv with only dataset-devkit[nuscenes]
#                                           validates, inspects and reads a published dataroot
#   bash scripts/quickstart.sh emulators    install the Azure Blob Storage emulator (Azurite,
#                                           npm) into .cache/emulators for the object store tests
# Needs only Python >= 3.11 and the package registries (test-py313 and test-unpack find the
# other Pythons on PATH or in pyenv). Set VENV to use another folder.
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
  # constraints/ci.txt pins torch to the CPU wheel and the OpenCV we test; the extras
  # themselves keep ranges. nuscenes-devkit pins numpy<2.
  "$venv/bin/python" -m pip install --quiet -c constraints/ci.txt -e ".[$extras]"
}

# Azurite (the Azure Blob Storage emulator) from the npm registry, pinned, for the object
# store tests; they skip without it (CI requires it). About 20 s the first time (374 npm
# packages, ~60 MB in .cache/emulators), nothing when it is there.
install_emulators() {
  local emulators="${DEVKIT_EMULATORS:-.cache/emulators}"
  if [ ! -x "$emulators/node_modules/.bin/azurite-blob" ]; then
    mkdir -p "$emulators"
    npm install --prefix "$emulators" --no-audit --no-fund --no-save --silent azurite@3.35.0
  fi
}

# A CPython of version $1 (3.13), or $1 itself when it is a path: python3.13 on PATH, else
# pyenv's (`pyenv root`/versions/3.13.*), checked to be that version.
find_python() {
  local want="$1" root candidate
  if [[ "$want" == */* ]]; then
    echo "$want"
    return
  fi
  root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
  for candidate in $(command -v "python$want" 2>/dev/null) "$root"/versions/"$want".*/bin/python; do
    if [ -x "$candidate" ] && "$candidate" -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$want')" 2>/dev/null; then
      echo "$candidate"
      return
    fi
  done
  echo "quickstart: no Python $want found on PATH or in pyenv; pass its path instead" >&2
  return 1
}

# pytest in $venv; "no tests collected" (exit 5) is a failure, not a pass.
run_pytest() {
  local status
  set +e
  "$venv/bin/python" -m pytest "$@"
  status=$?
  set -e
  if [ "$status" -eq 5 ]; then
    echo "quickstart: pytest collected no tests; that is a failure, not a pass" >&2
    exit 1
  fi
  return "$status"
}

# `test` installs the emulators where npm is there, so the README's command runs every test.
try_emulators() {
  if command -v npm >/dev/null; then
    install_emulators
  else
    echo "quickstart: npm not found, the Azure object store tests will be skipped" >&2
  fi
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
    try_emulators
    run_pytest "$@"
    ;;
  test-numpy2)
    # nuscenes-devkit 1.2.0 declares numpy<2 but runs on numpy 2; install it without its
    # pins so this leg proves our code (and the official loader path) on numpy 2.x.
    venv="${VENV_NUMPY2:-.venv-numpy2}"
    ensure_venv "video,mcap,torch,dask,s3,dev"
    "$venv/bin/python" -m pip install --quiet -c constraints/ci.txt "numpy>=2"
    "$venv/bin/python" -m pip install --quiet -c constraints/ci.txt --no-deps nuscenes-devkit
    "$venv/bin/python" -m pip install --quiet -c constraints/ci.txt opencv-python-headless \
      matplotlib scikit-learn pyquaternion shapely descartes pycocotools fire tqdm scipy \
      cachetools parameterized
    "$venv/bin/python" -c 'import numpy; assert numpy.__version__ >= "2", numpy.__version__'
    try_emulators
    run_pytest "$@"
    ;;
  test-py313)
    # A Python 3.13 environment that already has the newest zarr, numcodecs and numpy, as a
    # user's may: installing dataset-devkit must keep them (no downgrade, no conflict). Every
    # extra that installs there, and the dev tools; torch (the CPU wheel we test is for 3.11)
    # and nuscenes-devkit (numpy<2, no 3.13 wheels) do not: their tests skip, and say why.
    venv="${VENV_PY313:-.venv-py313}"
    if [ ! -x "$venv/bin/python" ]; then
      "$(find_python "${PYTHON313:-3.13}")" -m venv "$venv"
      "$venv/bin/python" -m pip install --quiet --upgrade pip
    fi
    newest() { "$venv/bin/python" -m pip list --format=freeze 2>/dev/null | grep -iE '^(zarr|numcodecs|numpy)=='; }
    "$venv/bin/python" -m pip install --quiet --upgrade zarr numcodecs numpy
    before="$(newest)"
    "$venv/bin/python" -m pip install --quiet -c constraints/ci.txt -e ".[video,mcap,s3,dask,preview,dev]"
    after="$(newest)"
    if [ "$before" != "$after" ]; then
      echo "quickstart: installing dataset-devkit changed $(echo $before) to $(echo $after)" >&2
      exit 1
    fi
    echo "quickstart: $("$venv/bin/python" -V), $(echo $after)"
    try_emulators
    DEVKIT_MISSING_OK=torch,nuscenes run_pytest "$@"
    ;;
  test-unpack)
    # unpack.py ships in every release for the user's Python (3.9 or newer) with nothing
    # installed: the tests run here, and every call of the script goes to that Python.
    other="$(find_python "${1:?usage: test-unpack PYTHON (a version such as 3.9, or a path)}")"
    shift
    ensure_venv "all,dev"
    echo "quickstart: unpack.py under $("$other" -V 2>&1) ($other)"
    DEVKIT_UNPACK_PYTHON="$other" run_pytest tests/release -m unpack_script "$@"
    ;;
  nuscenes-extra)
    # A user who only reads nuScenes data installs `dataset-devkit[nuscenes]`: prove that
    # is enough for validate, inspect and the SDK on a dataroot that the full install built.
    ensure_venv "all,dev"
    work="$(mktemp -d)"
    trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
    "$venv/bin/python" -c 'import sys; from pathlib import Path
from dataset_devkit.demo.nuscenes_publish import run
run(Path(sys.argv[1]))' "$work/build" > /dev/null
    dataroot="$work/build/out/v1.0-trainval"
    python_only="${VENV_NUSCENES:-.venv-nuscenes}"
    [ -x "$python_only/bin/python" ] || "$python" -m venv "$python_only"
    "$python_only/bin/python" -m pip install --quiet -c constraints/ci.txt ".[nuscenes]"
    "$python_only/bin/python" - <<'PY'
import importlib.util
# pyproj is [nuscenes]'s own: a build turns GNSS fixes into local ENU ego poses.
extra = [m for m in ("mcap", "av", "torch", "foxglove", "dask", "rosbags", "obstore") if importlib.util.find_spec(m)]
assert not extra, f"[nuscenes] pulled in packages of other extras: {extra}"
PY
    "$python_only/bin/dataset-devkit" validate --dataroot "$dataroot" --version v1.0-trainval
    "$python_only/bin/dataset-devkit" inspect --dataroot "$dataroot" --version v1.0-trainval --json > /dev/null
    "$python_only/bin/python" - "$dataroot" <<'PY'
import sys
from dataset_devkit.nuscenes import Dataset
ds = Dataset(sys.argv[1])
scene = ds.table("scene")[0]
sample = ds.scene_samples(scene["token"])[0]
print("nuscenes-extra: SDK reads", ds.camera(sample["token"], "CAM_FRONT")["filename"])
PY
    ;;
  emulators)
    install_emulators
    "${DEVKIT_EMULATORS:-.cache/emulators}/node_modules/.bin/azurite-blob" --version
    ;;
  lint)
    ensure_venv "all,dev"
    "$venv/bin/ruff" check src tests benchmarks
    "$venv/bin/ruff" format --check src tests benchmarks
    # unpack.py runs on the user's Python: nothing newer than 3.9 (no `# novm` escapes).
    "$venv/bin/vermin" --target=3.9- --violations --no-tips --no-parse-comments \
      src/dataset_devkit/release/unpack.py
    "$venv/bin/mypy"
    ;;
  *)
    echo "usage: bash scripts/quickstart.sh demo [OUT] | test [ARGS] | test-numpy2 [ARGS] | test-py313 [ARGS] | test-unpack PYTHON [ARGS] | nuscenes-extra | emulators | lint" >&2
    exit 2
    ;;
esac
