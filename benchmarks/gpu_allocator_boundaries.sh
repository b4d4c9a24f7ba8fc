#!/usr/bin/env bash
# Device run (session 3, 2026-11-22), on the GPU whose committed folder is results/MACHINE:
#   resume   the user workload file at `quick`; then `capacity` resumed over the committed results, which
#            adds every boundary searched again with expandable segments (nothing else is re-measured)
#   again    conv-rollout's `capacity` afresh in another folder: how far each allocator's boundary
#            moves between two collections on one GPU
#   user     the user workload file extended from `quick` to `standard` (sweep, boundary, variants)
# Usage (device tool, repository root): bash benchmarks/gpu_allocator_boundaries.sh resume|again|user MACHINE
set -euo pipefail
mode=$1 machine=$2
case $mode in
  resume)
    mkdir -p /tmp/r && cp -r "results/$machine" /tmp/r/
    python3 -m collectors --out /tmp/r --machine "$machine" --only workloads \
        --workload examples/user_workload.py:build --profile quick
    python3 -m collectors --out /tmp/r --machine "$machine" --only environment workloads --profile capacity
    tar czf "$OUT/$machine.tgz" -C /tmp/r "$machine" ;;
  again)
    python3 -m collectors --out /tmp/again --machine "$machine" --only workloads --workload conv-rollout \
        --profile capacity
    tar czf "$OUT/$machine-again.tgz" -C /tmp/again "$machine" ;;
  user)
    mkdir -p /tmp/u && cp -r "results/$machine" /tmp/u/
    python3 -m collectors --out /tmp/u --machine "$machine" --only workloads \
        --workload examples/user_workload.py:build --profile standard
    tar czf "$OUT/$machine-user.tgz" -C /tmp/u "$machine/workload-sensor-cnn.json" ;;
  *) echo "usage: $0 resume|again|user MACHINE" >&2; exit 2 ;;
esac
