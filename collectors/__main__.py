"""`python -m collectors` (and `gpuplan collect`): run the collectors, write one document each.

Needs only torch, nvidia-ml-py (optional) and the standard library.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from collectors import ceilings, environment
from collectors.machine import default_machine_id, sanitize_machine_id
from collectors.progress import Progress
from collectors.schema import build_document, save_document


@dataclass(frozen=True)
class Collector:
    name: str
    version: str
    run: Callable[[Progress], Any]
    help: str


COLLECTORS = {
    c.name: c
    for c in (
        Collector(environment.NAME, environment.VERSION, lambda p: environment.collect_environment(),
                  "machine fingerprint: OS, CPU, RAM, versions, each GPU through NVML"),
        Collector(ceilings.NAME, ceilings.VERSION, lambda p: ceilings.collect_ceilings(p),
                  "hardware roofs: matmul per dtype, memory and host-device bandwidth, launch latency"),
    )
}


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="python -m collectors")
    parser.description = (
        "Measure this machine and write one JSON document per collector into OUT/MACHINE/. "
        "Collectors: " + "; ".join(f"{c.name} ({c.help})" for c in COLLECTORS.values()) + "."
    )
    parser.add_argument("--out", type=Path, default=Path("results"), help="results root (default: results/)")
    parser.add_argument("--machine", help="machine id for the folder name (default: hostname + GPU model + count)")
    parser.add_argument("--only", nargs="+", choices=sorted(COLLECTORS), metavar="NAME",
                        help=f"run only these collectors ({', '.join(COLLECTORS)})")
    return parser


def run_collection(out: Path, machine: str | None, only: list[str] | None) -> tuple[Path, list[str]]:
    """Run the chosen collectors; returns the machine folder and one summary line per collector."""
    machine_id = sanitize_machine_id(machine) if machine else default_machine_id()
    folder = out / machine_id
    lines = []
    for name in only or list(COLLECTORS):
        c = COLLECTORS[name]
        started = time.perf_counter()
        with Progress(name, total=1) as progress:
            payload = c.run(progress)
            progress.advance("done")
        path = save_document(build_document(c.name, c.name, c.version, machine_id, payload), folder / f"{name}.json")
        lines.append(f"{name:<12} {time.perf_counter() - started:6.1f}s  {path}  {summary_of(payload)}")
    return folder, lines


def summary_of(payload: Any) -> str:
    if isinstance(payload, environment.EnvironmentPayload):
        gpus = ", ".join(g.name for g in payload.gpus) or f"no GPU ({payload.gpu_absent_reason})"
        return f"{payload.cpu.model}; {gpus}"
    if isinstance(payload, ceilings.CeilingsPayload):
        parts = [f"{m.dtype} {m.flops_per_s.median / 1e12:.3g} TFLOP/s" for m in payload.matmul if m.flops_per_s]
        parts += [f"{b.name} {b.bytes_per_s.median / 1e9:.4g} GB/s" for b in payload.memory if b.bytes_per_s]
        return "; ".join(parts)
    return ""


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    folder, lines = run_collection(args.out, args.machine, args.only)
    print(f"\nCollected into {folder}:")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
