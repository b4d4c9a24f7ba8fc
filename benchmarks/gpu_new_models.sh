#!/usr/bin/env bash
# Issue 38 on one GPU, in one call: a new user's three models collected with the default standard profile, a
# collection cut at 60 s and its plan, and Ctrl-C in each stage. One tarball to $OUT.
#
#   OUT=/path bash benchmarks/gpu_new_models.sh [--small] [--tag NAME] [--work DIR] [--total SECONDS]
#
#   - `python3 -m collectors --profile standard --workload examples/X.py:build` for each of efficientnet_b0 (5.3 M),
#     resnext101 (44 M) and decoder_lm (235 M), one after another into one machine folder: the first pays the
#     machine's environment and ceilings, the others reuse them. Wall time of each call; per-stage seconds from
#     the documents (summary.txt, stages.json). Each call is cut (SIGINT) at STEP_S (200 s) if it has not ended: 3
#     minutes is the promise, so a longer one shows where the time went without eating the rest of the run.
#   - A fresh folder, `--budget 60s` on efficientnet_b0 (the collection cut at 60 s, ceilings included), then
#     `python3 -m planner.cli plan` on what it left: the plan names every stage it was not timed with. (The
#     planner's packages may be missing on a bare GPU image: then run `gpuplan plan` on the unpacked folder.)
#   - benchmarks/stop_check.py on efficientnet_b0's documents (its tiny size's, collected first, with --part checks):
#     a real SIGINT in a sweep point, in torch.compile, in a boundary probe (pid, then process group), in the per-op
#     profile and in torchrun's ranks (gloo): exit status, seconds to exit, processes left, points kept.
#   Order: efficientnet_b0's standard collection, the cut and its plan, the stops, then resnext101's and
#   decoder_lm's standard collections while the --total lasts (a step that no longer fits is said "not run").
#
#   --small    the examples' build_tiny and the GPU paths on a CPU (GPUPLAN_CPU_GPU_PATHS=1): the script's own test
#   --tag      names the tarball: $OUT/new-models-<GPU>-<TAG>.tgz (default: the CUDA_VISIBLE_DEVICES value, or "all")
#   --total    stop starting steps past this many seconds (default 510: under 9 minutes on one H100)
#   --part P   collect (the three standard collections) or checks (the cut, its plan, the stops); default both
#   --models "A B"  the examples --part collect runs, in order (default: "efficientnet_b0 resnext101 decoder_lm");
#              one named twice runs the same command again, which continues where the first stopped; the held-out
#              models of issues 39 and 41: --models "unet_seg lstm_lm convnext_tiny llama_mini ddpm_unet"
#              (31 M, 50 M, 29 M, 134 M, 18.5 M)
#   --seed DIR start every machine folder with DIR's environment.json and ceilings.json (the CPU self-test: a CPU's
#              ceilings take minutes; never on a GPU, whose three-minute figure includes its ceilings)
#
# CUDA_VISIBLE_DEVICES passes through: two runs side by side on a 2-GPU host, one per GPU, each its own tarball
# (their host-bound steps and compiles share the CPU cores):
#   CUDA_VISIBLE_DEVICES=0 bash benchmarks/gpu_new_models.sh --part collect &
#   CUDA_VISIBLE_DEVICES=1 bash benchmarks/gpu_new_models.sh --part checks; wait
set -u
SMALL=0 TAG="${CUDA_VISIBLE_DEVICES:-all}" WORK="" TOTAL_S=510 STEP_S=200 SEED="" PART=all
MODELS="efficientnet_b0 resnext101 decoder_lm"
while [ $# -gt 0 ]; do
  case "$1" in
    --small) SMALL=1; shift ;;
    --tag) TAG=${2:?}; shift 2 ;;
    --work) WORK=${2:?}; shift 2 ;;
    --total) TOTAL_S=${2:?}; shift 2 ;;
    --seed) SEED=${2:?}; shift 2 ;;
    --part) PART=${2:?}; shift 2 ;;
    --models) MODELS=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//' | grep -v '^set -u'; exit 0 ;;
    *) echo "gpu_new_models.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
OUT=${OUT:?OUT must name the folder the tarball goes to}
WORK=${WORK:-$(mktemp -d)}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
BUILD=build MACHINE=new-models
# --small: torch.compile is a no-op in steps 1 and 2 (TORCHDYNAMO_DISABLE; inductor takes minutes a model on a CPU);
# step 3 compiles for real, to stop it
NO_DYNAMO=""
if [ "$SMALL" = 1 ]; then BUILD=build_tiny; export GPUPLAN_CPU_GPU_PATHS=1; STEP_S=${STEP_S_SMALL:-300}
  NO_DYNAMO="TORCHDYNAMO_DISABLE=1"; fi
GPU=$($PY -c "import torch; print(torch.cuda.get_device_name(0).split()[-1] if torch.cuda.is_available() else 'cpu')" \
      2>/dev/null | tr -c 'A-Za-z0-9._\n-' '_')
DIR="$WORK/new-models-$GPU-$TAG"
rm -rf "$DIR"; mkdir -p "$DIR/logs" "$OUT"
if [ -n "$SEED" ]; then
  for f in "$DIR/runs/$MACHINE" "$DIR/cut/$MACHINE" "$DIR/stops-source/$MACHINE"; do mkdir -p "$f"; cp "$SEED"/{environment,ceilings}.json "$f/"; done
