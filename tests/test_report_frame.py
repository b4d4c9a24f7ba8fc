"""The report's frame on the committed results: the decision page, a page per workload and the ceilings, then the
appendix in its fixed order with placeholders; the plan's changes; the glossary."""

from __future__ import annotations

import re
import shutil

import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema import load_schema
from paths import FROZEN, REPO

from gpuplan_schema.schema import load_document
from planner.charts.accuracy import build_accuracy_chart
from planner.check.accuracy import AccuracyRow
from planner.plan.changes import MIN_GAIN, Change, change_worth, top_changes
from planner.plan.plan import build_plan
from planner.render.report import render_report_html
from planner.report.dataloader import DataloaderSection
from planner.report.frame import REPORT_ORDER, PlaceholderSection, build_report_for
from planner.report.glossary import TERMS, GlossarySection
from planner.report.summary import SummarySection
from planner.report.workloads import WorkloadSection

H100, H200 = FROZEN / "h100-80gb", FROZEN / "h200"
QUICK = REPO / "tests" / "fixtures" / "results-quick" / "h100-quick"  # an H100 `--profile quick` collection
CPU_FIXTURE = REPO / "tests" / "fixtures" / "results" / "cpu-test"
NOT_YET = ("multi-gpu",)  # the one part the single-GPU H100 folder has no documents for


@pytest.fixture(scope="module")
def h100():  # noqa: ANN201 - a Report
    return build_report_for(H100)


@pytest.fixture(scope="module")
def h100_html(h100) -> str:
    return render_report_html(h100)


def anchor(section: object) -> str:
    return getattr(section, "anchor", None) or section.kind


def point(payload, sweep: str, precision: str, batch: int, variant: str = "default"):  # noqa: ANN001, ANN201
    return next(p for p in payload.points if (p.sweep, p.precision, p.batch, p.variant) == (sweep, precision, batch,
                                                                                          variant))


def test_sections_follow_the_one_fixed_order_with_a_placeholder_for_each_part_not_collected(h100):
    anchors = [anchor(s) for s in h100.sections]
    workloads = [p.stem.removeprefix("workload-") for p in sorted(H100.glob("workload-*.json"))]
    rooflines = [p.stem for p in sorted(H100.glob("roofline-*.json"))]
    assert anchors == ["decision", "summary", "not_collected", *(f"decision-{w}" for w in workloads), "ceilings",
                       "roofline", *(f"workload-{w}" for w in workloads), *rooflines, "dataloader", "recommendations",
                       "instances", "predictions", *NOT_YET, "method", "workload_method", "environment", "glossary"]
    assert [anchor(s) for s in h100.pages] == [*(f"decision-{w}" for w in workloads), "ceilings"]
    placeholders = {s.anchor: s for s in h100.sections if isinstance(s, PlaceholderSection)}
    assert list(placeholders) == list(NOT_YET)
    slots = {slot.key: slot for slot in REPORT_ORDER}
    for key, section in placeholders.items():
        assert section.title == slots[key].title and section.line == slots[key].missing


def test_a_machine_without_workloads_keeps_the_workloads_heading_with_one_line(tmp_path):
    report = build_report_for(CPU_FIXTURE)
    workloads = next(s for s in report.sections if anchor(s) == "workloads")
    assert isinstance(workloads, PlaceholderSection) and "no workload was measured" in workloads.line
    html = render_report_html(report)
    assert '<section id="workloads"' in html and workloads.line in html
    assert '<li class="toc-missing"><a href="#workloads">Workloads</a></li>' in html
    only_env = tmp_path / "env-only"
    only_env.mkdir()
    shutil.copy(CPU_FIXTURE / "environment.json", only_env)
    anchors = [anchor(s) for s in build_report_for(only_env).sections]
    assert anchors[:5] == ["summary", "not_collected", "ceilings", "roofline", "workloads"]  # all still there


