# H100 device script: the reliability paths on a real GPU.
#  1. Ctrl-C (SIGINT) in the middle of a gpt-small standard collection: exit 130 and the resume line;
#     the printed command resumes it; the points saved before the stop are kept identical.
#  2. A hung CUDA kernel (torch.cuda._sleep spinning for ever at batch 2, i.e. a step stuck in native
#     code that no Python exception can reach): --point-timeout 5 -> the watchdog ends the process
#     GRACE_S (60 s) after the limit with exit 124 and one line naming the point; batch 1 stays saved.
#  3. The same hang with the time limit in Python reach (time.sleep at batch 2): recorded as
#     "timed out after 5 s" and the collection finishes (exit 1: a failed benchmark to report).
export PYTHONUNBUFFERED=1
mkdir -p /tmp/i/h100-80gb /tmp/h
cp results/h100-80gb/ceilings.json results/h100-80gb/environment.json /tmp/i/h100-80gb/
python3 -m collectors --out /tmp/i --machine h100-80gb --only workloads --workload gpt-small --profile standard \
  > /tmp/i/run1.log 2>&1 &
P=$!; sleep 30; kill -INT $P; wait $P; echo "SIGINT after 30 s, rc $?"
grep -a "Ctrl-C\|Resume with" /tmp/i/run1.log
cp /tmp/i/h100-80gb/workload-gpt-small.json /tmp/i/partial.json
CMD=$(grep -a "Resume with the same command:" /tmp/i/run1.log | sed 's/.*Resume with the same command: //')
S=$(date +%s); timeout 200 $CMD > /tmp/i/run2.log 2>&1; echo "resume rc $? wall $(( $(date +%s)-S )) s"
python3 - <<'PY'
import json
a=json.load(open('/tmp/i/partial.json'))['payload']; b=json.load(open('/tmp/i/h100-80gb/workload-gpt-small.json'))['payload']
key=lambda p:(p['sweep'],p['precision'],p['batch'],p['variant'],p.get('seq_len'))
ka=[key(p) for p in a['points']]; kb=[key(p) for p in b['points']]
print('partial complete', a['complete'], 'points', len(ka), '| final complete', b['complete'], 'points', len(kb))
print('finished points kept identical:', b['points'][:len(ka)]==a['points'], '| repeated keys:', len(kb)-len(set(kb)))
PY
cat > /tmp/h/hang.py <<'PY'
import time
import torch

def _model(cuda_hang):
    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(64, 64)
        def forward(self, x):
            if x.shape[0] == 2:
                if cuda_hang:
                    torch.cuda._sleep(1 << 62)  # a kernel that spins for ever
                    torch.cuda.synchronize()
                else:
                    time.sleep(3600)
            return self.linear(x)
    return Step()

def _spec(name, cuda_hang):
    return {"name": name, "model": _model(cuda_hang), "loss": torch.nn.functional.mse_loss, "batch_start": 1,
            "make_batch": lambda n, d: (torch.randn(n, 64, device=d), torch.randn(n, 64, device=d))}

def cuda_hang():
    return _spec("cuda-hang", True)

def python_hang():
    return _spec("python-hang", False)
PY
S=$(date +%s)
timeout 300 python3 -m collectors --out /tmp/h --machine m --only workloads --workload /tmp/h/hang.py:cuda_hang \
  --profile standard --point-timeout 5 > /tmp/h/cuda.log 2>&1
echo "cuda hang: rc $? after $(( $(date +%s)-S )) s (expect 124 after ~65 s)"; grep -a "error:" /tmp/h/cuda.log
S=$(date +%s)
timeout 300 python3 -m collectors --out /tmp/h --machine m --only workloads --workload /tmp/h/hang.py:python_hang \
  --profile standard --point-timeout 5 > /tmp/h/python.log 2>&1
echo "python hang: rc $? after $(( $(date +%s)-S )) s (expect 1)"; grep -a -A4 "^Failed" /tmp/h/python.log
python3 - <<'PY'
import json
for name in ("cuda-hang", "python-hang"):
    try:
        p = json.load(open(f'/tmp/h/m/workload-{name}.json'))['payload']
    except FileNotFoundError:
        print(name, 'no document'); continue
    print(name, 'complete', p['complete'], [(x['sweep'], x['batch'], x['status'], x.get('reason')) for x in p['points']])
PY
tar czf $OUT/reliability.tgz -C /tmp i h