fi
START=$(date +%s)
SUMMARY="$DIR/summary.txt"
{ echo "gpu_new_models.sh on $(hostname): GPU $GPU, CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}, small=$SMALL"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
  $PY -c "import torch; print('torch', torch.__version__)"; git rev-parse --short HEAD 2>/dev/null; } > "$SUMMARY"

left() { echo $((TOTAL_S - ($(date +%s) - START))); }

timed() {  # timed NAME LIMIT CMD...: CMD cut by SIGINT at LIMIT s (SIGKILL 20 s later), its log and wall kept
  local name=$1 limit=$2 t0 t1 rc log n=2; shift 2
  if [ "$limit" -le 10 ]; then echo "$name: not run (the run's $TOTAL_S s are spent)" | tee -a "$SUMMARY"; return; fi
  log="$DIR/logs/$name.txt"  # a model named twice in --models (the same command again: it continues) keeps both
  while [ -e "$log" ]; do log="$DIR/logs/$name-$n.txt"; n=$((n + 1)); done
  t0=$(date +%s.%N)
  timeout -s INT -k 20 "$limit" "$@" > "$log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  printf '%-34s rc %-4s wall %7.1f s (limit %s s)\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$limit" \
    | tee -a "$SUMMARY"
}

standard() {  # standard EXAMPLE: the default standard collection of one example, into the shared machine folder
  local limit=$(( $(left) < STEP_S ? $(left) : STEP_S ))
  timed "standard-$1" "$limit" env $NO_DYNAMO $PY -m collectors --out "$DIR/runs" --machine "$MACHINE" \
    --profile standard --workload "examples/$1.py:$BUILD"
}

cut_and_plan() {  # a fresh collection cut at 60 s (--budget 60s), and the plan from what it left
  local limit=$(( $(left) < 90 ? $(left) : 90 ))
  timed "cut-60s" "$limit" env $NO_DYNAMO $PY -m collectors --out "$DIR/cut" --machine "$MACHINE" --profile standard \
    --budget 60s --workload "examples/efficientnet_b0.py:$BUILD"
  { echo; echo "== the plan of the collection cut at 60 s"
    $PY -m planner.cli plan "$DIR/cut/$MACHINE" --target "H100 SXM" --target "H200 SXM" 2>&1 \
      || echo "(the planner did not run here: run gpuplan plan on new-models-*/cut/$MACHINE after unpacking)"; } \
    > "$DIR/plan-cut-60s.txt"
  grep -A14 "^efficientnet-b0.* on " "$DIR/plan-cut-60s.txt" >> "$SUMMARY"
}

stop_checks() {  # Ctrl-C in each stage, from efficientnet_b0's documents (the tiny size's, collected here, if none)
  local src="$DIR/stops-source/$MACHINE" spec="examples/efficientnet_b0.py:$BUILD" stem limit
  stem=$( [ "$BUILD" = build ] && echo efficientnet-b0 || echo efficientnet-b0-cpu )
  mkdir -p "$src"
  if [ -f "$DIR/runs/$MACHINE/workload-$stem.json" ]; then
    cp "$DIR/runs/$MACHINE"/{environment,ceilings,workload-$stem,roofline-$stem}.json "$src/" 2>/dev/null
  else
    spec=examples/efficientnet_b0.py:build_tiny
    cp "$DIR/cut/$MACHINE"/{environment,ceilings}.json "$src/" 2>/dev/null
    limit=$(( $(left) < 120 ? $(left) : 120 ))
    timed "stop-source" "$limit" env $NO_DYNAMO $PY -m collectors --out "$DIR/stops-source" --machine "$MACHINE" \
      --profile standard --only workloads roofline --workload "$spec"
  fi
  { echo; echo "== Ctrl-C in each stage (benchmarks/stop_check.py, $spec)"; } >> "$SUMMARY"
  limit=$(( $(left) < 200 ? $(left) : 200 ))
  timed "stop-check" "$limit" $PY benchmarks/stop_check.py --folder "$src" --workload "$spec" --work "$DIR/stops" \
    --out "$DIR/stop-check.json"
  cat "$DIR/logs/stop-check.txt" >> "$SUMMARY"
}

# What the acceptance needs first (one standard collection, the cut and its plan, the stops), then the other two
# standard collections while the time lasts; --part collect|checks runs one half (two GPUs, two calls side by side)
case "$PART" in
  collect) for example in $MODELS; do standard "$example"; done ;;
  checks) cut_and_plan; stop_checks ;;
  *) standard efficientnet_b0; cut_and_plan; stop_checks; standard resnext101; standard decoder_lm ;;
esac
if [ -d "$DIR/runs/$MACHINE" ]; then
  { echo; echo "== per-stage seconds of the standard collections"
    $PY benchmarks/collection_stages.py "$DIR/runs/$MACHINE" --json "$DIR/stages.json"; } >> "$SUMMARY" 2>&1
fi
echo "total $(( $(date +%s) - START )) s" | tee -a "$SUMMARY"
tar czf "$OUT/$(basename "$DIR").tgz" -C "$WORK" "$(basename "$DIR")"
echo "wrote $OUT/$(basename "$DIR").tgz"
cat "$SUMMARY"