def test_html_puts_the_answer_first_then_a_page_per_workload_then_the_appendix_collapsed(h100_html):
    at = {name: h100_html.index(marker) for name, marker in (
        ("decision", '<section id="decision"'), ("first page", '<section id="decision-'),
        ("ceilings", '<section id="ceilings"'), ("appendix", '<details class="appendix-details">'),
        ("contents", '<nav class="toc" id="contents"'), ("glossary", '<section id="glossary"'))}
    assert at["decision"] < at["first page"] < at["ceilings"] < at["appendix"] < at["contents"] < at["glossary"]
    toc = h100_html[at["contents"]:at["glossary"]]
    assert re.findall(r'<a href="#([^"]+)">', toc)[:2] == ["roofline", "workload-conv-rollout"]
    assert "</details>" in h100_html[at["glossary"]:]   # the appendix, glossary included, is the collapsed part


def test_every_internal_link_of_the_report_has_its_target(h100_html):
    ids = set(re.findall(r'\bid="([^"]+)"', h100_html))
    links = set(re.findall(r'href="#([^"]+)"', h100_html))
    assert links and links <= ids, links - ids
    assert "term-traffic-model" in links and "term-memory-bandwidth-bound" in links  # method, verdicts


def test_h100_summary_shows_the_plans_three_changes_with_the_gains_measured(h100):
    """The changes are the plan's recommendations that differ from PyTorch's default (planner/plan/changes.py): the
    report computes none. Regression: the report's own knee said "also bert-base-squad 1.06× (320)" beside the plan's
    160; every batch a change names is now the batch the plan recommends."""
    summary = next(s for s in h100.sections if isinstance(s, SummarySection))
    plan = build_plan(load_machine_for(H100))
    assert summary.changes == plan.changes and summary.changes_note is None
    assert [c.setting for c in summary.changes] == ["precision", "torch.compile", "batch size"]
    settings = plan.targets[0].settings
    for change in summary.changes:
        assert change.gain >= MIN_GAIN
        for workload in change.workloads:
            if change.setting == "batch size":
                assert change.workload != workload or change.value == str(settings[workload].batch)
    precision, compile_, batch = summary.changes
    wide = load_document(H100 / "workload-wide-transformer.json").payload
    at = settings["wide-transformer"].batch
    assert precision.workload == "wide-transformer" and precision.gain == pytest.approx(
        point(wide, "variant", "bf16", at).throughput_per_s / point(wide, "variant", "fp32", at).throughput_per_s)
    assert compile_.gain == pytest.approx(1 + settings[compile_.workload].compile_gain)
    mlp = load_document(H100 / "workload-mlp-stgan.json").payload
    sweep = mlp.sweep_throughput("bf16")
    assert (batch.workload, batch.value) == ("mlp-stgan", str(settings["mlp-stgan"].batch))
    assert batch.gain == pytest.approx(sweep[settings["mlp-stgan"].batch] / sweep[4096])  # against the main batch
    assert summary.changes[0].worth >= summary.changes[1].worth >= summary.changes[2].worth


def load_machine_for(folder):  # noqa: ANN001, ANN201
    from gpuplan_schema.results import load_machine

    return load_machine(folder)


def test_summary_has_a_verdict_row_per_workload_with_its_judged_throughput(h100):
    summary = next(s for s in h100.sections if isinstance(s, SummarySection))
    sections = [s for s in h100.sections if isinstance(s, WorkloadSection)]
    assert [r.workload for r in summary.verdicts] == [s.name for s in sections]
    gpt = next(r for r in summary.verdicts if r.workload == "gpt-small")
    payload = load_document(H100 / "workload-gpt-small.json").payload
    # the per-op roofline's split: 61% of the step in math-bound ops (planner/model/bound.py)
    assert (gpt.bound, gpt.precision, gpt.batch) == ("compute-bound", "bf16", 32)
    # the plan's figure at its recommended settings (bf16 compiled, measured at batch 32), not the eager point's
    compiled = next(p for p in payload.points if p.sweep == "variant" and p.variant == "compile" and p.batch == 32)
    assert gpt.throughput == compiled.throughput_per_s


def test_quick_profile_proposes_no_change_and_says_why():
    summary = next(s for s in build_report_for(QUICK).sections if isinstance(s, SummarySection))
    assert summary.changes == []
    assert "quick profile measures one point per workload" in summary.changes_note
    assert len(summary.verdicts) == 4


