"""A plan from a cut collection says what its answer was not timed with, and what that could change: the stages a
workload document records as not done (workloads collector 7), or, in an older partial document, what its points
show missing; and the per-op profile where no roofline document is there. On the frozen H100 machine with one
document cut as a stopped collection leaves it."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
from paths import FROZEN, REPO, load_script

from gpuplan_schema.payloads import StageRecord, WorkloadPayload
from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import build_document, load_document, save_document
from planner.plan.answer import measured_answers
from planner.plan.plan import build_plan, plan_to_json
from planner.plan.untimed import COMPILE_EFFECT, PRECISION_EFFECT, SWEEP_EFFECT, untimed_of
from planner.render.plan_text import render_plan_text

NAME = "vit-tiny"


def cut(payload: WorkloadPayload, done: tuple[str, ...]) -> WorkloadPayload:
    """The document a collection stopped after the stages `done` leaves: only the batch sweep's points, no
    boundary, the stages recorded."""
    return replace(payload, points=[p for p in payload.points if p.sweep == "batch"], boundaries=[], complete=False,
                   stages=[StageRecord(n, "done", 10.0) for n in done])


@pytest.fixture
def cut_machine(tmp_path):
    folder = tmp_path / "h100-80gb"
    shutil.copytree(FROZEN / "h100-80gb", folder)
    path = folder / f"workload-{NAME}.json"
    doc = load_document(path)
    save_document(build_document("workload", "workloads", "7", doc.machine, cut(doc.payload, ("knee",))), path)
    for roofline in folder.glob(f"roofline-{NAME}*.json"):
        roofline.unlink()
    return load_machine(folder)


def test_a_plan_from_a_cut_collection_names_every_untimed_stage_and_what_it_could_change(cut_machine):
    plan = build_plan(cut_machine, ["H100 SXM"])
    answer = measured_answers(plan)[NAME]
    assert [u.stage for u in answer.untimed] == ["compile", "sweep", "precisions", "boundary", "main-batch",
                                                 "details", "steady", "profile"]
    short = render_plan_text(plan, width=400)
    row = next(line for line in short.splitlines() if line.startswith(NAME))
    assert "images/s¹²³⁴⁵⁶⁷⁸ " in row  # one mark per untimed stage, on this answer's row alone
    assert "¹ torch.compile not timed here: on the reference workloads it moved throughput -18%…+250% " \
           "(median +29%)" in short
    others = set(measured_answers(plan)) - {NAME}
    assert not any("¹" in line for line in short.splitlines() if line.split(" ")[0] in others)
    text = render_plan_text(plan, width=400, verbose=True)
    block = text.split(f"\n{NAME} on ", 1)[1].split("\n\n", 1)[0]
    assert "not timed here: torch.compile (on the reference workloads it moved throughput -18%…+250% " \
           "(median +29%))" in block
    assert "the out-of-memory boundary" in block and "the per-op profile" in block
    (measured,) = [t for t in plan_to_json(plan)["targets"] if t["measured"]]
    (mine,) = [a for a in measured["answers"] if a["workload"] == NAME]
    assert [u["stage"] for u in mine["untimed"]][:2] == ["compile", "sweep"]
    others = [a for a in measured["answers"] if a["workload"] != NAME]
    assert others and all(a["untimed"] == [] for a in others)  # complete documents, profiled: nothing untimed


def test_an_older_partial_document_is_read_from_its_points():
    payload = load_document(FROZEN / "h100-80gb" / "workload-resnet50.json").payload
    assert untimed_of(payload, []) == untimed_of(payload, [])
    assert untimed_of(payload, []) == []  # complete, as collected before stages were recorded
    partial = replace(payload, points=[p for p in payload.points if p.variant != "compile"], complete=False)
    assert [u.stage for u in untimed_of(partial, [])] == ["compile", "profile"]
    bare = replace(partial, points=[p for p in partial.points if p.sweep == "batch"], boundaries=[])
    assert [u.stage for u in untimed_of(bare, [])] == ["compile", "precisions", "boundary", "profile"]


def test_the_effects_quoted_are_those_of_the_committed_reference_runs():
    """A check of the committed results (results/h100-80gb, results/h200), not of behaviour: a new committed run
    that moves these figures fails here until planner/plan/untimed.py quotes them."""
    module = load_script(REPO / "benchmarks" / "untimed_effects.py")
    found = module.effects([REPO / m for m in module.MACHINES])
    assert found["compile"][0] == COMPILE_EFFECT
    assert found["precisions"][0] == PRECISION_EFFECT
    assert found["sweep"][0] == SWEEP_EFFECT


def test_the_report_says_on_its_first_page_and_the_workload_page_what_was_not_timed(cut_machine):
    import re

    from planner.plan.plan import DEFAULT_JOB, report_plan
    from planner.rank.jobs import parse_job
    from planner.render.report import render_report_html
    from planner.report.frame import build_report

    report = build_report(cut_machine, report_plan(cut_machine, parse_job(DEFAULT_JOB), []), [])
    html = re.sub(r"\s+", " ", render_report_html(report))
    row = html.split(f'<tr data-workload="{NAME}">', 1)[1].split("</tr>", 1)[0]
    assert "partial collection: torch.compile, the batch sweep past the knee" in row
    assert html.count("partial collection:") == 1  # the other workloads were collected whole
    assert "torch.compile not timed here: on the reference workloads it moved throughput -18%…+250%" in html
