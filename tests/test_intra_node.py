"""The intra-node scaling model (planner/scaling/intra_node.py) and its check against published multi-GPU rows.

Fixture: tests/fixtures/intra-node/h100-x2, a copy of results/h100-x2 (2 × H100 SXM: DDP of five workloads and
the all_reduce bandwidth over NVLink; diagnostics/ddp-no-p2p/: the same with NCCL_P2P_DISABLE=1), so collecting
that machine again changes nothing here.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from gpuplan_schema.results import load_machine, load_results_root
from planner.check.scaling_check import build_sync_model, check_published_scaling
from planner.rank.jobs import parse_job
from planner.rank.ranking import Estimate, rank_one
from planner.scaling.assumed_scaling import Scaling, SyncLoad
from planner.scaling.intra_node import exposed_sync_s, load_link_runs, modelled_efficiency, path_of
from planner.scaling.scaling import build_scaling, gather_efficiencies
from planner.specs import match_gpu, match_instance
from planner.specs.catalog_checks import CatalogError
from planner.specs.published_scaling import SCALING_FILE, load_published_scaling

ROOT = Path(__file__).resolve().parent.parent
H100_X2 = ROOT / "tests" / "fixtures" / "intra-node" / "h100-x2"


@pytest.fixture(scope="module")
def machines():
    return load_results_root(H100_X2.parent)


@pytest.fixture(scope="module")
def runs(machines):
    return load_link_runs(machines)


def measured_step(folder: Path, workload: str, gpus: int) -> float:
    ddp = json.loads((folder / "ddp.json").read_text())["payload"]
    return next(p["step_s"]["median"] for p in ddp["points"] if (p["workload"], p["gpus"]) == (workload, gpus))


# ── the published rows ────────────────────────────────────────────────────────────────────────────

def test_published_rows_read_as_weak_scaling_with_their_exclusions_explained():
    rows = load_published_scaling()
    assert len(rows) == 192 and {r.gpus for r in rows} == {2, 4, 8}
    excluded = [r for r in rows if r.excluded]
    assert all("another host" in r.excluded or "faster per GPU" in r.excluded for r in excluded)
    assert all(r.efficiency > 1.1 for r in excluded if "faster per GPU" in r.excluded)
    # Lambda's 8 × A100 SXM4 GNMT in fp32: 8 GPUs did 2.61 × ... of one (CSV lines 35 and 8)
    gnmt = next(r for r in rows if (r.system, r.model, r.precision) == ("8x A100 80GB SXM4", "gnmt", "fp32"))
    assert gnmt.efficiency == pytest.approx(gnmt.gpus_per_s / (8 * gnmt.one_gpu_per_s)) and gnmt.efficiency < 0.4
    assert gnmt.step_s == pytest.approx(gnmt.per_gpu_batch * 48 / gnmt.one_gpu_per_s)


def test_a_row_whose_global_batch_is_not_per_gpu_times_gpus_is_refused_naming_the_field(tmp_path):
    raw = json.loads(SCALING_FILE.read_text())
    raw["tables"][0]["rows"][3]["global_batch"] += 1
    bad = tmp_path / "published_scaling.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(CatalogError, match=r"tables\[0\]\.rows\[3\]\.global_batch: must be per_gpu_batch × gpus"):
        load_published_scaling(bad)


# ── the measured paths ────────────────────────────────────────────────────────────────────────────

def test_both_paths_come_from_the_machine_and_its_peer_to_peer_off_run(runs):
    assert set(runs) == {"nvlink", "pcie"}
    nvlink, pcie = runs["nvlink"], runs["pcie"]
    assert nvlink.machine == "h100-x2" and "peer-to-peer off" in pcie.machine
    # host memory carries a fraction of what NVLink carries at DDP's 25 MB bucket
    assert pcie.link.bytes_per_s < nvlink.link.bytes_per_s / 3
    assert set(nvlink.gradient_bytes) == {"gpt-small", "resnet50", "bert-base-squad", "bert-large-squad", "gnmt"}


@pytest.mark.parametrize("workload", ["gpt-small", "bert-large-squad", "gnmt"])
def test_the_nvlink_fit_predicts_the_peer_to_peer_off_step_within_20_percent(runs, workload):
    """k fitted on NVLink, carried to host memory's bandwidth: the step comes out slower than measured (+1 … +16 %
    here: more of a slower all-reduce hides behind the backward), which is why each path keeps its own k."""
    nvlink, pcie = runs["nvlink"], runs["pcie"]
    folder = H100_X2 / "diagnostics" / "ddp-no-p2p"
    compute = measured_step(folder, workload, 1)
    load = SyncLoad(workload, nvlink.gradient_bytes[workload], compute)
    predicted = compute + exposed_sync_s(nvlink, pcie.link, 2, load)
    assert 0 < predicted / measured_step(folder, workload, 2) - 1 < 0.2


def test_an_unmeasured_model_takes_the_k_of_the_nearest_gradient(runs):
    nvlink = runs["nvlink"]
    small = SyncLoad("ssd300", 22_894_902 * 4, 0.5)      # 92 MB: resnet50's 102 MB is nearest
    assert nvlink.k_for(small) == (nvlink.fit.for_workload("resnet50"), "resnet50's, the nearest gradient measured")
    assert nvlink.k_for(SyncLoad("gnmt", 1.0, 0.1))[1] == "gnmt's own"


def test_efficiency_falls_with_gpus_gradient_and_a_slower_path(machines):
    model = build_sync_model(machines)
    p5 = match_instance("p5.48xlarge")
    load = SyncLoad("custom", 1.3e9, 0.16)
    eight, two = model.scaling(p5, load), model.scaling(dataclasses.replace(p5, gpu_count=2), load)
    assert two.efficiency > eight.efficiency
    assert model.scaling(p5, dataclasses.replace(load, gradient_bytes=0.1e9)).efficiency > eight.efficiency
    pcie = model.scaling(dataclasses.replace(p5, gpu_interconnect="pcie"), load)
    assert pcie.efficiency < eight.efficiency and "PCIe through host memory" in pcie.note
    for s in (eight, two, pcie):
        assert 0 < s.low < s.efficiency < s.high == 1.0 and not s.measured


def test_an_nvlink_bridge_joins_a_pair_only():
    assert path_of("nvlink-bridge", 2) == "nvlink" and path_of("nvlink-bridge", 4) == "pcie"
    assert path_of("infinity-fabric", 8) == "nvlink" and path_of(None, 4) == "pcie"


# ── against the published rows ────────────────────────────────────────────────────────────────────

def test_lambdas_h100_hosts_scale_as_the_model_says(runs):
    checks = check_published_scaling(runs)
    h100 = [c for c in checks if c.row.gpu in ("H100 SXM", "H100 PCIe")]
    errors = sorted(abs(c.error) for c in h100)
    assert len(h100) >= 60 and errors[len(errors) // 2] < 0.03 and errors[-1] < 0.15


def test_the_band_holds_most_published_rows_judged_without_their_own_system(runs):
    checks = check_published_scaling(runs)
    judged = [c.covered for c in checks if c.covered is not None]
    assert len(judged) == len(checks) and sum(judged) / len(judged) > 0.8
    # the slow hosts: Lambda's 8 × A100 SXM4 lost most of an 8-GPU BERT-large step to the sync
    worst = min(checks, key=lambda c: c.published)
    assert worst.row.system == "8x A100 80GB SXM4" and worst.host_bytes_per_s < 5e9 < runs["nvlink"].link.bytes_per_s


# ── in the ranking ────────────────────────────────────────────────────────────────────────────────

def test_the_ranking_carries_the_scaling_band_into_hours(machines):
    provider = build_scaling(gather_efficiencies(machines), build_sync_model(machines))
    job = parse_job("bert-large-squad bf16 samples=1e6")
    estimate = Estimate(400.0, 64, 128, "test", 0.05, 0.05, True, parameters=334_094_338)
    row = rank_one(job, match_instance("p5.48xlarge"), estimate, provider)
    assert row.scaling_low < row.scaling_efficiency < row.scaling_high == 1.0
    assert row.hours == pytest.approx(1e6 / (400 * 8 * row.scaling_efficiency) / 3600)
    assert row.hours_low == pytest.approx(row.hours / (1.05 / row.scaling_efficiency))
    assert row.hours_high == pytest.approx(row.hours / (1 - (1 - 0.95 * row.scaling_low / row.scaling_efficiency)))
    one = rank_one(job, match_instance("p5.4xlarge"), estimate, provider)
    assert one.scaling_efficiency == 1.0 and one.hours_low == pytest.approx(one.hours / 1.05)


def test_a_job_measured_at_the_instances_gpu_count_uses_its_own_measurement(machines):
    provider = build_scaling(gather_efficiencies(machines), build_sync_model(machines))
    two = dataclasses.replace(match_instance("p5.48xlarge"), gpu_count=2)
    s: Scaling = provider(two, SyncLoad("gnmt", 159_605_817 * 4, 0.1))
    measured = measured_step(H100_X2, "gnmt", 1) / measured_step(H100_X2, "gnmt", 2)
    assert s.measured and s.note.startswith("measured: gnmt's DDP efficiency on h100-x2")
    assert math.isclose(s.efficiency, measured, rel_tol=0.02) and s.low < s.efficiency


def test_without_a_load_the_old_answers_stand(machines):
    provider = build_scaling(gather_efficiencies(machines), build_sync_model(machines))
    p4d = match_instance("p4d.24xlarge")
    assert provider(p4d, None).note.startswith("assumed, not measured")
    assert load_machine(H100_X2).machine == "h100-x2"


@pytest.mark.parametrize("workload", ["gpt-small", "bert-base-squad", "bert-large-squad", "gnmt"])
def test_the_bands_low_end_is_what_this_machine_did_with_nccl_on_sockets(machines, workload):
    """diagnostics/ddp-sockets/: the same DDP with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 (NCCL over loopback
    sockets, 3.5 GB/s bus bandwidth). The band's PCIe low end, set by the slowest tenth of published hosts,
    is that machine: within 10 % on every gradient of 0.4 GB or more."""
    model = build_sync_model(machines)
    folder = H100_X2 / "diagnostics" / "ddp-sockets"
    compute = measured_step(folder, workload, 1)
    two = dataclasses.replace(match_instance("g5.12xlarge"), gpu_count=2)   # PCIe
    load = SyncLoad(workload, model.runs["nvlink"].gradient_bytes[workload], compute)
    measured = compute / measured_step(folder, workload, 2)
    assert model.scaling(two, load).low == pytest.approx(measured, rel=0.1)


def predicted_and_measured(runs, fixture: str, path: str) -> list[tuple[int, float, float]]:
    """(GPUs, predicted, measured) for every multi-GPU point of a 4 × H200 DDP fixture, predicted by the model
    fitted on 2 × H100 along `path` at that machine's own 1-GPU step."""
    ddp = json.loads((ROOT / "tests" / "fixtures" / fixture / "ddp.json").read_text())["payload"]
    parameters = {w["workload"]: w["parameters"] for w in ddp["workloads"]}
    one = {p["workload"]: p["step_s"]["median"] for p in ddp["points"] if p["gpus"] == 1}
    h200 = match_gpu("H200 SXM")
    return [(p["gpus"],
             modelled_efficiency(runs, h200, p["gpus"], path,
                                 SyncLoad(p["workload"], parameters[p["workload"]] * 4, one[p["workload"]]))[0],
             p["scaling_efficiency"])
            for p in ddp["points"] if p["gpus"] > 1 and p["status"] == "ok"]


