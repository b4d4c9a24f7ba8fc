"""Multi-GPU documents in the export, the planner's scaling figures and the report, on a real collection:
2 gloo ranks on this CPU (tests/fixtures/multigpu/cpu-gloo-2, made by `gpuplan collect --only environment
collectives ddp --dist-backend gloo --gpus 2 --workload gpt-small --workload resnet50`)."""

from __future__ import annotations

import dataclasses
import re
import shutil

import pytest
import vl_convert
from paths import FROZEN
from paths import REPO as ROOT
from pypdf import PdfReader

from collectors.distributed import busbw
from gpuplan_schema.results import MachineResults, load_machine
from planner.charts.base import with_width
from planner.export.tidy import iter_tidy_rows
from planner.render.report import render_report, render_report_html
from planner.report.frame import NotCollectedSection, build_report, build_report_for
from planner.report.multigpu import PREFETCH, WORKER_CORE_SHARE, MultiGpuSection
from planner.scaling.scaling import ASSUMED_EFFICIENCY, DDP_BUCKET_BYTES, load_scaling

GLOO = ROOT / "tests" / "fixtures" / "multigpu" / "cpu-gloo-2"
CPU = ROOT / "tests" / "fixtures" / "results" / "cpu-test"
NEW_METRICS = ("busbw_bytes_per_s", "algbw_bytes_per_s", "latency_s", "scaling_efficiency", "compute_step_s",
               "gpu_matmul_flops_per_s")


@pytest.fixture(scope="module")
def machine() -> MachineResults:
    return load_machine(GLOO)


def as_reference(machine: MachineResults) -> MachineResults:
    """The same measured numbers labelled as a GPU run, to exercise what the planner does with one."""
    docs = {stem: dataclasses.replace(doc, payload=dataclasses.replace(doc.payload, scale="reference"))
            if doc.kind in ("ddp", "collectives") else doc for stem, doc in machine.documents.items()}
    return dataclasses.replace(machine, documents=docs)


def section_of(machine: MachineResults) -> MultiGpuSection:
    return next(s for s in build_report(machine).sections if isinstance(s, MultiGpuSection))


def test_collectives_rows_by_op_and_size_with_the_gpu_count_in_its_column(machine):
    collectives = machine.documents["collectives"].payload
    rows = [r for r in iter_tidy_rows(machine) if r.collector == "collectives"]
    assert len(rows) == 3 * len(collectives.points)
    for p in collectives.points:
        mine = {r.metric: r for r in rows if (r.op, r.batch) == (p.op, p.size_bytes)}
        assert {(r.gpu_count, r.nodes, r.workload, r.precision) for r in mine.values()} == {(2, 1, None, "fp32")}
        assert (mine["busbw_bytes_per_s"].value, mine["busbw_bytes_per_s"].unit) == (p.busbw_bytes_per_s.median, "B/s")
        assert mine["algbw_bytes_per_s"].value == p.algbw_bytes_per_s.median
        assert (mine["latency_s"].value, mine["latency_s"].spread) == (p.time_s.median, p.time_s.iqr)


def test_ddp_rows_give_throughput_and_efficiency_per_gpu_count(machine):
    ddp = machine.documents["ddp"].payload
    rows = [r for r in iter_tidy_rows(machine) if r.collector == "ddp"]
    for p in ddp.points:
        mine = {r.metric: r for r in rows if (r.workload, r.gpu_count) == (p.workload, p.gpus)}
        throughput = mine["throughput_per_s"]
        assert (throughput.value, throughput.batch) == (p.throughput_per_s, p.per_gpu_batch)
        assert mine["scaling_efficiency"].value == p.scaling_efficiency and mine["scaling_efficiency"].unit == "1"
        assert mine["step_s"].value == p.step_s.median and mine["compute_step_s"].value == p.compute_step_s.median
    matmul = [r for r in rows if r.metric == "gpu_matmul_flops_per_s"]
    assert [(r.rank, r.gpu_count) for r in matmul] == [(0, 1), (1, 1)] and {r.precision for r in matmul} == {"bf16"}


def test_metrics_reference_documents_every_new_metric():
    readme = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    for metric in NEW_METRICS:
        assert f"`{metric}`" in readme, metric


def test_a_cpu_test_run_never_counts_as_a_measured_efficiency(machine):
    scaling = load_scaling(machine)
    assert scaling.cpu_test_only and not scaling.measured
    estimate = scaling.efficiency("gpt-small", 2)
    assert (estimate.value, estimate.source) == (ASSUMED_EFFICIENCY, "assumed") and "seed" in estimate.note


def test_planner_cites_the_measured_efficiency_and_falls_back_in_order(machine):
    gpu_like = as_reference(machine)
    scaling = load_scaling(gpu_like)
    ddp = gpu_like.documents["ddp"].payload
    two = next(p for p in ddp.points if p.workload == "resnet50" and p.gpus == 2)
    measured = scaling.efficiency("resnet50", 2)
    assert (measured.value, measured.source) == (two.scaling_efficiency, "measured")
    assert "2 GPUs" in measured.note and f"per-GPU batch {two.per_gpu_batch}" in measured.note
    assert scaling.efficiency("resnet50", 1).value == 1.0
    # A workload ddp did not run: modelled from the measured all_reduce, no overlap (a lower bound).
    algbw = scaling.bus["all_reduce"].algbw_at(DDP_BUCKET_BYTES)
    modelled = scaling.efficiency("mlp-stgan", 2, step_s=0.01, gradient_bytes=4e6)
    assert modelled.source == "modelled" and modelled.value == pytest.approx(0.01 / (0.01 + 4e6 / algbw))
    assert scaling.efficiency("mlp-stgan", 4, step_s=0.01, gradient_bytes=4e6).source == "assumed"  # no 4-GPU bus


