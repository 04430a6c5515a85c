#!/usr/bin/env bash
# BALD with each posterior on MNIST, one study per posterior from the template mnist.toml:
#     studies/posteriors/run.sh OUT_DIR [JOBS] [DEVICE]
# writes OUT_DIR/<posterior>/{config.toml, study.db, results.json, timings.json, learning-curve.png} (each
# resumable), then OUT_DIR/table.md and OUT_DIR/posteriors.png (table.py). JOBS worker processes
# per posterior study (default 3: one per seed); DEVICE defaults to auto (CUDA when present).
# MNIST=/path/to/mnist overrides the template's data.path; POSTERIORS="name:S[:key=value,...[:folder]] ..."
# picks posteriors, their predictive samples S (ensembles: members), their own options (written as
# `[model] options`; the default gives the snapshot ensemble Jung et al.'s warm start) and the
# folder under OUT_DIR (default: the name; two runs of one posterior need two). TEMPLATE=file.toml
# replaces mnist.toml (e.g. cpu-200.toml); MILESTONES="50 100 200" the label counts of the table.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:?usage: run.sh OUT_DIR [JOBS] [DEVICE]}"
jobs="${2:-3}"
device="${3:-auto}"
py="${PYTHON:-$root/.venv/bin/python}"
[ -x "$py" ] || py=python3
mnist="$(cd "${MNIST:-$here/../../../shared/data/mnist}" && pwd)"
posteriors="${POSTERIORS:-mc-dropout:20 deep-ensemble:5 snapshot-ensemble:5:warm_start=true laplace:20 swag:20 mfvi:20 batch-ensemble:4}"
mkdir -p "$out"
for entry in $posteriors; do
  IFS=: read -r name samples options folder <<< "$entry"
  folder="${folder:-$name}"
  posterior="posterior = \"$name\""
  [ -n "$options" ] && posterior="$posterior\noptions = { $(sed 's/,/, /g' <<< "$options") }"
  mkdir -p "$out/$folder"
  sed -e "s|^posterior = .*|$posterior|" -e "s|^n_samples = .*|n_samples = $samples|" \
      -e "s|^name = .*|name = \"posteriors-mnist-$folder\"|" -e "s|^path = .*|path = \"$mnist\"|" \
      "$here/${TEMPLATE:-mnist.toml}" > "$out/$folder/config.toml"
  echo "posteriors: $name (S = $samples) -> $out/$folder" >&2
  "$py" -m activebayes_cli.main --quiet study run "$out/$folder/config.toml" --out "$out/$folder" --device "$device" --jobs "$jobs" \
    || echo "posteriors: $name failed (exit $?)" >&2
done
"$py" "$here/table.py" "$out" ${MILESTONES:-}
