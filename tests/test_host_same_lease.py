"""benchmarks/host_same_lease.py on a frozen copy of results/h200/diagnostics/host-ops-2026-11-29/host-ops.json (seven
training steps timed on one H200 lease within a minute): the trace's host model (planner/trace/learn.py `fit_host`),
fitted on that lease's other workloads alone, holds Transformer-XL's issue time, which the model learned from the
committed H200 collection (other leases) overshoots by half (issue 41). Each case's step is traced on the meta
device."""

from __future__ import annotations

import json

import pytest
from paths import FROZEN, REPO, load_script

from gpuplan_schema.results import load_machine
from planner.trace.learn import fit_host
from planner.trace.predict import phase_calls

HOST_OPS = FROZEN / "h200" / "diagnostics" / "host-ops-2026-11-29" / "host-ops.json"


@pytest.fixture(scope="module")
def bench():
    return load_script(REPO / "benchmarks" / "host_same_lease.py")


@pytest.fixture(scope="module")
def host_ops() -> dict:
    return json.loads(HOST_OPS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cases(bench, host_ops):
    return bench.load_cases(host_ops)


@pytest.fixture(scope="module")
def rows(bench, cases):
    return {r.case: r for r in bench.compare(cases, load_machine(FROZEN / "h200"))}


def test_every_timed_case_is_traced_at_its_precision_and_batch_with_the_lease_s_issue_time(cases, host_ops):
    timed = {c["case"]: c for c in host_ops["cases"] if "issue_ms" in c}
    assert {f"{c.workload},{c.precision},{c.batch}" for c in cases} == set(timed)
    for c in cases:
        assert (c.run.precision, c.run.batch) == (c.precision, c.batch)
        assert c.issue.n == len(timed[f"{c.workload},{c.precision},{c.batch}"]["issue_ms_all"])
        assert c.issue_s * 1e3 == pytest.approx(timed[f"{c.workload},{c.precision},{c.batch}"]["issue_ms"], abs=1e-3)


def test_a_case_is_predicted_from_the_other_workloads_of_its_lease_alone(bench, cases, rows):
    """dlrm-small's two cases leave each other out too: the fit is over the other workloads' rows."""
    machine = load_machine(FROZEN / "h200")
    floor = machine.ceilings.dispatch.op_issue_s.median
    lease = bench.lease_rows(cases)
    for c in cases:
        others = [r for r in lease if r.workload.workload != c.workload]
        expected = fit_host(others, floor).issue_s(phase_calls(c.run))
        assert rows[f"{c.workload},{c.precision},{c.batch}"].lease_s == pytest.approx(expected)
        assert rows[f"{c.workload},{c.precision},{c.batch}"].machine_s is None   # no reference traces given


def test_the_lease_holds_transformer_xl_and_bert_base_within_five_percent(rows):
    """On its own lease Transformer-XL's 4,237 aten calls (2,535 of them launching nothing) cost what BERT-base's,
    GPT-small's, the ViTs' and dlrm-small's calls say: its miss in the leave-one-out (+53 % here, +63 % in the step)
    is the host it was timed on."""
    for case in ("transformer-xl-base,bf16,6", "bert-base-squad,bf16,8"):
        assert abs(rows[case].lease_error) < 0.05, (case, rows[case])
