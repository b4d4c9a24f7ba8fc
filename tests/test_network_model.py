"""The network model (planner/scaling/network.py), the catalog's network per instance and the ranking by
nodes (planner/rank/nodes.py), against hand-computed figures and the committed H200 measurements."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from paths import FROZEN, REPO

from gpuplan_schema.schema import load_document
from planner.rank.jobs import parse_job
from planner.rank.nodes import MIN_EFFICIENCY, NetworkInputs, expand_nodes, node_inputs
from planner.rank.ranking import Estimate
from planner.scaling.network import Link, MeasuredNode, all_reduce_time, ddp_efficiency, fit_overlap, network_link
from planner.specs import CatalogError, load_instances, match_instance, read_instances

X4 = FROZEN / "h200-x4"


def test_hierarchical_all_reduce_matches_the_formula_by_hand():
    intra, net = Link(100e9, 5e-6), Link(50e9, 20e-6)
    t = all_reduce_time(4, 8, 100 << 20, intra, net, bucket_bytes=25 << 20)  # 4 buckets
    s = 100 * 2**20
    assert t.intra_s == pytest.approx(2 * 7 / 8 * s / 100e9)
    assert t.inter_s == pytest.approx(2 * 3 / 4 * s / 50e9)
    assert t.latency_s == pytest.approx(4 * (2 * 7 * 5e-6 + 2 * 3 * 20e-6))
    one = all_reduce_time(1, 8, s, intra, None)
    assert one.inter_s == 0 and ddp_efficiency(0.1, one, 1.0) == pytest.approx(0.1 / (0.1 + one.total_s))
    with pytest.raises(ValueError):
        all_reduce_time(2, 8, s, intra, None)


def test_overlap_is_fitted_from_the_measured_four_gpu_ddp_run():
    fit = fit_overlap(load_document(X4 / "ddp.json").payload, load_document(X4 / "collectives.json").payload)
    assert {(w, g) for w, g, _ in fit.points} == {("gpt-small", 2), ("gpt-small", 4), ("resnet50", 2), ("resnet50", 4)}
    # gpt-small's exposed all-reduce time is about the modelled one (0.6–1.0), resnet50's small gradient
    # exposes fixed DDP costs far above it: each workload keeps its own k.
    assert 0.5 < fit.for_workload("gpt-small") < 1.1 and fit.for_workload("resnet50") > 2


def test_every_multi_gpu_instance_names_its_network_with_a_source():
    for spec in load_instances():
        if spec.gpu_count > 1 and spec.provider != "azure" or spec.name.startswith("Standard_ND"):
            assert spec.network is not None, spec.name
        if spec.network:
            assert spec.network.source.startswith("https://") and spec.network.bytes_per_s > 0
        if spec.gpu_count == 1:
            assert not spec.multi_node
    assert match_instance("p5.48xlarge").network.bytes_per_s == 3200e9 / 8
    assert match_instance("a3-highgpu-8g").network.technology == "GPUDirect-TCPX"
    assert match_instance("ND96isr_H100_v5").network.links == "8 × 400 Gbps NDR"


@pytest.mark.parametrize("network, message", [
    ({"technology": "Myrinet", "bytes_per_s": 1e9, "links": "x", "multi_node": True, "source": "https://a"},
     "instances[0].network.technology: must be one of EFA"),
    ({"technology": "EFA", "bytes_per_s": 0, "links": "x", "multi_node": True, "source": "https://a"},
     "instances[0].network.bytes_per_s: must be a number > 0"),
    ({"technology": "EFA", "bytes_per_s": 1e9, "links": "x", "multi_node": "yes", "source": "https://a"},
     "instances[0].network.multi_node: must be true or false"),
    ({"technology": "EFA", "bytes_per_s": 1e9, "links": "x", "multi_node": True},
     "instances[0].network: missing source"),
    ("fast", "instances[0].network: must be an object"),
])
def test_a_bad_network_entry_names_its_field(tmp_path, network, message):
    entry = json.loads((REPO / "planner" / "specs" / "instances.json").read_text())["instances"]
    p5 = next(e for e in entry if e["name"] == "p5.48xlarge")
    path = tmp_path / "instances.json"
    path.write_text(json.dumps({"instances": [dict(p5, network=network)]}))
    with pytest.raises(CatalogError) as raised:
        read_instances(path)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def _predict(gpu):  # one fixed per-GPU figure: the ranking's differences are then the network's alone
    return Estimate(200.0, 32, 64, "fixed for the test")


def test_ranking_by_nodes_doubles_nodes_and_marks_where_adding_stops_paying():
    job = parse_job("gpt-small bf16 tokens=300B")
    intra = Link(150e9, 7e-6)
    inputs = NetworkInputs(163_037_184, 0.8, {}, intra)
    slow = replace(match_instance("p4d.24xlarge"), name="slow-net",
                   network=replace(match_instance("p4d.24xlarge").network, bytes_per_s=1e9))
    rows = expand_nodes(job, _predict, inputs, instances=(match_instance("p5.48xlarge"), slow,
                                                          match_instance("g2-standard-96")))
    p5 = sorted((r for r in rows if r.base == "p5.48xlarge"), key=lambda r: r.nodes)
    assert [r.nodes for r in p5] == [1, 2, 4, 8, 16] and [r.gpus_total for r in p5] == [8, 16, 32, 64, 128]
    assert p5[1].ranked.price_usd_per_hour == pytest.approx(2 * p5[0].ranked.price_usd_per_hour)
    assert all(a.ranked.scaling_efficiency > b.ranked.scaling_efficiency for a, b in zip(p5, p5[1:], strict=False))
    assert not any(r.knee for r in p5) and p5[0].network == "3200 Gb/s EFA"
    # 1 GB/s per node: two nodes already cost more than they save; the list stops at that row.
    slow_rows = sorted((r for r in rows if r.base == "slow-net"), key=lambda r: r.nodes)
    assert [(r.nodes, r.knee) for r in slow_rows] == [(1, False), (2, True)]
    one, two = slow_rows[0].ranked, slow_rows[1].ranked
    assert two.scaling_efficiency < MIN_EFFICIENCY or two.cost_usd / one.cost_usd - 1 > 1 - two.hours / one.hours
    assert [r.nodes for r in rows if r.base == "g2-standard-96"] == [1]  # Ethernet, not for multi-node
    d = p5[2].to_dict()
    assert (d["nodes"], d["gpus_total"], d["network"], d["base_instance"]) == (4, 32, "3200 Gb/s EFA", "p5.48xlarge")
    assert d["efficiency"] == p5[2].ranked.scaling_efficiency and "for 4 nodes over 3200 Gb/s EFA" in d["reason"]


def test_node_inputs_come_from_the_committed_h200_measurements():
    measured = MeasuredNode("H200 SXM", load_document(X4 / "ddp.json").payload,
                            load_document(X4 / "collectives.json").payload)
    inputs = node_inputs(measured, "gpt-small")
    assert inputs.parameters == 163_037_184
    assert inputs.intra_by_gpu["H200 SXM"].bytes_per_s == pytest.approx(inputs.default_intra.bytes_per_s)
    # an H100 SXM has the H200's NVLink (900 GB/s): the same link; an L4 has PCIe only: much slower
    assert inputs.intra_by_gpu["H100 SXM"].bytes_per_s == pytest.approx(inputs.default_intra.bytes_per_s)
    assert inputs.intra_by_gpu["L4"].bytes_per_s < inputs.default_intra.bytes_per_s / 10
    assert network_link(400e9, "EFA").bytes_per_s == pytest.approx(320e9)


def test_the_plan_hook_ranks_gpt_small_over_node_counts_from_the_committed_results():
    from gpuplan_schema.results import load_results_root
    from planner.plan.plan import build_predictor, load_source
    from planner.rank.nodes import build_node_ranking, measured_node

    machines = {m.machine: m for m in load_results_root(FROZEN)}
    measured = measured_node(machines.values())
    assert (measured.gpu, measured.collectives.world_size) == ("H200 SXM", 4)
    job = parse_job("gpt-small bf16 tokens=300B")
    rows = build_node_ranking(job, build_predictor(load_source(machines["h100-80gb"]), job), machines.values())
    p5en = sorted((r for r in rows if r.base == "p5en.48xlarge"), key=lambda r: r.nodes)
    assert [r.nodes for r in p5en] == [1, 2, 4, 8, 16]
    assert p5en[-1].ranked.hours < p5en[0].ranked.hours / 14  # 16 nodes at > 0.9 of linear
    assert build_node_ranking(job, _predict, [machines["vm-cpu"]]) == []  # no GPU multi-GPU documents


def test_a_ddp_run_across_nodes_is_not_taken_as_one_instance_efficiency(tmp_path):
    """The two-node emulation's socket run must not become 'measured 2-GPU H200 efficiency' in rankings."""
    import shutil

    from gpuplan_schema.payloads import NodeLayout
    from gpuplan_schema.results import load_machine
    from gpuplan_schema.schema import build_document, save_document
    from planner.scaling.scaling import gather_efficiencies

    folder = tmp_path / "h200-2x1-socket"
    shutil.copytree(FROZEN / "h200-x2", folder)
    assert gather_efficiencies([load_machine(folder)])  # one node: counted
    doc = load_document(folder / "ddp.json")
    layout = NodeLayout(2, 1, ["h", "h"], "static", "NET/Socket", "environment")
    payload = replace(doc.payload, launch=replace(doc.payload.launch, nodes=layout))
    save_document(build_document("ddp", doc.collector.name, doc.collector.version, doc.machine, payload),
                  folder / "ddp.json")
    assert gather_efficiencies([load_machine(folder)]) == []


def test_the_plan_ranks_multi_node_instances_by_node_count_and_prints_them():
    from gpuplan_schema.results import load_machine_and_root
    from planner.plan.plan import build_plan, plan_to_json
    from planner.rank.jobs import parse_job
    from planner.render.plan_text import render_plan_text

    machine, measured = load_machine_and_root(FROZEN / "h100-80gb")
    plan = build_plan(machine, ["H200"], parse_job("gpt-small bf16 tokens=300B"), measured)
    rows = plan_to_json(plan)["node_ranking"]
    p5en = [r for r in rows if r["base_instance"] == "p5en.48xlarge" and r["status"] == "ok"]
    assert [r["nodes"] for r in p5en][:3] == [1, 2, 4]
    pairs = zip(p5en, p5en[1:], strict=False)  # each node count with the next
    assert all(a["hours"] > b["hours"] and a["efficiency"] >= b["efficiency"] for a, b in pairs)
    assert all(r["nodes"] == 1 for r in rows if r["base_instance"] == "g6e.xlarge")  # no network for several
    text = render_plan_text(plan, verbose=True)
    assert "Across nodes" in text and "p5.48xlarge" in text.split("Across nodes", 1)[1]
