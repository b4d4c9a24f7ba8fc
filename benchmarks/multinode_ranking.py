"""The docs' ranking across node counts (docs/multinode.md):

    PYTHONPATH=. python benchmarks/multinode_ranking.py "gpt-small bf16 tokens=300B"

Per-GPU throughput predicted from results/h100-80gb (the plan's predictor), one-node efficiency from
the measured DDP runs (results/h200-x2, h200-x4), the network factor from results/h200-x4's collectives
and ddp (bus bandwidth, fitted exposed fraction) and the catalog's network per instance.
"""

from __future__ import annotations

import sys

from gpuplan_schema.results import load_results_root
from planner.model.jobs import parse_job
from planner.model.network import NET_EFFICIENCY
from planner.model.nodes import build_node_ranking, measured_node, node_inputs
from planner.model.plan import build_predictor, load_source
from planner.model.ranking import OK
from planner.model.scaling import build_scaling, gather_efficiencies


def main(spec: str, source: str = "h100-80gb") -> None:
    machines = {m.machine: m for m in load_results_root("results")}
    job = parse_job(spec)
    measured = measured_node(machines.values())
    inputs = node_inputs(measured, job.workload)
    rows = build_node_ranking(job, build_predictor(load_source(machines[source]), job), machines.values(),
                              scaling=build_scaling(gather_efficiencies(machines.values())))
    print(f"job: {spec}; gradient {inputs.parameters * 4 / 1e6:.0f} MB fp32; exposed fraction k = "
          f"{inputs.exposed_fraction:.2f} (fitted on {measured.collectives.world_size} × {measured.gpu}); "
          f"NCCL reaches {NET_EFFICIENCY:.0%} of the NIC rate")
    print("| instance | nodes | GPUs | network/node | efficiency | hours | cost USD | |")
    print("|---|---:|---:|---|---:|---:|---:|---|")
    for r in sorted((r for r in rows if r.ranked.status == OK and r.base in BASES), key=lambda r: (r.base, r.nodes)):
        mark = "adding nodes stops paying" if r.knee else ""
        print(f"| {r.base} | {r.nodes} | {r.gpus_total} | {r.network} | {r.ranked.scaling_efficiency:.3f} | "
              f"{r.ranked.hours:.1f} | {r.ranked.cost_usd:,.0f} | {mark} |")


BASES = ("p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "a3-highgpu-8g", "a3-ultragpu-8g",
         "Standard_ND96isr_H100_v5", "Standard_ND96asr_v4", "g6e.48xlarge")

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpt-small bf16 tokens=300B")
