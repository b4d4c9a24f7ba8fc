#!/usr/bin/env bash
# Issue 18: the H200's mlp-stgan and gpt-small boundaries at every precision (capacity profile) over the
# documents benchmarks/gpu_steady.sh left: the standard run that continued mlp-stgan's collector-2 document
# reused its probes but searched the bf16 boundary only; capacity searches the others from the same probes.
#   bash benchmarks/gpu_h200_boundaries.sh      (from the repository root; one call, ~2 minutes)
set -u
OUT=${OUT:?OUT must name the folder to write into}
source "$(dirname "$0")/collect_step.sh"
from_results h200
step boundaries "${LIMIT_S:-200}" --only workloads --profile capacity --workload mlp-stgan --workload gpt-small
steps_done "$MACHINE-boundaries.tgz"
