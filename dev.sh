#!/usr/bin/env bash
# One entry point for people and CI. Creates .venv on first use and keeps it in step with
# pyproject.toml.
#   ./dev.sh demo [ARGS]    install if needed, then run `activebayes demo ARGS`
#   ./dev.sh test [ARGS]    install with the test extras if needed, then run pytest ARGS (a worker per core)
#   ./dev.sh bench NAME     install with the bench extras if needed, then run bench/NAME.py
#   ./dev.sh activebayes ARGS / ./dev.sh python ARGS   run inside the environment
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
PYTHON=${PYTHON:-python3}
TORCH_PIN=2.13.0   # the CPU wheel these machines serve; pyproject.toml keeps a range

pip_() {  # quiet pip; drops the notes about package folders this machine's pip config names but lacks
  "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@" 2>&1 | { grep -v "^WARNING: Location 'file://" >&2 || true; }
  return "${PIPESTATUS[0]}"
}

ensure_env() {  # $1: which extras (base|test|bench)
  local want="$1"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "dev.sh: creating $VENV" >&2
    "$PYTHON" -m venv "$VENV"
  fi
  # Torch first, pinned, so no later resolution swaps it for a multi-GB CUDA build.
  if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    echo "dev.sh: installing torch==$TORCH_PIN" >&2
    pip_ install "torch==$TORCH_PIN"
  fi
  local torch_version
  torch_version=$("$VENV/bin/python" -c "import torch; print(torch.__version__.split('+')[0])" 2>/dev/null)
  local constraints="$VENV/constraints.txt"
  echo "torch==$torch_version" > "$constraints"

  local stamp="$VENV/.installed-$want"
  local digest
  digest=$(cat pyproject.toml dev.sh | sha256sum | cut -c1-16)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then return; fi

  echo "dev.sh: installing activebayes ($want)" >&2
  case "$want" in
    base) pip_ install -c "$constraints" -e . ;;
    test)
      pip_ install -c "$constraints" -e ".[test]"
      # Reference implementations, test-only. Their torchvision requirement would replace
      # torch; nothing we call in them needs torchvision, so it is left out.
      pip_ install -c "$constraints" --no-deps "laplace-torch==0.3" "batchbald-redux==2.0.5"
      "$VENV/bin/python" -m pip uninstall -y -q torchvision 2>/dev/null || true
      ;;
    bench)
      pip_ install -c "$constraints" -e ".[test]"
      pip_ install -c "$constraints" --no-deps "laplace-torch==0.3" "batchbald-redux==2.0.5" "baal==2.1.0"
      pip_ install -c "$constraints" "structlog>=22,<23" "torchmetrics" "tqdm" "psutil"
      "$VENV/bin/python" -m pip uninstall -y -q torchvision 2>/dev/null || true
      ;;
  esac
  echo "$digest" > "$stamp"
}

cmd=${1:-help}; shift || true
case "$cmd" in
  demo)  ensure_env base; exec "$VENV/bin/activebayes" demo "$@" ;;
  # a worker per core (-n 0: one process); an idle worker takes tests queued for a busy one, so a long
  # test near the end of one worker's share does not leave the other cores idle
  test)  ensure_env test; exec "$VENV/bin/python" -m pytest -n "${TEST_WORKERS:-auto}" --dist worksteal "$@" ;;
  bench) ensure_env bench; name=$1; shift; exec "$VENV/bin/python" "bench/$name.py" "$@" ;;
  activebayes) ensure_env base; exec "$VENV/bin/activebayes" "$@" ;;
  python) ensure_env base; exec "$VENV/bin/python" "$@" ;;
  *) sed -n '2,8p' "$0"; exit 2 ;;
esac
