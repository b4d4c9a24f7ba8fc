#!/usr/bin/env bash
# The reliability of a real GPU collection: the dataloader collector's run, then a gpt-small workload
# collection killed with SIGKILL 40 s in and started again. Prints whether the finished points were kept
# identical, whether any point was measured twice, and whether a temp file was left.
#
#   bash benchmarks/gpu_dataloader_and_kill_resume.sh [MACHINE]     (repository root; default h100-80gb)
#
# Inputs: results/<MACHINE>/ceilings.json and environment.json (copied, so the workload run has its ceilings);
# $OUT, the folder the results go to; WORK, where the collections are built (default: a new temporary
# folder). Outputs: $OUT/<MACHINE>-kill-resume.tgz with dataloader/<MACHINE>/ (the dataloader document) and
# kill/<MACHINE>/ (the resumed workload document, the partial one the kill left, the logs). About 8 minutes.
set -u
export PYTHONUNBUFFERED=1
MACHINE=${1:-h100-80gb}
OUT=${OUT:?OUT must name the folder the results go to}
WORK=${WORK:-$(mktemp -d)}
LOADER="$WORK/dataloader" KILL="$WORK/kill"
mkdir -p "$OUT" "$LOADER/$MACHINE" "$KILL/$MACHINE"
cp "results/$MACHINE/ceilings.json" "results/$MACHINE/environment.json" "$KILL/$MACHINE/"
S=$(date +%s)
timeout 260 python3 -m collectors --out "$LOADER" --machine "$MACHINE" --only dataloader --profile standard --budget none 2>&1 \
    | tr '\r' '\n' | grep -v "^dataloader  " | tail -4
D=$(date +%s); echo "dataloader wall $((D-S)) s"
python3 -m collectors --out "$KILL" --machine "$MACHINE" --only workloads --workload gpt-small --profile standard --budget none \
    > "$KILL/run1.log" 2>&1 &
P=$!; sleep 40; kill -9 $P; wait $P; echo "killed after 40 s, rc $?"
ls "$KILL/$MACHINE/"; echo "temp files left: $(ls -a "$KILL/$MACHINE" | grep -c tmp)"
cp "$KILL/$MACHINE/workload-gpt-small.json" "$KILL/partial.json"
R=$(date +%s)
timeout 150 python3 -m collectors --out "$KILL" --machine "$MACHINE" --only workloads --workload gpt-small \
    --profile standard --budget none 2>&1 | tr '\r' '\n' | grep -v "^workloads  " | tail -4
E=$(date +%s); echo "resume wall $((E-R)) s"
python3 - "$KILL/partial.json" "$KILL/$MACHINE/workload-gpt-small.json" <<'PY'
import json, sys
a, b = (json.load(open(path))['payload'] for path in sys.argv[1:3])
key = lambda p: (p['sweep'], p['precision'], p['batch'], p['variant'], p.get('seq_len'))
ka, kb = [key(p) for p in a['points']], [key(p) for p in b['points']]
print('partial complete', a['complete'], 'points', len(ka), '| final complete', b['complete'], 'points', len(kb))
print('finished points kept identical:', b['points'][:len(ka)] == a['points'], '| repeated keys:', len(kb) - len(set(kb)))
PY
tar czf "$OUT/$MACHINE-kill-resume.tgz" -C "$WORK" dataloader kill && ls -l "$OUT/$MACHINE-kill-resume.tgz"
