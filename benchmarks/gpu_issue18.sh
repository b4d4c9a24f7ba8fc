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

step() {  # step NAME LIMIT_S ARGS...: one collector run under a SIGINT time limit, its log kept, its wall said
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout -s INT -k 20 "$limit" python3 -m collectors --out "$OUT" --machine "$MACHINE" "$@" \
    > "$DIR/log-$name.txt" 2>&1
  local rc=$? t1=$(date +%s)
  REPORT+=("$(printf '%-28s rc %-4s %4d s' "$name" "$rc" $((t1 - t0)))")
  echo "== $name: rc $rc in $((t1 - t0)) s (total $((t1 - START)) s)"
  tr '\r' '\n' < "$DIR/log-$name.txt" | grep -v '^[a-z]* *\[' | tail -6
}

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
