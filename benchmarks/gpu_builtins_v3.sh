#!/usr/bin/env bash
# Issue 18: the built-in workloads (and the sensor-cnn example) measured again with workloads collector 3,
# so that every timed point has its host-issue and GPU-busy time. One call of at most ~9 minutes:
#   bash benchmarks/gpu_builtins_v3.sh MACHINE      (h100-80gb or h200; from the repository root)
# The machine's committed results are copied into $OUT/MACHINE first: the version-2 documents' boundary
# probes are reused (load_earlier), their timed points measured again, the other documents kept as they
# are. Each workload is cut at its limit by SIGINT (the collector saves what it finished; a rerun resumes).
set -u
OUT=${OUT:?OUT must name the folder to write into}
source "$(dirname "$0")/collect_step.sh"
from_results "${1:?usage: bash benchmarks/gpu_builtins_v3.sh MACHINE}"
step resnet50 "${LIMIT_RESNET50:-110}" --only workloads --profile capacity --workload resnet50
step sensor-cnn "${LIMIT_SENSOR:-60}" --only workloads --profile standard --workload examples/user_workload.py:build
step gpt-small "${LIMIT_GPT:-110}" --only workloads --profile capacity --workload gpt-small
step mlp-stgan "${LIMIT_MLP:-70}" --only workloads --profile capacity --workload mlp-stgan
step conv-rollout "${LIMIT_CONV:-130}" --only workloads --profile capacity --workload conv-rollout
step wide-transformer "${LIMIT_WIDE:-40}" --only workloads --profile standard \
  --workload examples/wide_transformer.py:build   # resumes the issue-18 run that its limit cut
echo; echo "== steps"; printf '%s\n' "${REPORT[@]}"
echo "total $(( $(date +%s) - START )) s"
python3 benchmarks/issue18_summary.py "$DIR" | grep -v '^roofline\|^  batch' | tail -60 || true
tar czf "$OUT/$MACHINE-builtins-v3.tgz" -C "$OUT" "$MACHINE" && ls -l "$OUT/$MACHINE-builtins-v3.tgz"
