#!/usr/bin/env bash
# One GPU run: collector steps and benchmark scripts on one machine, each under its own time limit, packed
# into one tarball under $OUT (the lent GPU machines return at most a few files; one tarball is the habit).
#
#   bash benchmarks/gpu_run.sh --machine ID [--from-results] [--profile NAME] [--tag NAME] [--work DIR] \
#        [--collect "LIMIT_S COLLECTOR-ARGS..."]... [--bench "LIMIT_S SCRIPT [ARGS...]"]... [--no-summary]
#
#   --machine ID      the results folder the documents go to (results/<ID>/ when unpacked in the repository)
#   --from-results    start from a copy of results/<ID>/: the collectors resume over the committed documents
#                     (reusing what their version allows); without it the folder starts empty
#   --profile NAME    the collector profile of every --collect step that names none (default: standard)
#   --collect "..."   one `python3 -m collectors --out WORK --machine ID ARGS` run, cut by SIGINT after
#                     LIMIT_S seconds (the collector finishes its point, saves and exits 130; a rerun resumes),
#                     SIGKILL 90 s later if it has not: leave that much of the device call's limit spare
#   --bench "..."     one `python3 benchmarks/SCRIPT ARGS` run under the same kind of limit; a script that
#                     takes --out writes <ID>/diagnostics/<script>.json unless ARGS give their own --out
#   --tag NAME        the tarball is $OUT/<ID>-<NAME>.tgz (default: run)
#   --work DIR        where the machine folder is built (default: a new temporary folder, never under $OUT)
#   --no-summary      leave out the summaries (benchmarks/collection_summary.py, steady_summary.py)
#
# Steps run in the order given; a limit of 0 skips a step. The tarball holds <ID>/ (documents, diagnostics,
# one log per step) and <ID>/summary.txt (the steps' exit codes and walls, then the summaries).
# Needs bash, coreutils' timeout, tar, and what the collectors need (torch, nvidia-ml-py, the standard library).
# Examples: benchmarks/README.md.
set -u
usage() { sed -n '2,/^# Examples/p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

MACHINE="" FROM_RESULTS=0 PROFILE=standard TAG=run WORK="" SUMMARY=1 KILL_GRACE_S=90
declare -a STEPS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --machine) MACHINE=${2:?}; shift 2 ;;
    --from-results) FROM_RESULTS=1; shift ;;
    --profile) PROFILE=${2:?}; shift 2 ;;
    --collect) STEPS+=("collect ${2:?}"); shift 2 ;;
    --bench) STEPS+=("bench ${2:?}"); shift 2 ;;
    --tag) TAG=${2:?}; shift 2 ;;
    --work) WORK=${2:?}; shift 2 ;;
    --no-summary) SUMMARY=0; shift ;;
    -h|--help) usage 0 ;;
    *) echo "gpu_run.sh: unknown option $1" >&2; usage ;;
  esac
done
[ -n "$MACHINE" ] || { echo "gpu_run.sh: --machine is required" >&2; usage; }
[ ${#STEPS[@]} -gt 0 ] || { echo "gpu_run.sh: nothing to run (give --collect or --bench)" >&2; usage; }
OUT=${OUT:?OUT must name the folder the tarball goes to}
WORK=${WORK:-$(mktemp -d)}
export PYTHONUNBUFFERED=1

DIR="$WORK/$MACHINE"
rm -rf "$DIR"; mkdir -p "$DIR/diagnostics" "$OUT"
if [ "$FROM_RESULTS" = 1 ]; then cp -r "results/$MACHINE/." "$DIR/"; fi
START=$(date +%s)
declare -a REPORT=()

run_timed() {  # run_timed NAME LIMIT_S CMD...: CMD under a SIGINT limit, logged to $DIR/log-NAME.txt
  local name=$1 limit=$2 log="$DIR/log-$1.txt"; shift 2
  if [ "$limit" = 0 ]; then echo "== $name: skipped (limit 0)"; return; fi
  local t0; t0=$(date +%s)
  # SIGINT lets a collector finish its point and save; one OOM-boundary point of a large model outlasts 20 s (the
  # H200's Transformer-XL search was killed twice at 20 s), so it gets KILL_GRACE_S before the SIGKILL
  timeout -s INT -k "$KILL_GRACE_S" "$limit" "$@" >> "$log" 2>&1
  local rc=$? t1; t1=$(date +%s)
  REPORT+=("$(printf '%-32s rc %-4s %5d s' "$name" "$rc" $((t1 - t0)))")
  echo "== $name: rc $rc in $((t1 - t0)) s (total $((t1 - START)) s)"
  tr '\r' '\n' < "$log" | grep -v '^[a-z]* *\[' | tail -6
}

n=0
for spec in "${STEPS[@]}"; do
  n=$((n + 1))
  read -r -a words <<< "$spec"
  kind=${words[0]} limit=${words[1]} args=("${words[@]:2}")
  if [ "$kind" = collect ]; then
    case " ${args[*]} " in *" --profile "*) ;; *) args+=(--profile "$PROFILE") ;; esac
    # a reference collection times every stage: the standard profile's default 3-minute budget is off
    case " ${args[*]} " in *" --budget "*) ;; *) args+=(--budget none) ;; esac
    run_timed "$n-collect" "$limit" python3 -m collectors --out "$WORK" --machine "$MACHINE" "${args[@]}"
  else
    script="benchmarks/${args[0]}" stem=$(basename "${args[0]}" .py)
    rest=("${args[@]:1}")
    if grep -q -- '"--out"' "$script" && ! printf '%s\n' "${rest[@]}" | grep -qx -- --out; then
      rest+=(--out "$DIR/diagnostics/$stem.json")
    fi
    run_timed "$n-$stem" "$limit" python3 "$script" "${rest[@]}"
  fi
done

{
  echo "machine $MACHINE, from results: $FROM_RESULTS, default profile $PROFILE"
  echo "== steps"; printf '%s\n' "${REPORT[@]}"; echo "total $(( $(date +%s) - START )) s"
  if [ "$SUMMARY" = 1 ]; then
    echo; echo "== collection summary"; python3 benchmarks/collection_summary.py "$DIR" 2>&1
    echo; echo "== steady timing"; python3 benchmarks/steady_summary.py "$DIR" 2>&1
  fi
} > "$DIR/summary.txt"
cat "$DIR/summary.txt"
rmdir "$DIR/diagnostics" 2>/dev/null || true
tar czf "$OUT/$MACHINE-$TAG.tgz" -C "$WORK" "$MACHINE" && ls -l "$OUT/$MACHINE-$TAG.tgz"
