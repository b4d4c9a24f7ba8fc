"""The hosts' ratio between two measured machines from their steadily timed host-set steps
(planner/model/host_speed.py), and the repeat pairs against another lend's steady timing
(planner/check/repeatability.py). Read from the committed H100 and H200 documents."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
from paths import FROZEN

from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import DocumentError, load_document
from planner.check.repeatability import ANOTHER_LEND, SAME_RUN, other_lends, repeat_pairs, repeat_summaries
from planner.model.host_speed import MIN_PAIRS, host_set, step_host_ratio


@pytest.fixture(scope="module")
def h100():  # noqa: ANN201
    return load_machine(FROZEN / "h100-80gb")


@pytest.fixture(scope="module")
def h200():  # noqa: ANN201
    return load_machine(FROZEN / "h200")


def slower_host(payloads: list, factor: float) -> list:
    """The payloads as a machine whose host issues every step `factor` × slower would have measured them."""
    return [replace(w, points=[replace(p, host_issue_s=p.host_issue_s.scaled(factor)) if p.host_issue_s else p
                               for p in w.points]) for w in payloads]


def test_the_hosts_ratio_is_the_median_of_the_host_set_steps_both_timed_steadily(h100):
    ratio = step_host_ratio(h100.workloads, slower_host(h100.workloads, 1.3))
    assert ratio is not None and ratio.ratio == pytest.approx(1.3)
    host_set_points = sum(host_set(p) for w in h100.workloads for p in w.points)
    assert ratio.pairs == host_set_points >= MIN_PAIRS
    assert "timed steadily on both machines" in ratio.basis


def test_a_workloads_own_steps_never_set_the_ratio_its_predictions_use(h100):
    target = slower_host(h100.workloads, 1.3)
    vit = [w for w in target if w.workload == "vit-tiny"]
    target = [w for w in target if w.workload != "vit-tiny"] + slower_host(vit, 3.0)  # vit's host: 3× slower
    full = step_host_ratio(h100.workloads, target)
    without = step_host_ratio(h100.workloads, target, exclude="vit-tiny")
    assert "vit-tiny" in full.workloads and "vit-tiny" not in without.workloads
    assert full.pairs > without.pairs and without.ratio == pytest.approx(1.3)
    only_vit = [w for w in target if w.workload == "vit-tiny"]
    assert step_host_ratio(h100.workloads, only_vit).ratio == pytest.approx(1.3 * 3.0)


def test_no_ratio_below_the_minimum_or_without_steady_timing(h100):
    one = [w for w in h100.workloads if w.workload == "gpt-small"]
    few = [replace(w, points=[p for p in w.points if host_set(p)][: MIN_PAIRS - 1]) for w in one]
    assert step_host_ratio(few, few) is None
    unsteady = [replace(w, points=[replace(p, steady_rounds=None) for p in w.points]) for w in h100.workloads]
    assert step_host_ratio(unsteady, unsteady) is None


def test_another_lends_steady_documents_pair_with_this_machines(h200):
    """Each configuration both lends timed steadily is a pair of scope 'another lend', its steps the two
    documents' own medians; the same-run pairs are still there."""
    pairs = repeat_pairs(h200)
    lend = [p for p in pairs if p.scope == ANOTHER_LEND]
    assert lend and any(p.scope == SAME_RUN for p in pairs)
    folder = next((FROZEN / "h200" / "diagnostics").glob("lend-*"))
    for p in lend:
        stem = f"workload-{p.workload}.json"
        ours = load_document(FROZEN / "h200" / stem).payload.points
        theirs = load_document(folder / stem).payload.points
        mine = {(q.precision, q.batch, q.variant, q.sweep): q.step_s.median for q in ours if q.steady_rounds}
        other = {(q.precision, q.batch, q.variant, q.sweep): q.step_s.median for q in theirs if q.steady_rounds}
        key = (p.precision, p.batch, p.variant, p.sweeps[0])
        assert p.steps_s == (mine[key], other[key])
    scopes = {(s.regime, s.scope) for s in repeat_summaries(pairs)}
    assert ("host", ANOTHER_LEND) in scopes and ("host", SAME_RUN) in scopes


def test_another_hosts_documents_load_with_the_machine_and_a_broken_one_stops_it_with_one_line(tmp_path):
    """Another host's workload documents are part of the contract: loaded and checked with the machine
    (gpuplan_schema.results.load_other_hosts), never read on the side; a broken one names its file and field."""
    folder = tmp_path / "h200"
    shutil.copytree(FROZEN / "h200", folder)
    machine = load_machine(folder)
    lends = other_lends(machine)
    assert "vit-tiny" in lends and "gpt-small" in lends
    broken = next((folder / "diagnostics").glob("lend-*/workload-vit-tiny.json"))
    doc = json.loads(broken.read_text())
    doc["payload"]["points"][0]["step_s"]["median"] = -1.0
    broken.write_text(json.dumps(doc))
    with pytest.raises(DocumentError, match="workload-vit-tiny.json"):
        load_machine(folder)


def test_a_ratio_from_real_steps_applies_without_either_dispatch_benchmark():
    """The steps' ratio is the target's own figure: it does not ride on the dispatch benchmark's per-kernel time,
    so a source without one (an older ceilings document) still gets it; without it the dispatch ratio stands."""
    from planner.model.performance import Rates, host_ratio
    bare = Rates({}, 1.0, "test")
    assert host_ratio(bare, replace(bare, host_time_ratio=1.3)) == pytest.approx(1.3)
    assert host_ratio(replace(bare, host_kernel_s=2e-6), replace(bare, host_kernel_s=3e-6)) == pytest.approx(1.5)
    assert host_ratio(bare, bare) == 1.0
