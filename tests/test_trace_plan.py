"""A plan from a trace (planner/trace): the committed trace fixture (tests/fixtures/trace, `gpuplan trace
examples/user_workload.py:build`) planned, ranked, reported and published as a machine of its own that says it is
predicted from a trace, with no GPU measured; and the learning underneath it."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from paths import FROZEN, REPO, RESULTS

from gpuplan_schema.payloads import TracedOp
from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import load_document
from planner.cli import main
from planner.plan.plan import build_plan, plan_to_json
from planner.rank.jobs import parse_job
from planner.trace.efficiency import Group, Row, fit_efficiency
from planner.trace.machine import is_prediction, is_traced, trace_machine
from planner.trace.model_file import load_learned
from planner.trace.summary import summarise

TRACE = REPO / "tests" / "fixtures" / "trace" / "trace-sensor-cnn"
JOB = "sensor-cnn bf16 samples=20000000000"


@pytest.fixture(scope="module")
def traced():
    return trace_machine(load_machine(TRACE))


@pytest.fixture(scope="module")
def plan(traced):
    return build_plan(traced.machine, None, parse_job(JOB), [traced.machine], rank_defaults=True)


def test_a_trace_folder_is_a_machine_of_predictions_only(traced):
    raw = load_machine(TRACE)
    assert is_traced(raw) and not is_prediction(raw)
    machine = traced.machine
    assert is_prediction(machine) and not is_traced(machine)
    assert machine.gpu_name == load_learned().model.gpu or machine.ceilings.device_name.endswith("HBM3")
    points = machine.workloads[0].points
    assert {p.precision for p in points} == {"bf16", "fp16", "fp32", "tf32"}
    assert any(p.variant == "compile" for p in points)


def test_the_plan_json_has_the_shape_of_a_measured_machines_marked_as_from_a_trace(plan):
    out = plan_to_json(plan)
    assert out["source"]["predicted_from"] == "trace"
    assert out["targets"] and all(t["from_trace"] and not t["measured"] for t in out["targets"])
    for target in out["targets"]:
        assert target["predictions"] and target["capacity"]
        for p in target["predictions"]:
            assert p["throughput_low"] < p["throughput_per_s"] < p["throughput_high"]
            assert "trace" in p["band_basis"]
        assert all(c["max_batch"] > 0 for c in target["capacity"])


def test_the_plan_lists_what_each_traced_step_spends_its_time_on(plan):
    (summary,) = plan_to_json(plan)["trace"]
    assert summary["workload"] == "sensor-cnn" and summary["ops"] and 0 <= summary["unknown_share"] < 1
    assert sum(o["share"] for o in summary["ops"]) <= 1 and summary["peak_bytes"] > 0


def test_a_measured_machines_plan_has_no_trace(h100):
    out = plan_to_json(build_plan(h100, ["H100 SXM"]))
    assert out["trace"] == [] and out["source"]["predicted_from"] == "measurements"
    assert out["targets"][0]["measured"] and not out["targets"][0]["from_trace"]


def test_every_answer_of_a_trace_plan_says_it_is_from_a_trace_through_the_one_engine(plan):
    from planner.plan.answer import FROM_TRACE, build_answers

    answers = build_answers(plan)
    assert answers and all(a.traced and a.how == "predicted from a trace" for a in answers)
    assert all(any(n.kind == FROM_TRACE for n in a.notes) for a in answers)
    json_answers = [a for t in plan_to_json(plan)["targets"] for a in t["answers"]]
    assert json_answers and not any(a["measured"] for a in json_answers)
    assert all(any(n["kind"] == FROM_TRACE for n in a["notes"]) for a in json_answers)


def test_a_trace_plan_without_a_job_ranks_its_own_workloads_default_job(capsys):
    assert main(["plan", str(TRACE)]) == 0
    text = capsys.readouterr().out
    assert "Where to run sensor-cnn" in text and "the default job" in text
    assert text.startswith("Plan for trace-sensor-cnn: predicted from a trace, no GPU measured")


def test_a_trace_plan_ranks_instances_for_a_job(plan):
    ok = [r for r in plan.ranking if r.status == "ok"]
    assert len(ok) > 10 and len({r.gpu for r in ok}) > 5


def test_gpuplan_plan_of_a_trace_folder_says_nothing_was_measured(capsys):
    assert main(["plan", str(TRACE), "--job", JOB]) == 0
    text = capsys.readouterr().out
    assert "predicted from a trace: no GPU measured" in text
    assert "(measured)" not in text


def test_a_trace_plans_reasons_say_predicted_never_measured(capsys):
    """Every figure of a trace folder's plan is a prediction: no reason calls one measured (the loader's 'not
    measured' default and the usable memory measured on the reference GPU are true and stay)."""
    assert main(["plan", str(TRACE), "--verbose"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for claim in ("measured there", "best measured", "compile measured", "measured knee", "measured +",
                  "no measured setting"):
        assert claim not in text, claim
    assert "predicted knee" in text


def test_a_trace_plan_compares_each_precision_with_the_main_one(traced):
    """The predicted document holds the main precision's trial at the main batch beside its sweep point, as a
    collection does: the precision choice's baseline (choice.py), without which the fastest trial won however
    small its lead."""
    from planner.plan.choice import choose

    for payload in traced.machine.workloads:
        main_trials = [p for p in payload.points if p.sweep == "variant" and p.precision == "bf16"
                       and p.variant == "default"]
        assert len(main_trials) == 1
        choice = choose(payload, "bf16", True, applies=False)
        assert choice.chosen is choice.baseline and choice.chosen.precision == "bf16"


def test_the_report_shows_the_trace_as_a_machine_of_its_own():
    from planner.render.report import render_report_html
    from planner.report.frame import build_report_for

    report = build_report_for(TRACE)
    assert report.device.startswith("Predicted from a trace: no GPU measured")
    kinds = [section.kind for section in report.head]
    # the answer first (the title says it is predicted), then what the prediction rests on
    assert kinds[0] == "decision" and kinds.index("summary") < kinds.index("trace")
    trace = report.head[kinds.index("trace")]
    assert trace.summaries[0].ops
    assert next(s for s in report.head if s.kind == "summary").known == "predicted"
    html = render_report_html(report)
    assert "Predicted from a trace: no GPU measured" in html
    assert "Unknown share" in html and "sensor-cnn" in html
    assert "Predicted from the trace (no GPU measured): throughput" in html
    assert "per-operation times predicted from the trace" in html and "share measured" not in html


def test_the_site_lists_a_trace_folder_beside_the_measured_machines(tmp_path, traced):
    import shutil

    from planner.plan.plan import report_plan
    from planner.site.build import build_site
    from planner.site.jobs import build_chooser

    root = tmp_path / "results"
    shutil.copytree(TRACE, root / TRACE.name)
    shutil.copytree(FROZEN / "h200", root / "h200")
    index = build_site(root, tmp_path / "site", pdf=False).read_text()
    page = (tmp_path / "site" / "machines" / TRACE.name / "index.html").read_text()
    assert TRACE.name in index and "Predicted from a trace: no GPU measured" in page
    chooser = build_chooser([(traced.machine, report_plan(traced.machine, None, [traced.machine]))])
    (entry,) = [w for w in chooser.workloads if w["machine"] == TRACE.name]
    assert entry["traced"] is True   # the job chooser says "predicted from a trace" (templates/jobs.js)
    assert re.search(r'"traced":\s*true', (tmp_path / "site" / "jobs.html").read_text())


def test_an_op_no_profile_showed_is_listed_with_its_share_never_zero(traced):
    trace = load_document(TRACE / "trace-sensor-cnn.json").payload
    run = trace.run("bf16", trace.main_batch)
    unknown = TracedOp("aten::my_custom_scan", "forward", 3, 4e8, 4e8, 3, "fp32", [[1024, 1024]])
    trace = replace(trace, runs=[replace(run, ops=[*run.ops, unknown])])
    summary = summarise(trace, traced.model)
    assert "my_custom_scan" in summary.unknown and summary.unknown_share > 0


def test_the_efficiency_fit_recovers_a_per_call_cost_and_a_slowdown():
    rows = [Row("relu", "any", (Group(calls, roof / calls, roof / calls),), 3e-6 * calls + 1.5 * roof, 1.0, "w")
            for calls, roof in ((10, 1e-3), (40, 5e-3), (200, 2e-2), (7, 3e-2))]
    fit = fit_efficiency(rows, 132).kinds["relu"]
    assert fit.per_call_s == pytest.approx(3e-6, rel=1e-6) and fit.slowdown == pytest.approx(1.5, rel=1e-6)


def test_committed_results_the_learned_model_carries_the_measured_ceilings():
    learned = load_learned()
    for machine in ("h100-80gb", "h200"):
        committed = json.loads((RESULTS / machine / "ceilings.json").read_text())["payload"]
        assert learned.ceilings[machine].device_name == committed["device_name"]
        assert learned.models[machine].roofs.bytes_per_s == pytest.approx(
            next(b["bytes_per_s"]["median"] for b in committed["memory"] if b["name"] == "copy"))
    assert len(learned.residuals.eager) > 100 and learned.model.efficiency.workloads
