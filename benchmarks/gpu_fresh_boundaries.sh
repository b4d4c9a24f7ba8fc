#!/usr/bin/env bash
# Issue 18: every boundary searched again, each in a fresh process (workloads collector 5,
# collectors/workloads/boundary_process.py), over the committed documents, whose timed points are reused:
#   bash benchmarks/gpu_fresh_boundaries.sh MACHINE      (from the repository root; one call, ~9 minutes)
# mlp-stgan, gpt-small and resnet50 at every precision and allocator (capacity profile), then the four
# example workloads' bf16 boundary (standard). conv-rollout only with CONV_LIMIT_S > 0 (standard: its bf16
# boundary; the H200's document is of collector 2, whose timed points are measured again, ~5 minutes).
# LIMIT_S=0 or EXAMPLES_LIMIT_S=0 skips a step. Each step is cut by SIGINT at its limit (what finished is
# saved; a rerun resumes). Leaves only $OUT/MACHINE-fresh-boundaries.tgz.
set -u
OUT=${OUT:?OUT must name the folder to write into}
source "$(dirname "$0")/collect_step.sh"
from_results "${1:?usage: bash benchmarks/gpu_fresh_boundaries.sh MACHINE}"
step capacity "${LIMIT_S:-330}" --only workloads --profile capacity \
  --workload mlp-stgan --workload gpt-small --workload resnet50
step examples "${EXAMPLES_LIMIT_S:-200}" --only workloads --profile standard \
  --workload examples/vit_tiny.py:build --workload examples/dlrm_small.py:build \
  --workload examples/user_workload.py:build --workload examples/wide_transformer.py:build
step conv-rollout "${CONV_LIMIT_S:-0}" --only workloads --profile standard --workload conv-rollout
python3 - "$DIR" <<'PY'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("workload-*.json")):
    d = json.loads(f.read_text()); p = d["payload"]
    print(f"{p['workload']:18s} v{d['collector']['version']} complete={p['complete']}",
          " ".join(f"{b['precision']}/{b['allocator'][:3]}={b['max_batch']}{'*' if b.get('fresh_process') else ''}"
                   for b in p["boundaries"]))
PY
steps_done "$MACHINE-fresh-boundaries.tgz"
rm -rf "$DIR"  # the tarball holds it: the reply brings back 8 files at most