def test_four_h200s_of_another_host_scale_as_the_two_h100s_predict(runs):
    """results/h200-x4/diagnostics/ddp-families-2026-11-26 (copied as tests/fixtures/intra-node-h200x4): DDP on 1, 2
    and 4 H200s of another host. The model, fitted on 2 × H100, predicts each within 5 %, and never above the
    measured figure at 4 GPUs (it charges the ring's 2 (N−1)/N in full; NVSwitch hid more)."""
    points = predicted_and_measured(runs, "intra-node-h200x4", "nvlink")
    assert len(points) == 6
    for gpus, predicted, measured in points:
        assert predicted / measured - 1 == pytest.approx(0, abs=0.05)
        assert gpus < 4 or predicted <= measured


def test_four_h200s_without_peer_to_peer_scale_as_the_pcie_path_predicts(runs):
    """results/h200-x4/diagnostics/ddp-no-p2p-2026-11-26 (copied as tests/fixtures/intra-node-h200x4-nop2p): the
    same three workloads on 1, 2 and 4 H200s with NCCL_P2P_DISABLE=1 (27 GB/s all_reduce bus bandwidth). The PCIe
    path, fitted at 2 GPUs on 2 × H100 without peer-to-peer, predicts 2 and 4 GPUs within 2.5 % (measured
    0.81–0.94: −1.6 … +2.0 %), and the NVLink path would not (it misses GNMT at 4 GPUs by 17 %)."""
    points = predicted_and_measured(runs, "intra-node-h200x4-nop2p", "pcie")
    assert len(points) == 6 and {g for g, _, _ in points} == {2, 4}
    for _, predicted, measured in points:
        assert predicted / measured - 1 == pytest.approx(0, abs=0.025)
    assert max(p / m - 1 for _, p, m in predicted_and_measured(runs, "intra-node-h200x4-nop2p", "nvlink")) > 0.1