def test_bus_bandwidth_interpolates_between_measured_sizes(machine):
    bus = load_scaling(as_reference(machine)).bus["all_reduce"]
    assert bus.gpus == 2 and bus.sizes_bytes == sorted(bus.sizes_bytes)
    for size, stat in zip(bus.sizes_bytes, bus.algbw, strict=True):
        assert bus.algbw_at(size) == pytest.approx(stat.median)
    a, b = bus.algbw[0].median, bus.algbw[1].median
    middle = bus.algbw_at(int((bus.sizes_bytes[0] * bus.sizes_bytes[1]) ** 0.5))
    assert middle == pytest.approx((a * b) ** 0.5, rel=1e-4)  # halfway in log size: the geometric mean
    assert bus.algbw_at(1) == pytest.approx(a) and bus.algbw_at(1 << 40) == pytest.approx(bus.algbw[-1].median)
    assert bus.peak_busbw_bytes_per_s == max(s.median for s in bus.busbw)


def test_scaling_table_follows_seed_004_rules(machine):
    section = section_of(machine)
    cores = machine.environment.cpu.logical_cores
    assert [t.workload.workload for t in section.tables] == ["gpt-small", "resnet50"]
    for table in section.tables:
        w = table.workload
        for row in table.rows:
            per_gpu = max(1, int(WORKER_CORE_SHARE * cores) // row.gpus)
            assert row.total_batch == row.gpus * w.per_gpu_batch and row.workers == per_gpu * row.gpus
            assert row.ram_buffer_bytes == row.workers * PREFETCH * w.batch_bytes
            assert row.lr == pytest.approx(w.base_lr * row.gpus)
        one, two = table.rows
        assert two.speedup == pytest.approx(two.throughput / one.throughput)
        assert two.efficiency == pytest.approx(two.speedup / 2)


def test_bus_rows_quote_the_peak_and_the_smallest_message(machine):
    section = section_of(machine)
    collectives = machine.documents["collectives"].payload
    assert [r.op for r in section.bus_rows] == list(busbw.OPS)
    for row in section.bus_rows:
        points = [p for p in collectives.points if p.op == row.op]
        assert row.peak_busbw.median == max(p.busbw_bytes_per_s.median for p in points)
        assert row.latency_size_bytes == 8 << 10 and row.latency == points[0].time_s


def test_busbw_chart_renders_to_svg_offline(machine):
    spec = section_of(machine).busbw_chart
    assert spec["encoding"]["x"]["scale"]["type"] == "log"
    svg = vl_convert.vegalite_to_svg(with_width(spec, 560))
    assert svg.startswith("<svg") and "Bus bandwidth" in svg and "all_reduce" in svg


def test_report_html_and_pdf_show_the_section_with_the_cpu_note(machine, tmp_path):
    html, pdf = render_report(GLOO, tmp_path, full=True)
    page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html.read_text(encoding="utf-8")))
    assert "Several GPUs" in page and "CPU processes, not GPUs." in page
    assert "NVLink multicast off in every rank" in page and "gpt-small: data-parallel training (DDP, bf16)" in page
    text = re.sub(r"\s+", " ", " ".join(p.extract_text() for p in PdfReader(pdf).pages))
    assert "Several GPUs" in text and "Collectives on 2 ranks" in text


def test_the_measured_4_gpu_machine_shows_its_4_gpu_rows():
    """The committed 4 × H200 run (the gloo fixture has 2 ranks): every count 1 → 2 → 4 in each workload's
    table, as the ddp document has it, and the collectives and topology of 4 GPUs on the page."""
    real = load_machine(FROZEN / "h200-x4")
    ddp = real.documents["ddp"].payload
    section = section_of(real)
    for table in section.tables:
        assert [r.gpus for r in table.rows] == [1, 2, 4]
        points = sorted((p for p in ddp.points if p.workload == table.workload.workload), key=lambda p: p.gpus)
        assert [r.efficiency for r in table.rows] == [p.scaling_efficiency for p in points]
    page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", render_report_html(build_report(real))))
    topology = load_scaling(real).topology
    assert "Collectives on 4 ranks" in page and topology in page and "6/6 pairs" in topology  # 4 GPUs: 6 pairs


def test_without_the_documents_the_report_says_not_collected(tmp_path):
    report = build_report_for(CPU)
    assert not any(isinstance(s, MultiGpuSection) for s in report.sections)
    line = next(s for s in report.sections if isinstance(s, NotCollectedSection))
    assert {"collectives", "ddp"} <= set(line.kinds)
    folder = tmp_path / "cpu-gloo-2"
    shutil.copytree(GLOO, folder)
    (folder / "ddp.json").unlink()
    section = section_of(load_machine(folder))
    assert section.not_collected == ["ddp"] and not section.tables
    assert "Not collected: ddp." in render_report_html(build_report_for(folder))
