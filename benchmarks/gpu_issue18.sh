#!/usr/bin/env bash
# Issue 18 device script, one call of at most ~9 minutes on one GPU (H100 or H200):
#   bash benchmarks/gpu_issue18.sh MACHINE          (e.g. h100-80gb or h200; run from the repository root)
# Writes into a fresh $OUT/MACHINE, document by document as each is saved (a step stopped by its time
# limit keeps every point it finished: SIGINT makes the collector finish the point, save and exit 130),
# then $OUT/MACHINE-issue18.tgz and a summary table. Steps, most valuable first, each timed:
#   1 environment                                                          ~5 s
#   2 ceilings, fresh, with the dispatch benchmark (host µs per op)       ~45 s
#   3 workloads `standard` for the three examples, one run each, each cut at WORKLOAD_S (SIGINT): the
#     standard profile measures the bf16 batch sweep first (host and GPU time at every batch), then
#     the main point, the OOM boundary, the repeat, variants, compile, the other precisions' main
#     points; what the limit cuts is the tail of that list, never the sweep   3 x ~100 s
#   4 roofline at main/4, main, 2 x main: the three examples, then the four built-ins   ~130 s
# Needs torch + nvidia-ml-py + the standard library only.
set -u
MACHINE=${1:?usage: bash benchmarks/gpu_issue18.sh MACHINE}
OUT=${OUT:?OUT must name the folder to write into}
WORKLOAD_S=${WORKLOAD_S:-95}
ROOFLINE_S=${ROOFLINE_S:-130}
export PYTHONUNBUFFERED=1
DIR="$OUT/$MACHINE"
rm -rf "$DIR"; mkdir -p "$DIR"
# ISSUE18_EXAMPLES / ISSUE18_BUILTINS (space-separated) replace the lists: a CPU dry run of the script
read -r -a EXAMPLES <<< "${ISSUE18_EXAMPLES:-examples/vit_tiny.py:build examples/dlrm_small.py:build examples/wide_transformer.py:build}"
read -r -a BUILTINS <<< "${ISSUE18_BUILTINS:-gpt-small resnet50 mlp-stgan conv-rollout}"
START=$(date +%s)
declare -a REPORT=()

source "$(dirname "$0")/collect_step.sh"  # step NAME LIMIT_S ARGS...

step environment 60 --only environment
step ceilings 120 --only ceilings --fresh
for ex in "${EXAMPLES[@]}"; do
  stem=$(basename "${ex%%:*}" .py)
  step "workloads-$stem" "$WORKLOAD_S" --only workloads --profile standard --workload "$ex"
done
ARGS=()
for w in "${EXAMPLES[@]}" "${BUILTINS[@]}"; do ARGS+=(--workload "$w"); done
step roofline "$ROOFLINE_S" --only roofline "${ARGS[@]}"

echo; echo "== steps"; printf '%s\n' "${REPORT[@]}"
echo "total $(( $(date +%s) - START )) s"
echo; echo "== summary"
python3 benchmarks/issue18_summary.py "$DIR" || echo "summary failed (rc $?)"
tar czf "$OUT/$MACHINE-issue18.tgz" -C "$OUT" "$MACHINE" && ls -l "$OUT/$MACHINE-issue18.tgz"
