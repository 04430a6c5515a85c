#!/usr/bin/env bash
# The full Gal et al. (2017) MNIST study (mnist.toml) on one GPU, in one command:
#     studies/gal2017/run-gpu.sh [OUT_DIR] [JOBS]
# Runs the 5 acquisitions x 3 repeats as JOBS worker processes sharing the GPU (default: the
# number of runs, capped by the CPU cores and by ~2 GiB of GPU memory per worker), resumes an
# interrupted study in OUT_DIR, then writes OUT_DIR/table1.md: labels to reach 10% / 5% test
# error per acquisition next to the paper's Table 1. CONFIG=path/to.toml runs another config of
# the same study (mnist-300.toml, or a copy whose data.path points at the MNIST files elsewhere).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
config="${CONFIG:-$here/mnist.toml}"
out="${1:-$here/mnist-results}"
py="${PYTHON:-$root/.venv/bin/python}"
[ -x "$py" ] || py=python3
if [ -n "${2:-}" ]; then
  jobs="$2"
else
  jobs="$("$py" - <<'PY'
import os, torch
runs = 15  # 5 acquisitions x 3 repeats
cores = len(os.sched_getaffinity(0))
gib = torch.cuda.get_device_properties(0).total_memory / 2**30 if torch.cuda.is_available() else 0
print(max(1, min(runs, cores, int(gib // 2) or 1)))
PY
)"
fi
echo "gal2017 mnist: --device cuda --jobs $jobs --out $out" >&2
cli="$(dirname "$py")/activebayes"
[ -f "$cli" ] && [ -x "$cli" ] || cli=activebayes  # a file: ./activebayes may be the package folder
"$cli" study run "$config" --out "$out" --device cuda --jobs "$jobs"
"$py" -m activebayes.study_jobs table "$out/results.json" "$out/table1.md"
echo "table: $out/table1.md" >&2
