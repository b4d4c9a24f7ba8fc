# Sourced by the device scripts (benchmarks/gpu_*.sh): one collector run under a SIGINT time limit.
# Needs OUT, MACHINE, DIR, START and an array REPORT in the caller (`from_results` sets all but OUT).

from_results() {  # from_results MACHINE: $OUT/MACHINE starts as a copy of results/MACHINE (resumed from there)
  MACHINE=$1
  export PYTHONUNBUFFERED=1
  DIR="$OUT/$MACHINE"
  rm -rf "$DIR"; mkdir -p "$OUT"; cp -r "results/$MACHINE" "$DIR"
  START=$(date +%s)
  REPORT=()
}

steps_done() {  # steps_done TARBALL: the steps' table, then $OUT/TARBALL of $OUT/MACHINE
  echo; echo "== steps"; printf '%s\n' "${REPORT[@]}"
  echo "total $(( $(date +%s) - START )) s"
  tar czf "$OUT/$1" -C "$OUT" "$MACHINE" && ls -l "$OUT/$1"
}

run_timed() {  # run_timed NAME LIMIT_S LOG CMD...: CMD under a SIGINT time limit, appended to LOG, its wall said
  local name=$1 limit=$2 log=$3; shift 3
  if [ "$limit" = 0 ]; then echo "== $name: skipped (limit 0)"; return; fi
  local t0=$(date +%s)
  timeout -s INT -k 20 "$limit" "$@" >> "$log" 2>&1
  local rc=$? t1=$(date +%s)
  REPORT+=("$(printf '%-28s rc %-4s %4d s' "$name" "$rc" $((t1 - t0)))")
  echo "== $name: rc $rc in $((t1 - t0)) s (total $((t1 - START)) s)"
  tr '\r' '\n' < "$log" | grep -v '^[a-z]* *\[' | tail -6
}

step() {  # step NAME LIMIT_S ARGS...: one collector run (run_timed), its log in $DIR/log-NAME.txt
  local name=$1 limit=$2; shift 2
  run_timed "$name" "$limit" "$DIR/log-$name.txt" python3 -m collectors --out "$OUT" --machine "$MACHINE" "$@"
}
