"""`gpuplan fleet slurm|k8s`: the arguments and the command (registered by planner/cli.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from planner.fleet.slurm import FleetError, FleetJob, submit, write_scripts


def add_fleet(sub: Any) -> None:
    p = sub.add_parser("fleet", help="collect many machines through a scheduler: a Slurm array job or a "
                                     "Kubernetes Indexed Job, into one shared results root",
                       description="Write (and with --submit, submit) the jobs that collect every node.")
    kinds = p.add_subparsers(dest="scheduler", metavar="SCHEDULER", required=True)
    for name, helptext in (("slurm", "an sbatch array (one task per node) + an afterok job running gpuplan site"),
                           ("k8s", "a Kubernetes Indexed Job manifest (completionMode: Indexed, a shared PVC)")):
        k = kinds.add_parser(name, help=helptext, description=helptext[0].upper() + helptext[1:] + ".")
        k.add_argument("--nodes", type=int, required=True, metavar="N", help="machines to collect")
        k.add_argument("--out", type=Path, default=Path("results"), help="the shared results root (default results/)")
        k.add_argument("--profile", default="quick", help="collection profile (default quick)")
        k.add_argument("--only", nargs="+", default=[], metavar="COLLECTOR", help="collectors to run (default all)")
        k.set_defaults(func=cmd_fleet)
        if name == "slurm":
            k.add_argument("--partition", metavar="P")
            k.add_argument("--time", default="01:00:00", help="each task's time limit (default 01:00:00)")
            k.add_argument("--scripts", type=Path, default=Path("fleet"), help="where the sbatch files go")
            k.add_argument("--task-ids", action="store_true",
                           help="machine id host-taskN (several tasks on one host), not the host name alone")
            k.add_argument("--no-pdf", dest="pdf", action="store_false", help="the site without PDFs")
            k.add_argument("--submit", action="store_true", help="submit both jobs with sbatch; prints their ids")
        else:
            k.add_argument("--image", required=True, help="a container image with gpuplan and torch")
            k.add_argument("--claim", default="gpuplan-results", help="the ReadWriteMany PVC holding the root")
            k.add_argument("--gpus-per-node", type=int, default=8)
            k.add_argument("--manifest", type=Path, default=Path("fleet/indexed-job.yaml"))


def cmd_fleet(args: argparse.Namespace) -> int:
    try:
        return _slurm(args) if args.scheduler == "slurm" else _k8s(args)
    except FleetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _slurm(args: argparse.Namespace) -> int:
    job = FleetJob(args.nodes, args.out.resolve(), args.profile, tuple(args.only), args.partition, args.time,
                   task_ids=args.task_ids, pdf=args.pdf, logs=args.scripts.resolve())
    collect, site = write_scripts(job, args.scripts)
    print(f"wrote {collect} (array 0-{job.nodes - 1}, into {job.out}) and {site} (afterok, site in {job.site})")
    if args.submit:
        array_id, site_id = submit(collect, site)
        print(f"submitted: collect array job {array_id}, site job {site_id} (after the array succeeds)")
    return 0


def _k8s(args: argparse.Namespace) -> int:
    from planner.fleet.k8s import render_indexed_job
    from planner.fleet.slurm import check

    job = FleetJob(args.nodes, Path("/results"), args.profile, tuple(args.only))
    check(job)
    args.manifest.parent.mkdir(parents=True, exist_ok=True)
    args.manifest.write_text(render_indexed_job(job, args.image, args.claim, args.gpus_per_node))
    print(f"wrote {args.manifest}: kubectl apply -f {args.manifest}, then gpuplan site on the claim's root")
    return 0
