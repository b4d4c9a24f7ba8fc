"""benchmarks/dle_points.py on the CPU (the path only: the tiny SSD300, bf16 for fp16, batch 2): it times a
configuration in the layout the plan names, profiles it in that layout, resumes without touching what it has, and
refuses to add to points of another GPU type."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from paths import FROZEN, REPO

from gpuplan_schema.results import load_machine

SCRIPT = REPO / "benchmarks" / "dle_points.py"


def _plan(tmp_path):
    config = {"model": "ssd300", "spec": "examples/ssd300.py:build", "tiny": "examples/ssd300.py:build_tiny",
              "precision": "fp16", "batch": 64, "layout": "channels_last", "profile": True,
              "rows": ["dle-ssd300: V100 SXM2 16GB amp"]}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"kind": "dle_points_plan", "configs": [config]}))
    return path


def _run(tmp_path, out):
    return subprocess.run([sys.executable, str(SCRIPT), "--machine-dir", str(FROZEN / "h100-80gb"), "--out", str(out),
                           "--plan", str(_plan(tmp_path))], cwd=REPO, capture_output=True, text=True, timeout=600)


def test_dle_points_times_profiles_and_resumes(tmp_path):
    out = tmp_path / "dle-points"
    first = _run(tmp_path, out)
    assert first.returncode == 0, first.stderr[-2000:]
    measured = load_machine(out)  # every document passes the schema, one machine id
    assert measured.machine == "h100-80gb"
    (payload,) = measured.workloads
    (point,) = payload.points
    assert (point.status, point.precision, point.batch, point.variant) == ("ok", "bf16", 2,
                                                                           "channels_last+no_cudnn_benchmark")
    roofline = load_machine(out).documents["roofline-ssd300-cpu-bf16-channels_last"].payload
    assert roofline.status == "ok" and roofline.variant == "channels_last+no_cudnn_benchmark"
    kept = (out / "workload-ssd300-cpu.json").read_text()
    profile = (out / "roofline-ssd300-cpu-bf16-channels_last.json").read_bytes()

    second = _run(tmp_path, out)
    assert second.returncode == 0 and "(kept)" in second.stdout and "kept (batches [2] profiled)" in second.stdout
    assert _points(out) == json.loads(kept)["payload"]["points"]
    assert (out / "roofline-ssd300-cpu-bf16-channels_last.json").read_bytes() == profile

    env = json.loads((out / "environment.json").read_text())
    env["payload"]["gpus"] = json.loads((FROZEN / "h200" / "environment.json").read_text())["payload"]["gpus"]
    (out / "environment.json").write_text(json.dumps(env))
    third = _run(tmp_path, out)
    assert third.returncode == 2 and "give another --out" in third.stderr
    assert _points(out) == json.loads(kept)["payload"]["points"]


def _points(out):
    return json.loads((out / "workload-ssd300-cpu.json").read_text())["payload"]["points"]


def test_the_gpu_call_packs_one_tarball_of_the_machines_dle_points(tmp_path):
    """benchmarks/gpu_dle_points.sh on the CPU with a one-configuration plan (the tiny GNMT): one tarball that unpacks
    under results/ as <machine>/diagnostics/dle-points/; without --machine a CPU has no folder to go to (exit 2)."""
    plan = tmp_path / "plan.json"
    config = {"model": "gnmt", "spec": "examples/gnmt.py:build", "tiny": "examples/gnmt.py:build_tiny",
              "precision": "fp16", "batch": 128, "layout": "n/a", "profile": False, "rows": ["dle-gnmt: x"]}
    plan.write_text(json.dumps({"kind": "dle_points_plan", "configs": [config]}))
    env = {**os.environ, "OUT": str(tmp_path / "out"), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    script = str(REPO / "benchmarks" / "gpu_dle_points.sh")
    done = subprocess.run(["bash", script, "--machine", "h100-80gb", "--", "--plan", str(plan)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with tarfile.open(tmp_path / "out" / "h100-80gb-dle-points.tgz") as tar:
        names = set(tar.getnames())
    folder = "h100-80gb/diagnostics/dle-points"
    assert {f"{folder}/{n}" for n in ("environment.json", "workload-gnmt-cpu.json", "log.txt", "summary.txt")} <= names
    refused = subprocess.run(["bash", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "give --machine" in refused.stderr