def test_top_changes_ranks_by_worth_over_all_measured_workloads_one_per_setting():
    changes = [Change("precision", "bf16", "a", 3.0, "x"), Change("precision", "bf16", "b", 2.0, "x"),
               Change("precision", "fp16", "c", 2.0, "x"), Change("torch.compile", "on", "a", 1.4, "x"),
               Change("batch size", "8192", "d", 8.1, "x"), Change("batch size", "64", "b", 1.02, "x"),
               Change("cudnn.benchmark", "on", "c", 1.2, "x")]
    ranked = top_changes(changes, 3, workload_count=5)
    # precision: (3·2·2)^(1/5) = 1.64; one workload's 8.1× batch, counted at half its log: 8.1^(0.5/5) = 1.23;
    # compile 1.4^(1/5) = 1.07; cudnn 1.2^(1/5) = 1.04
    assert [(c.setting, c.workload) for c in ranked] == [
        ("precision", "a"), ("batch size", "d"), ("torch.compile", "a")]
    assert ranked[0].also == (("b", 2.0), ("c", 2.0)) and ranked[0].worth == pytest.approx(12 ** 0.2)
    # a gain for one workload of two counts for more than the same gain for one of five
    assert change_worth([changes[4]], 2) > change_worth([changes[4]], 5)
    assert top_changes([changes[5]]) == []  # under MIN_GAIN


def test_the_knee_main_precision_and_main_batch_are_the_contracts_own():
    """One definition each, read by the collectors and the planner alike (issue 37: the knee was defined four times)."""
    from collectors.core import profiles
    from gpuplan_schema.payloads import workloads as contract
    from planner.plan import advice, recommend

    assert recommend.KNEE is contract.KNEE
    assert profiles.MAIN_PRECISION is contract.MAIN_PRECISION is advice.MAIN_PRECISION
    assert profiles.MAIN_BATCH is contract.MAIN_BATCH is advice.MAIN_BATCH


def test_glossary_defines_the_terms_the_report_uses_each_once():
    names = [t.term.lower() for t in TERMS]
    for term in ("arithmetic intensity", "roofline", "bus bandwidth", "algorithm bandwidth", "oom boundary",
                 "throughput knee", "tf32", "autocast", "gradscaler", "channels_last", "cudnn.benchmark",
                 "torch.compile", "iqr", "median", "dense and sparse tflops", "ridge point", "traffic model"):
        assert term in names, term
    assert len(set(names)) == len(names) and len({t.anchor for t in TERMS}) == len(TERMS)


def test_glossary_is_the_last_section_and_renders_every_term(h100, h100_html):
    assert isinstance(h100.sections[-1], GlossarySection)
    for term in TERMS:
        assert f'<dt id="{term.anchor}">{term.term}</dt>' in h100_html


def test_every_chart_spec_is_valid_vega_lite(h100):
    """Altair does not validate while building (planner.charts.vega.unvalidated): this does, for every chart kind."""
    schema = load_schema()
    specs = [s.chart for s in h100.sections if getattr(s, "chart", None)]
    for section in h100.sections:
        if isinstance(section, WorkloadSection):
            specs += [c for c in (section.throughput_chart, section.memory_chart, section.sequence_chart) if c]
        if isinstance(section, DataloaderSection):  # templated: a map's top is set in each copy
            specs += [section.scaling_chart, *(chart for _, chart in section.heatmaps)]
            assert section.scaling_chart and section.heatmaps
    specs.append(build_accuracy_chart([AccuracyRow("gpt-small", "bf16", 32, "h100", "h200", 210.0, 227.0)]))
    assert len(specs) >= 9
    for spec in specs:
        validate_jsonschema(spec, schema)
        data = [part["data"] for part in [spec, *spec.get("layer", [])] if "data" in part]
        named = {d["name"] for d in data if "name" in d}
        assert data and named <= set(spec.get("datasets", {}))  # named data is in the spec, the rest inline
        assert all("name" in d or "values" in d for d in data)
