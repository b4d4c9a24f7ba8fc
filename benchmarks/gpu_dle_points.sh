#!/usr/bin/env bash
# One GPU call: the points NVIDIA DeepLearningExamples' rows need in their own configuration (the row's tensor layout,
# batch and precision; planner/check/dle_points.py says which and why), timed and profiled on this machine's first
# visible GPU by benchmarks/dle_points.py, packed into ONE tarball under $OUT.
#
#   OUT=/some/dir bash benchmarks/gpu_dle_points.sh [--machine ID] [--limit SECONDS] [-- DLE_POINTS_ARGS...]
#
#   --machine ID   the results folder the points belong to (default: from the first visible GPU's name as torch
#                  reports it, an H100 → h100-80gb, an H200 → h200; another GPU needs --machine); results/ID/
#                  ceilings.json must exist (the profiles' roofs)
#   --limit S      SIGINT after S seconds (default 200): benchmarks/dle_points.py finishes the point it is timing,
#                  keeps everything finished and exits 130; SIGKILL 20 s later if it has not
#   -- ARGS        passed to benchmarks/dle_points.py (e.g. --model resnet50, --plan FILE)
#
# Starts from results/ID/diagnostics/dle-points/ where the checkout has it (a second call resumes: the points already
# there are kept byte for byte, complete profiles are not run again). The tarball $OUT/ID-dle-points.tgz holds
# ID/diagnostics/dle-points/ (documents, log.txt, summary.txt); unpack it with `tar xzf FILE -C results/`.
# CUDA_VISIBLE_DEVICES is left as it is given. Expected on an H100: about 150 s for the first 13 points (8 profile documents); the 20 of the plan (the new models' 7 added) need a second call (it resumes).
# Needs bash, coreutils' timeout, tar, and what the collectors need (torch, the standard library).
set -u
usage() { sed -n '2,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

MACHINE="" LIMIT=200 KILL_GRACE_S=20
declare -a PASS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --machine) MACHINE=${2:?}; shift 2 ;;
    --limit) LIMIT=${2:?}; shift 2 ;;
    --) shift; PASS=("$@"); break ;;
    -h|--help) usage 0 ;;
    *) echo "gpu_dle_points.sh: unknown option $1" >&2; usage ;;
  esac
done
OUT=${OUT:?OUT must name the folder the tarball goes to}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)   # absolute before the cd below
cd "$(dirname "$0")/.." || exit 2          # the repository root: the plan names workload files relative to it
export PYTHONUNBUFFERED=1
START=$(date +%s)

if [ -z "$MACHINE" ]; then
  GPU=$(python3 -c "import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" 2>/dev/null)
  case "$GPU" in
    *H100*) MACHINE=h100-80gb ;;
    *H200*) MACHINE=h200 ;;
    *) echo "gpu_dle_points.sh: GPU '${GPU:-none}' has no results folder by default; give --machine ID" >&2; exit 2 ;;
  esac
fi
[ -f "results/$MACHINE/ceilings.json" ] || { echo "gpu_dle_points.sh: results/$MACHINE/ceilings.json missing" >&2; exit 2; }

WORK=$(mktemp -d)
DIR="$WORK/$MACHINE/diagnostics/dle-points"
mkdir -p "$DIR" "$OUT"
if [ -d "results/$MACHINE/diagnostics/dle-points" ]; then cp -r "results/$MACHINE/diagnostics/dle-points/." "$DIR/"; fi
LOG="$DIR/log.txt"
{ echo "gpu_dle_points.sh: machine $MACHINE, CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}, limit $LIMIT s"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null || true
} >> "$LOG"

timeout --preserve-status -s INT -k "$KILL_GRACE_S" "$LIMIT" \
  python3 benchmarks/dle_points.py --machine-dir "results/$MACHINE" --out "$DIR" "${PASS[@]}" >> "$LOG" 2>&1
RC=$?
# the progress bar's redraws stay out of the summary; every point's and profile's own line stays
{ echo "benchmarks/dle_points.py: rc $RC in $(( $(date +%s) - START )) s (0: every configuration done; 130: cut by the limit, a second call resumes)"
  tr '\r' '\n' < "$LOG" | grep -E '^[a-z0-9-]+ (tf32|fp16|fp32|bf16) |^roofline-|rc |error|Error' | grep -v '^dle points'
} > "$DIR/summary.txt"
cat "$DIR/summary.txt"
tar czf "$OUT/$MACHINE-dle-points.tgz" -C "$WORK" "$MACHINE" && ls -l "$OUT/$MACHINE-dle-points.tgz"
echo "total $(( $(date +%s) - START )) s"
exit "$RC"
