#!/usr/bin/env bash
# Issue 18, session 7: one call of at most ~9 minutes on one GPU, from the repository root:
#   bash benchmarks/gpu_floors_and_padding.sh MACHINE      (h100-80gb or h200)
# 1. gpt-small with its vocabulary padded to 50304, eager and compiled (benchmarks/vocab_padding.py).
# 2. Default-allocator boundaries searched again, each search in a fresh process (benchmarks/boundary_spread.py):
#    mlp-stgan fp32 three times and tf32 twice, gpt-small and conv-rollout bf16 twice.
# 3. wide-transformer's collector-3 document finished at the standard profile, its host-set points timed
#    steadily (workloads collector 4), under a SIGINT time limit so that what ran is saved.
# PARTS (default "vocab spread wide") picks the parts. Leaves only $OUT/MACHINE-floors.tgz: a copy of
# results/MACHINE with diagnostics/ and the finished wide-transformer document.
set -u
OUT=${OUT:?OUT must name the folder to write into}
source "$(dirname "$0")/collect_step.sh"
from_results "${1:?usage: bash benchmarks/gpu_floors_and_padding.sh MACHINE}"
mkdir -p "$DIR/diagnostics"
PARTS=${PARTS:-vocab spread wide}
[[ $PARTS == *vocab* ]] && run_timed vocab-padding 150 "$DIR/log-vocab.txt" \
  python3 benchmarks/vocab_padding.py --out "$DIR/diagnostics/vocab-padding.json"
spread() {  # spread WORKLOAD PRECISION REPEATS
  run_timed "spread-$1-$2" 150 "$DIR/log-spread.txt" python3 benchmarks/boundary_spread.py \
    --machine-dir "results/$MACHINE" --workload "$1" --precision "$2" --allocator default --repeats "$3" \
    --out "$DIR/diagnostics/boundary-spread.json"
}
if [[ $PARTS == *spread* ]]; then
  spread mlp-stgan fp32 3; spread mlp-stgan tf32 2; spread gpt-small bf16 2; spread conv-rollout bf16 2
fi
[[ $PARTS == *wide* ]] && step wide-steady "${LIMIT_S:-200}" --only workloads --profile standard --workload examples/wide_transformer.py:build
python3 benchmarks/steady_summary.py "$DIR" || true
steps_done "$MACHINE-floors.tgz"
rm -rf "$DIR"  # the tarball holds it: the reply brings back 8 files at most
