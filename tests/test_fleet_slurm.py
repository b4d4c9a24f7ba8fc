"""`gpuplan fleet slurm` for real: slurmctld and slurmd (Debian's slurm-wlm) on this host, started and stopped
by the test, run the array of CPU collections
(environment only: a CPU ceilings run takes minutes on 2 shared cores) and, after it, the site job."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from paths import REPO

from planner.cli import main as gpuplan

DAEMONS = ("slurmctld", "slurmd", "sbatch", "squeue")
PLUGINS = Path("/usr/lib/x86_64-linux-gnu/slurm-wlm")



def _missing() -> str | None:
    absent = [d for d in DAEMONS if shutil.which(d) is None and not Path(f"/usr/sbin/{d}").exists()]
    if absent:
        return f"{', '.join(absent)} not installed (apt-get install slurm-wlm; the Makefile's APT_PACKAGES has it)"
    if not (PLUGINS / "auth_none.so").exists():
        return "this slurm build has no auth/none plugin; the test would need munged and a key"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs as their user"
    return None


def _conf(folder: Path, host: str, port: int) -> Path:
    """A one-node cluster on this host; auth/none: nothing leaves loopback and no munge key is needed."""
    for d in ("state", "spool"):
        (folder / d).mkdir()
    conf = folder / "slurm.conf"
    conf.write_text(f"""ClusterName=gpuplantest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={port}
SlurmdPort={port + 1}
SlurmUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation={folder / 'state'}
SlurmdSpoolDir={folder / 'spool'}
SlurmctldPidFile={folder / 'slurmctld.pid'}
SlurmdPidFile={folder / 'slurmd.pid'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
NodeName={host} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
    return conf


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    reason = _missing()
    if reason:
        pytest.skip(reason)
    host = socket.gethostname().split(".")[0]
    conf = _conf(tmp_path, host, _free_port())
    env = dict(os.environ, SLURM_CONF=str(conf))
    monkeypatch.setenv("SLURM_CONF", str(conf))
    daemons = [subprocess.Popen([d, "-D", "-f" if d == "slurmctld" else "-f", str(conf)], env=env,
                                stdout=open(tmp_path / f"{d}.log", "w"), stderr=subprocess.STDOUT)
               for d in ("slurmctld", "slurmd")]
    try:
        _wait(lambda: "idle" in _run(["sinfo", "-h", "-o", "%T"], env), 30, "the node never became idle", tmp_path)
        yield env
    finally:
        _run(["scancel", "--full", "--partition", "debug"], env)  # this test cluster's jobs, before its daemons
        time.sleep(1)
        for d in daemons:  # only the processes this test started, by their own handles
            d.terminate()
        for d in daemons:
            try:
                d.wait(timeout=15)
            except subprocess.TimeoutExpired:
                d.kill()


def _run(command: list[str], env: dict) -> str:
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=30).stdout


def _wait(done, timeout_s: float, what: str, logs: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(1)
    tails = {p.name: p.read_text()[-1500:] for p in logs.glob("*.log")}
    raise AssertionError(f"{what} in {timeout_s:.0f} s; logs: {tails}")


@pytest.mark.slow
def test_array_collects_every_task_into_its_folder_then_the_site_is_built(cluster, tmp_path, capsys):
    out, scripts = tmp_path / "root" / "results", tmp_path / "scripts"
    cluster["PYTHONPATH"] = str(REPO)
    os.environ["PYTHONPATH"] = str(REPO)  # sbatch exports the submitting environment to the tasks
    code = gpuplan(["fleet", "slurm", "--nodes", "2", "--out", str(out), "--scripts", str(scripts),
                    "--profile", "quick", "--only", "environment", "--task-ids", "--no-pdf",
                    "--time", "00:05:00", "--submit"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "submitted: collect array job" in printed
    site = out.parent / "results-site" / "index.html"
    _wait(lambda: site.exists() and not _run(["squeue", "-h"], cluster).strip(), 170, "the site job never finished",
          scripts)
    host = socket.gethostname().split(".")[0]
    folders = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert folders == [f"{host}-task0", f"{host}-task1"]
    for f in folders:
        assert (out / f / "environment.json").exists()
    assert all(f in site.read_text() for f in folders)


def test_bad_node_count_is_one_line_and_exit_2(capsys):
    assert gpuplan(["fleet", "slurm", "--nodes", "0"]) == 2
    assert capsys.readouterr().err.strip() == "error: --nodes 0: expected 1..10000"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_the_sbatch_files_hold_one_task_per_node_and_the_site_after_them(tmp_path, capsys):
    out = tmp_path / "results"
    assert gpuplan(["fleet", "slurm", "--nodes", "16", "--out", str(out), "--scripts", str(tmp_path / "s"),
                    "--partition", "gpu", "--only", "collectives", "ddp"]) == 0
    collect = (tmp_path / "s" / "collect.sbatch").read_text()
    assert "#SBATCH --array=0-15\n" in collect and "#SBATCH --exclusive\n" in collect
    assert "#SBATCH --partition=gpu\n" in collect
    assert f'collect --machine "$(hostname -s)" --out {out} --profile quick --only collectives ddp\n' in collect
    site = (tmp_path / "s" / "site.sbatch").read_text()
    assert f"site {out} --out {tmp_path / 'results-site'}\n" in site
    assert "array 0-15" in capsys.readouterr().out


def test_the_kubernetes_manifest_is_an_indexed_job_on_a_shared_claim(tmp_path, capsys):
    manifest = tmp_path / "job.yaml"
    assert gpuplan(["fleet", "k8s", "--nodes", "4", "--image", "registry/gpuplan:1", "--manifest", str(manifest),
                    "--claim", "results-rwx"]) == 0
    text = manifest.read_text()
    for line in ("completionMode: Indexed", "completions: 4", "parallelism: 4", 'image: "registry/gpuplan:1"',
                 'claimName: "results-rwx"', "fieldPath: spec.nodeName", "topologyKey: kubernetes.io/hostname",
                 "nvidia.com/gpu: 8"):
        assert line in text, line
    assert gpuplan(["fleet", "k8s", "--nodes", "4", "--image", "x", "--gpus-per-node", "0"]) == 2
    assert capsys.readouterr().err.strip() == "error: --gpus-per-node 0: expected 1..64"
