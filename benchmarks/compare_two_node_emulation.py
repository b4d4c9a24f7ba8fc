"""The two-node emulation's validation: predict run B's DDP step (e.g. sockets) from run A's (e.g. NVLink)
and B's measured all-reduce, and each all_reduce size against the model's two-term link; print the transports
both runs recorded and the errors (planner/scaling/transfer.py).

    PYTHONPATH=. python benchmarks/compare_two_node_emulation.py RUN_A_FOLDER RUN_B_FOLDER

(benchmarks/gpu_two_node_emulation.sh runs both collections and this; docs/multinode.md shows the same tables
for the committed runs, generated.) The same comparison runs on the CPU (gloo, two nodes on loopback) in
tests/test_multinode.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpuplan_schema.schema import DocumentError, load_document
from planner.render.two_node import render_sizes_markdown, render_transfer_markdown
from planner.scaling.transfer import check_sizes, validate_transfer


def describe(folder: Path) -> tuple:
    ddp, coll = (load_document(folder / f"{n}.json").payload for n in ("ddp", "collectives"))
    nodes = coll.launch.nodes
    where = f"{nodes.nodes} nodes × {nodes.gpus_per_node}, between nodes {nodes.transport} ({nodes.transport_source})" \
        if nodes else "one node"
    print(f"{folder.name}: {coll.backend}, {where}")
    return ddp, coll


def main(a: str, b: str) -> int:
    try:
        ddp_a, coll_a = describe(Path(a))
        ddp_b, coll_b = describe(Path(b))
    except DocumentError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows = [(Path(a).name, Path(b).name, validate_transfer(ddp_a, coll_a, ddp_b, coll_b)),
            (Path(b).name, Path(a).name, validate_transfer(ddp_b, coll_b, ddp_a, coll_a))]
    if not any(checks for _, _, checks in rows):
        print("no workload measured on 2 ranks in both runs")
        return 1
    print("\nDDP step, each run predicted from the other:\n")
    print(render_transfer_markdown(rows))
    print("all_reduce at each size, against α + 2(n−1)/n · size / B read off each run's own ends:\n")
    print(render_sizes_markdown([(Path(a).name, check_sizes(coll_a)), (Path(b).name, check_sizes(coll_b))]))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: compare_two_node_emulation.py RUN_A_FOLDER RUN_B_FOLDER")
    sys.exit(main(sys.argv[1], sys.argv[2]))
