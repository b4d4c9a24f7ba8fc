"""Workload sections of the report, on real data only: the committed H100 run of gpt-small (standard
profile) and a CPU run of mlp-stgan made here once per module (standard profile, tiny sizes)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import vl_convert
from paths import FROZEN
from pypdf import PdfReader

from collectors.__main__ import main as collect_main
from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import load_document
from planner.charts.base import build_memory_chart, build_sequence_chart, build_throughput_chart, with_width
from planner.model.workload_verdict import gpu_memory_bytes, plain_point
from planner.plan.bounds import BoundKind
from planner.plan.plan import report_plan
from planner.render.report import render_report, render_report_html
from planner.report.frame import NotCollectedSection, build_report, build_report_for
from planner.report.workloads import WorkloadSection, build_workload_section, build_workload_sections
from planner.units import format_count, format_number

H100 = FROZEN / "h100-80gb"
GPT = H100 / "workload-gpt-small.json"
TINY_NOTE = "Reduced sizes, not for planning."


@pytest.fixture(scope="module")
def gpt() -> WorkloadPayload:
    return load_document(GPT).payload


@pytest.fixture(scope="module")
def h100_gpu_memory() -> int:
    memory = gpu_memory_bytes(load_machine(H100))
    assert memory
    return memory


@pytest.fixture(scope="module")
def h100_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    html, pdf = render_report(H100, tmp_path_factory.mktemp("h100"), full=True)
    text = " ".join(page.extract_text() for page in PdfReader(pdf).pages)
    return html.read_text(encoding="utf-8"), re.sub(r"\s+", " ", text)


def visible(html: str) -> str:
    """The page's text as a reader sees it: tags dropped, white space collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


@pytest.fixture(scope="module")
def cpu_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cpu")
    assert collect_main(["--only", "workloads", "--out", str(out), "--machine", "cpu-t", "--workload", "mlp-stgan",
                         "--profile", "standard"]) == 0
    return out / "cpu-t"


def main_point(payload: WorkloadPayload, precision: str, batch: int) -> WorkloadPoint:
    """The default-variant trial at the main batch: the point the report's tables and verdict quote."""
    return next(p for p in payload.points if p.sweep == "variant" and p.variant == "default"
                and p.precision == precision and p.batch == batch)


def gpt_section(report_sections: list) -> WorkloadSection:
    return next(s for s in report_sections if isinstance(s, WorkloadSection) and s.name == "gpt-small")


def test_html_and_pdf_name_the_workload_its_verdict_and_the_bf16_batch_32_throughput(h100_report, gpt):
    html, pdf = h100_report
    # the verdict's point: the plan's judged batch and precision, the default-variant trial there
    throughput = f"{format_number(plain_point(gpt, 32, 'bf16').throughput_per_s)} sequences/s"
    for text in (visible(html), pdf):
        assert "Workload: gpt-small" in text
        assert "Verdict: compute-bound at bf16, batch 32" in text  # the per-op split: 61% math-bound ops
        assert f"Throughput at bf16, batch 32: {throughput}" in text
    assert f'<td class="num">{format_number(main_point(gpt, "bf16", 32).throughput_per_s)}</td>' in html


def test_oom_boundary_table_lists_the_documents_max_batch(h100_report, gpt):
    bf16 = next(b for b in gpt.boundaries if b.precision == "bf16")
    assert (bf16.max_batch, bf16.first_oom_batch, bf16.capped) == (77, 78, False)  # the real run's bisection
    # The machine has several workload sections; read the table inside gpt-small's.
    html = h100_report[0]
    section = html[html.index('id="workload-gpt-small"'):]
    table = re.search(r'<table class="workload-boundaries[^"]*">(.*?)</table>', section, re.S)[1]
    cell = r'<td class="num"[^>]*>([^<]*)</td>'
    rows = re.findall(rf'<th scope="row">bf16</th>\s*<td>([^<]*)</td>\s*{cell}\s*{cell}', table)
    expandable = gpt.boundary("bf16", "expandable_segments")
    assert expandable.max_batch == 84  # the same card, expandable segments: the allocator no longer fragments
    assert rows == [("default", format_count(77), format_count(78)),
                    ("expandable segments (+9%)", format_count(84), format_count(expandable.first_oom_batch))]
    chart = str(build_memory_chart(gpt))  # the boundary's rule, labelled for the PDF
    # one rule per boundary, the precisions that share it named together (fp32 and tf32 both stop at 57)
    assert "max 77: bf16" in chart and "max 76: fp16" in chart
    assert "max 57: fp32, tf32" in chart or "max 57: tf32, fp32" in chart
    assert "max 84" not in chart  # the chart marks the default allocator's boundaries; the table has both


def test_section_verdict_is_the_plans_judgement_at_its_recommended_batch(h100):
    """The workload section words the plan's judgement (planner/plan/judge.py), not a rule of its own: the same
    bound, batch and sentence as the plan's expected figure, and the measured figures of that point."""
    plan = report_plan(h100)
    expected = next(t for t in plan.targets if t.is_source).expected["gpt-small"]
    section = next(s for s in build_workload_sections(h100, plan) if s.name == "gpt-small")
    assert (section.verdict.bound, section.verdict.batch) == (expected.judgement.label, expected.judgement.batch)
    assert section.verdict.reason == expected.judgement.sentence
    head = f"Throughput at bf16, batch {expected.judgement.batch}"
    assert any(line.startswith(head) for line in section.verdict.evidence)


