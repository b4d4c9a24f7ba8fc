#!/usr/bin/env bash
# Issue 18: the points whose step the host's speed moves, timed again in one interleaved window for all the
# workloads (workloads collector 4, collectors/workloads/steady.py). One call of at most ~9 minutes on one GPU:
#   bash benchmarks/gpu_steady.sh MACHINE      (h100-80gb or h200; from the repository root)
# The machine's committed results are copied into $OUT/MACHINE first: a collector-3 document lends every
# point (load_earlier), a collector-2 one (the H200's mlp-stgan) its probes, its timed points measured
# again. One collector process for the six workloads with host-set points, so that their steady timing
# shares one window; the standard profile keeps what the capacity documents hold beyond it. Cut by SIGINT
# at LIMIT_S (the collector saves what it finished; a rerun resumes). Then each steady point's sweep timing
# against its steady one, and $OUT/MACHINE-steady.tgz.
set -u
OUT=${OUT:?OUT must name the folder to write into}
source "$(dirname "$0")/collect_step.sh"
from_results "${1:?usage: bash benchmarks/gpu_steady.sh MACHINE}"
step steady "${LIMIT_S:-520}" --only workloads --profile standard \
  --workload examples/vit_tiny.py:build --workload gpt-small --workload resnet50 \
  --workload examples/dlrm_small.py:build --workload examples/user_workload.py:build --workload mlp-stgan
python3 benchmarks/steady_summary.py "$DIR" || true
steps_done "$MACHINE-steady.tgz"
