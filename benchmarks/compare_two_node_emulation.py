"""The two-node emulation's validation: predict run B's DDP step (e.g. sockets) from run A's (e.g. NVLink)
and B's measured all-reduce bandwidth; print the transports both runs recorded and the error.

    PYTHONPATH=. python benchmarks/compare_two_node_emulation.py RUN_A_FOLDER RUN_B_FOLDER

(benchmarks/gpu_two_node_emulation.sh runs both collections and this.)

The same comparison runs on the CPU (gloo, two nodes on loopback) in tests/test_multinode.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpuplan_schema.schema import load_document
from planner.scaling.network import validate_transfer


def describe(folder: Path) -> tuple:
    ddp, coll = (load_document(folder / f"{n}.json").payload for n in ("ddp", "collectives"))
    nodes = coll.launch.nodes
    where = f"{nodes.nodes} nodes × {nodes.gpus_per_node}, between nodes {nodes.transport} ({nodes.transport_source})" \
        if nodes else "one node"
    print(f"{folder.name}: {coll.backend}, {where}")
    return ddp, coll


def main(a: str, b: str) -> int:
    ddp_a, coll_a = describe(Path(a))
    ddp_b, coll_b = describe(Path(b))
    checks = validate_transfer(ddp_a, coll_a, ddp_b, coll_b)
    if not checks:
        print("no workload measured on 2 ranks in both runs")
        return 1
    print("| workload | k (A) | A busbw GB/s | B busbw GB/s | predicted B step ms | measured B step ms | error | "
          "error from B's own compute |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for c in checks:
        print(f"| {c.workload} | {c.exposed_fraction:.2f} | {c.link_a.bytes_per_s / 1e9:.3g} | "
              f"{c.link_b.bytes_per_s / 1e9:.3g} | {c.predicted_step_s * 1e3:.2f} | {c.measured_step_s * 1e3:.2f} | "
              f"{c.error:+.1%} | {c.error_own_compute:+.1%} |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: compare_two_node_emulation.py RUN_A_FOLDER RUN_B_FOLDER")
    sys.exit(main(sys.argv[1], sys.argv[2]))
