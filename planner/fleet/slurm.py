"""`gpuplan fleet slurm`: an sbatch array job, one task per node, each running `gpuplan collect` into its
own folder of a shared results root, and a second job, afterok on the whole array, that runs `gpuplan site`.

    #SBATCH --array=0-(N-1)      one task per node (--exclusive spreads them over N nodes)
    gpuplan collect --machine "$(hostname -s)" --out ROOT      (the machine id derives from the host)
    sbatch --dependency=afterok:<array job id> site.sbatch      gpuplan site ROOT

With --submit both are submitted through `sbatch --parsable` and their job ids printed.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_NODES = 10000


class FleetError(ValueError):
    """Bad fleet options or a failed submission; one line for the user, exit 2."""


@dataclass(frozen=True)
class FleetJob:
    nodes: int
    out: Path                  # the shared results root, as every node sees it
    profile: str = "quick"
    only: tuple[str, ...] = ()
    partition: str | None = None
    time_limit: str = "01:00:00"
    gpuplan: str = f"{sys.executable} -m planner.cli"   # how a node starts gpuplan
    task_ids: bool = False     # machine id = host-taskN: several tasks on one host (tests, a single box)
    extra: tuple[str, ...] = ()  # more `gpuplan collect` options, passed as given
    pdf: bool = True           # the site job renders a PDF per machine
    logs: Path = Path("fleet")  # the tasks' logs (outside the results root: every folder there is a machine)

    @property
    def site(self) -> Path:
        return self.out.parent / f"{self.out.name}-site"


def check(job: FleetJob) -> None:
    if not 1 <= job.nodes <= MAX_NODES:
        raise FleetError(f"--nodes {job.nodes}: expected 1..{MAX_NODES}")
    if job.partition is not None and not job.partition.replace("-", "").replace("_", "").isalnum():
        raise FleetError(f"--partition {job.partition!r}: letters, digits, '-' and '_' only")


def _header(name: str, job: FleetJob, log: str) -> list[str]:
    lines = ["#!/bin/bash", f"#SBATCH --job-name={name}", f"#SBATCH --time={job.time_limit}",
             f"#SBATCH --output={job.logs.resolve() / log}"]
    return lines + ([f"#SBATCH --partition={job.partition}"] if job.partition else [])


def render_collect(job: FleetJob) -> str:
    machine = '"$(hostname -s)-task${SLURM_ARRAY_TASK_ID}"' if job.task_ids else '"$(hostname -s)"'
    options = ["--profile", job.profile, *(["--only", *job.only] if job.only else []), *job.extra]
    lines = _header("gpuplan-collect", job, "collect-%A_%a.log") + [
        f"#SBATCH --array=0-{job.nodes - 1}", "#SBATCH --nodes=1", "#SBATCH --ntasks=1",
        *([] if job.task_ids else ["#SBATCH --exclusive"]),
        "set -euo pipefail",
        "# One folder per node in the shared root; the collector's lock keeps two runs out of one folder.",
        f"exec {job.gpuplan} collect --machine {machine} --out {shlex.quote(str(job.out))} "
        + " ".join(shlex.quote(o) for o in options),
    ]
    return "\n".join(lines) + "\n"


def render_site(job: FleetJob) -> str:
    site = job.site
    lines = _header("gpuplan-site", job, "site-%j.log") + [
        "#SBATCH --nodes=1", "#SBATCH --ntasks=1", "set -euo pipefail",
        f"exec {job.gpuplan} site {shlex.quote(str(job.out))} --out {shlex.quote(str(site))}"
        + ("" if job.pdf else " --no-pdf"),
    ]
    return "\n".join(lines) + "\n"


def write_scripts(job: FleetJob, folder: Path) -> tuple[Path, Path]:
    check(job)
    folder.mkdir(parents=True, exist_ok=True)
    job.out.mkdir(parents=True, exist_ok=True)
    job.logs.mkdir(parents=True, exist_ok=True)
    collect, site = folder / "collect.sbatch", folder / "site.sbatch"
    collect.write_text(render_collect(job))
    site.write_text(render_site(job))
    return collect, site


def submit(collect: Path, site: Path, sbatch: str = "sbatch") -> tuple[str, str]:
    """(array job id, site job id): the site job waits for every array task to succeed (afterok)."""
    array_id = _sbatch([sbatch, "--parsable", str(collect)])
    site_id = _sbatch([sbatch, "--parsable", f"--dependency=afterok:{array_id}", str(site)])
    return array_id, site_id


def _sbatch(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise FleetError(f"{command[0]}: not found; is this a Slurm login node?") from None
    except subprocess.TimeoutExpired:
        raise FleetError(f"{command[0]}: no answer in 60 s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise FleetError(f"sbatch refused {command[-1]}: {last}")
    return done.stdout.strip().split(";")[0]
