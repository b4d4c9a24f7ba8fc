"""How far an OOM boundary moves between two collections on one GPU, with each allocator.

    python benchmarks/boundary_repeat.py             # committed results/ against benchmarks/boundary_repeat/

benchmarks/boundary_repeat/<machine>/workload-conv-rollout.json is a second `capacity` collection of
conv-rollout, made afresh on the same kind of device into another folder:
    OUT=... bash benchmarks/gpu_run.sh --machine MACHINE --tag again \
        --collect "420 --only workloads --workload conv-rollout --profile capacity"
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpuplan_schema.payloads import WorkloadPayload
from gpuplan_schema.schema import load_document

REPO = Path(__file__).resolve().parents[1]
REPEATS = REPO / "benchmarks" / "boundary_repeat"


def load(path: Path) -> WorkloadPayload:
    return load_document(path).payload


def rows(first: WorkloadPayload, second: WorkloadPayload) -> list[str]:
    out = []
    for b in first.boundaries:
        again = second.boundary(b.precision, b.allocator)
        if b.max_batch and again and again.max_batch:
            moved = again.max_batch / b.max_batch - 1
            out.append(f"| {first.workload} | {b.precision} | {b.allocator} | {b.max_batch} | {again.max_batch} "
                       f"| {moved:+.1%} |")
    return out


def main() -> int:
    print("| machine | workload | precision | allocator | first | second | moved |\n|---|---|---|---|---|---|---|")
    for folder in sorted(p for p in REPEATS.iterdir() if p.is_dir()):
        for repeat in sorted(folder.glob("workload-*.json")):
            first = load(REPO / "results" / folder.name / repeat.name)
            for line in rows(first, load(repeat)):
                print(f"| {folder.name} {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
