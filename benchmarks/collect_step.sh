# Sourced by the device scripts (benchmarks/gpu_*.sh): one collector run under a SIGINT time limit.
# Needs OUT, MACHINE, DIR, START and an array REPORT in the caller.
step() {  # step NAME LIMIT_S ARGS...: one collector run under a SIGINT time limit, its log kept, its wall said
  local name=$1 limit=$2; shift 2
  if [ "$limit" = 0 ]; then echo "== $name: skipped (limit 0)"; return; fi
  local t0=$(date +%s)
  timeout -s INT -k 20 "$limit" python3 -m collectors --out "$OUT" --machine "$MACHINE" "$@" \
    > "$DIR/log-$name.txt" 2>&1
  local rc=$? t1=$(date +%s)
  REPORT+=("$(printf '%-28s rc %-4s %4d s' "$name" "$rc" $((t1 - t0)))")
  echo "== $name: rc $rc in $((t1 - t0)) s (total $((t1 - START)) s)"
  tr '\r' '\n' < "$DIR/log-$name.txt" | grep -v '^[a-z]* *\[' | tail -6
}
