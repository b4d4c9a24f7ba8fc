# H100 device script: the dataloader collection, then a workload collection killed with SIGKILL and resumed.
export PYTHONUNBUFFERED=1
mkdir -p /tmp/r/h100-80gb /tmp/k/h100-80gb
cp results/h100-80gb/ceilings.json results/h100-80gb/environment.json /tmp/k/h100-80gb/
S=$(date +%s)
timeout 260 python3 -m collectors --out /tmp/r --machine h100-80gb --only dataloader --profile standard 2>&1 | tr '\r' '\n' | grep -v "^dataloader  " | tail -4
D=$(date +%s); echo "dataloader wall $((D-S)) s"
python3 -m collectors --out /tmp/k --machine h100-80gb --only workloads --workload gpt-small --profile standard > /tmp/k/run1.log 2>&1 &
P=$!; sleep 40; kill -9 $P; wait $P; echo "killed after 40 s, rc $?"
ls /tmp/k/h100-80gb/; ls -a /tmp/k/h100-80gb | grep -c tmp || true
cp /tmp/k/h100-80gb/workload-gpt-small.json /tmp/k/partial.json
R=$(date +%s)
timeout 150 python3 -m collectors --out /tmp/k --machine h100-80gb --only workloads --workload gpt-small --profile standard 2>&1 | tr '\r' '\n' | grep -v "^workloads  " | tail -4
E=$(date +%s); echo "resume wall $((E-R)) s"
python3 - <<'PY'
import json
a=json.load(open('/tmp/k/partial.json'))['payload']; b=json.load(open('/tmp/k/h100-80gb/workload-gpt-small.json'))['payload']
key=lambda p:(p['sweep'],p['precision'],p['batch'],p['variant'],p.get('seq_len'))
ka=[key(p) for p in a['points']]; kb=[key(p) for p in b['points']]
print('partial complete', a['complete'], 'points', len(ka), '| final complete', b['complete'], 'points', len(kb))
print('finished points kept identical:', b['points'][:len(ka)]==a['points'], '| repeated keys:', len(kb)-len(set(kb)))
PY
tar czf $OUT/h100e.tgz -C /tmp r k