def test_section_without_a_plan_says_no_bound_was_judged(gpt, h100_gpu_memory):
    section = build_workload_section(gpt, h100_gpu_memory)
    assert section.verdict.bound == "undetermined" and "no recommendation" in section.verdict.reason


def test_trial_table_compares_precisions_and_variants_at_the_main_batch(gpt, h100_gpu_memory):
    section = build_workload_section(gpt, h100_gpu_memory)
    assert section.main_batch == 32
    rows = {(r.precision, r.variant): r for r in section.trials}
    assert list(rows)[:4] == [("fp32", "default"), ("tf32", "default"), ("fp16", "default"), ("bf16", "default")]
    fp32 = next(p for p in gpt.points if p.sweep == "variant" and p.precision == "fp32" and p.batch == 32)
    bf16 = main_point(gpt, "bf16", 32)
    assert rows["bf16", "default"].vs_fp32 == pytest.approx(bf16.throughput_per_s / fp32.throughput_per_s)
    compiled = rows["bf16", "compile"]
    assert compiled.compile_s and compiled.vs_default == pytest.approx(
        compiled.throughput / bf16.throughput_per_s)
    repeat = next(p for p in gpt.points if p.sweep == "repeat")
    assert section.repeats[0].difference == pytest.approx(repeat.step_s.median / bf16.step_s.median - 1)


def test_workload_charts_render_to_svg_offline(gpt, h100_gpu_memory):
    specs = {"throughput": build_throughput_chart(gpt), "memory": build_memory_chart(gpt, h100_gpu_memory),
             "sequence": build_sequence_chart(gpt)}
    for name, spec in specs.items():
        assert spec is not None, name
        svg = vl_convert.vegalite_to_svg(with_width(spec, 500))
        assert svg.lstrip().startswith("<svg"), name
    assert "Throughput (sequences/s)" in vl_convert.vegalite_to_svg(with_width(specs["throughput"], 500))
    tooltips = str(specs["throughput"])
    assert "TFLOP" not in tooltips and "Of FLOP/s ceiling" in tooltips and "sequences/s" in tooltips


def test_each_workload_gets_its_own_anchor_and_contents_entry(h100_report):
    html = h100_report[0]
    names = [p.stem.removeprefix("workload-") for p in sorted(H100.glob("workload-*.json"))]
    for name in names:
        assert f'<li><a href="#workload-{name}">Workload: {name}</a></li>' in html
        assert html.count(f'id="workload-{name}"') == 1
    assert html.count('data-chart="chart-workload-gpt-small-') == 3
    for tag in re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", html, flags=re.IGNORECASE):
        assert not re.search(r"\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", tag, re.IGNORECASE), tag  # offline


def test_workload_kind_is_no_longer_listed_as_not_collected():
    report = build_report_for(H100)
    missing = [s.kinds for s in report.sections if isinstance(s, NotCollectedSection)]
    assert all("workload" not in kinds for kinds in missing)


def test_tiny_cpu_run_carries_the_note_and_the_h100_run_does_not(cpu_folder, h100_report):
    machine = load_machine(cpu_folder)
    assert [w.scale for w in machine.workloads] == ["tiny"]
    html = render_report_html(build_report(machine))
    assert TINY_NOTE in html and "Workload: mlp-stgan" in html
    assert TINY_NOTE not in h100_report[0] and TINY_NOTE not in h100_report[1]
    section = next(s for s in build_report(machine).sections if isinstance(s, WorkloadSection))
    assert section.verdict.bound in {kind.label for kind in BoundKind}
    assert section.memory_chart is None  # a CPU reports no allocator peak; the page says so instead
    assert "does not report PyTorch" in html
    for spec in (section.throughput_chart,):
        assert vl_convert.vegalite_to_svg(with_width(spec, 400)).lstrip().startswith("<svg")


def test_workload_names_from_documents_are_escaped(gpt):
    hostile = dataclasses.replace(gpt, workload="<script>alert(1)</script>")
    html = render_report_html(build_report_with(hostile))
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'id="workload-script-alert-1-script"' in html


def build_report_with(payload: WorkloadPayload):  # noqa: ANN201 - a Report
    machine = load_machine(H100)
    docs = {stem: doc for stem, doc in machine.documents.items() if doc.kind != "workload"}
    docs["workload-x"] = dataclasses.replace(load_document(GPT), payload=payload)
    return build_report(dataclasses.replace(machine, documents=docs))


def test_memory_chart_takes_the_untimed_probe_points_of_a_capacity_run():
    # Regression: the boundary search's probes (status ok, peak memory, no step time) made the memory
    # chart's tooltip format a missing throughput, and the committed H100 and H200 reports failed.
    payload = load_document(FROZEN / "h100-80gb/workload-gpt-small.json").payload
    assert any(p.sweep == "probe" and p.status == "ok" and p.throughput_per_s is None for p in payload.points)
    spec = build_memory_chart(payload)
    rows = [row for data in spec["datasets"].values() for row in data if "throughput_text" in row]
    assert "untimed (boundary probe)" in {row["throughput_text"] for row in rows}
