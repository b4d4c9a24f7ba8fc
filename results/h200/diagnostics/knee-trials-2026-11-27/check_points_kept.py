import json, sys
runs = {"k1": ["resnet50", "mlp-stgan", "bert-base-squad", "gnmt", "dlrm-small"],
        "k2": ["ssd300", "vit-b16", "vit-tiny", "sensor-cnn"],
        "k3": ["bert-large-squad", "gpt-small", "transformer-xl-base"]}
def canon(x): return json.dumps(x, sort_keys=True)
ok_all = True
rows = []
for run, names in runs.items():
    for n in names:
        old = json.load(open(f"/work/main/results/h200/workload-{n}.json"))
        new = json.load(open(f"{run}/h200/workload-{n}.json"))
        op, np_ = old["payload"], new["payload"]
        olds = [canon(p) for p in op["points"]]
        news = [canon(p) for p in np_["points"]]
        missing = [p for p in olds if p not in news]
        ob = [canon(b) for b in op.get("boundaries", [])]; nb = [canon(b) for b in np_.get("boundaries", [])]
        bmiss = [b for b in ob if b not in nb]
        # other payload keys
        other = {k for k in set(op) | set(np_) if k not in ("points", "boundaries") and canon(op.get(k)) != canon(np_.get(k))}
        added = [p for p in np_["points"] if canon(p) not in olds]
        ok = not missing and not bmiss
        ok_all &= ok
        print(f"{n:20s} old points {len(olds)} kept {len(olds)-len(missing)} | boundaries {len(ob)} kept {len(ob)-len(bmiss)} | added {len(added)} | other keys changed: {sorted(other)} | collector {old['collector']} -> {new['collector']}")
        for p in added:
            print(f"     + {p.get('sweep')} {p['precision']} {p['variant']} b{p['batch']} {p['status']} {p.get('throughput_per_s') and round(p['throughput_per_s'],1)}")
print("ALL KEPT" if ok_all else "SOMETHING CHANGED")
