#!/usr/bin/env bash
# The full Gal et al. (2017) MNIST table on one GPU, in one command:
#     studies/gal2017/run-gpu.sh [OUT_DIR] [JOBS]
# Runs the 5 acquisitions x 3 repeats as JOBS worker processes sharing the GPU (default: the
# number of runs, capped by the CPU cores and by ~2 GiB of GPU memory per worker), resumes an
# interrupted study in OUT_DIR, then writes OUT_DIR/table1.md: labels to reach 10% / 5% test
# error per acquisition (mean curve, each repeat in brackets) next to the paper's Table 1, with
# ours / paper for each figure.
# The config is mnist-resampled.toml: the paper's protocol (mnist.toml) trained as Kirsch et al.
# do, the training that brought the 90 % column nearest the paper's (ablation/resampled-training.toml,
# README_EXPERIMENTS.md); 761 s on an H200 with 15 workers (1,485 rounds; results in
# mnist-resampled-h200/). CONFIG=path/to.toml runs another config of the same study
# (mnist.toml: 50 passes over the labelled set; mnist-300.toml; or a copy whose data.path points
# at the MNIST files elsewhere).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
config="${CONFIG:-$here/mnist-resampled.toml}"
out="${1:-$here/mnist-results}"
py="${PYTHON:-$root/.venv/bin/python}"
[ -x "$py" ] || py=python3
device="${DEVICE:-cuda}"  # DEVICE=cpu runs the same script without a GPU (slowly)
if [ -n "${2:-}" ]; then
  jobs="$2"
else
  jobs="$(CONFIG_PATH="$config" DEVICE="$device" "$py" - <<'PY'
import os, torch
from activebayes.study import StudyConfig
config = StudyConfig.from_toml(os.environ["CONFIG_PATH"])
jobs = min(len(config.acquisitions) * config.repeats, len(os.sched_getaffinity(0)))  # Table 1: 15 runs
if os.environ["DEVICE"] != "cpu" and torch.cuda.is_available():
    jobs = min(jobs, int(torch.cuda.get_device_properties(0).total_memory / 2**30 // 2))
print(max(1, jobs))
PY
)"
fi
echo "$(basename "$config"): --device $device --jobs $jobs --out $out" >&2
cli="$(dirname "$py")/activebayes"
[ -f "$cli" ] && [ -x "$cli" ] || cli=activebayes  # a file: ./activebayes may be the package folder
"$cli" study run "$config" --out "$out" --device "$device" --jobs "$jobs"
"$py" -m activebayes.study_jobs table "$out/results.json" "$out/table1.md"
echo "table: $out/table1.md" >&2
