"""The dataloader collector end to end on the CPU (a real collection, once per module), its tidy export
rows, the report section (HTML and PDF), and the feed verdict against the committed H100 resnet50 run."""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import vl_convert
from paths import FROZEN
from paths import REPO as ROOT
from pypdf import PdfReader

from collectors.__main__ import main as collect_main
from collectors.dataloader.collect import skipped_payload
from collectors.dataloader.image_pipeline import sample_bytes
from gpuplan_schema.payloads import DataloaderPayload, WorkloadPayload
from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import build_document, load_document, save_document
from planner.charts.base import with_width
from planner.charts.dataloader import build_loader_heatmap, build_worker_scaling_chart
from planner.export.tidy import iter_tidy_rows
from planner.model.dataloader_verdict import appetite_point, best_per_workers, build_feed_verdicts
from planner.render.report import render_report, render_report_html
from planner.report.dataloader import DataloaderSection
from planner.report.frame import NotCollectedSection, build_report_for
from planner.units import format_bytes

VM_CPU = FROZEN / "vm-cpu"
H100 = FROZEN / "h100-80gb"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("jpeg-cache")


@pytest.fixture(scope="module")
def cpu_folder(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """A real quick collection on this CPU, beside the committed CPU run's other documents."""
    out = tmp_path_factory.mktemp("results")
    assert collect_main(["--only", "dataloader", "--out", str(out), "--machine", "vm-cpu",
                         "--dataset-cache", str(cache)]) == 0
    folder = out / "vm-cpu"
    for path in VM_CPU.glob("*.json"):
        shutil.copy(path, folder / path.name)
    return folder


@pytest.fixture(scope="module")
def loader(cpu_folder: Path) -> DataloaderPayload:
    return load_document(cpu_folder / "dataloader.json").payload


def h100_resnet50() -> WorkloadPayload:
    return load_document(H100 / "workload-resnet50.json").payload


def test_the_cpu_collection_measures_every_worker_count_unpinned(loader):
    assert loader.status == "ok" and loader.device == "cpu" and loader.scale == "tiny" and loader.profile == "quick"
    assert loader.batch == 16 and loader.batch_bytes == 16 * sample_bytes()
    assert [(p.workers, p.prefetch, p.pin_memory) for p in loader.points] == [(0, None, False), (1, 2, False),
                                                                               (2, 2, False)]
    assert all(p.status == "ok" and p.samples_per_s.median > 0 for p in loader.points), loader.points
    assert [p.formula_bytes for p in loader.points] == [0, 2 * loader.batch_bytes, 4 * loader.batch_bytes]
    filled = [p for p in loader.points if p.memory_full_bytes is not None]
    assert [(p.workers, p.prefetch) for p in filled] == [(1, 2)] and filled[0].buffer_full
    assert loader.memory_measure == "pss" and loader.copy.startswith("none")
    assert loader.dataset.count == 64 and loader.dataset.decode_s.n == 32
    assert [(e.persistent, e.status) for e in loader.epochs] == [(False, "ok"), (True, "ok")]


def test_a_cache_inside_the_results_folder_is_refused_before_anything_runs(tmp_path, capsys):
    out = tmp_path / "results"
    assert collect_main(["--only", "dataloader", "--out", str(out), "--dataset-cache", str(out / "cache")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(out / "cache") in err and "inside the results folder" in err
    assert not out.exists()


def test_export_rows_carry_each_point_with_its_loader_settings_in_columns(cpu_folder, loader):
    rows = [r for r in iter_tidy_rows(load_machine(cpu_folder)) if r.collector == "dataloader"]
    throughput = [r for r in rows if r.metric == "throughput_per_s"]
    assert [(r.value, r.spread, r.n) for r in throughput] == [
        (p.samples_per_s.median, p.samples_per_s.iqr, p.samples_per_s.n) for p in loader.points]
    for row, point in zip(throughput, loader.points, strict=True):
        assert (row.workers, row.prefetch, row.pin) == (point.workers, point.prefetch, point.pin_memory)
        assert row.persistent is False and row.epoch is None and row.unit == "samples/s" and row.batch == 16
    memory = {(r.workers, r.prefetch, r.pin): r.value for r in rows if r.metric == "host_memory_bytes"}
    assert len(memory) == 3 and all(v > 50e6 for v in memory.values())
    firsts = [r for r in rows if r.metric == "time_to_first_batch_s"]
    assert len(firsts) == 3 + 2 and sum(r.epoch == 2 for r in firsts) == 2
    assert {r.metric for r in rows} >= {"throughput_per_s", "host_memory_bytes", "time_to_first_batch_s",
                                        "batches_per_s", "cpu_utilization", "host_memory_full_bytes", "epoch_gap_s"}
    assert all(r.status == "ok" and r.value is not None for r in rows)


def visible(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", re.sub(r"<script.*?</script>", "", html, flags=re.S)))


def test_the_report_section_shows_charts_the_buffer_table_and_the_verdicts(cpu_folder, loader, tmp_path):
    report = build_report_for(cpu_folder)
    (section,) = [s for s in report.sections if isinstance(s, DataloaderSection)]
    assert [v.workload for v in section.applicable] == ["resnet50"]
    assert "reduced sizes" in section.applicable[0].sentence and not section.applicable[0].compared
    assert sorted(v.workload for v in section.not_applicable) == ["conv-rollout", "gpt-small", "mlp-stgan"]
    assert [name for name, _ in section.heatmaps] == ["unpinned"]
    html_path, pdf_path = render_report(cpu_folder, tmp_path, full=True)
    html = html_path.read_text(encoding="utf-8")
    assert '<a href="#dataloader">Input pipeline</a>' in html
    assert 'data-chart="chart-dataloader-heatmap-unpinned"' in html and 'data-chart="chart-dataloader-scaling"' in html
    text = visible(html)
    for row in section.buffer:
        cells = f"{row.workers} {row.prefetch} not pinned {row.batches_buffered} {format_bytes(row.formula_bytes)}"
        assert cells in text
    assert "dataloader" not in " ".join(re.findall(r"Not collected:[^.]*\.", text))
    pdf = re.sub(r"\s+", " ", " ".join(page.extract_text() for page in PdfReader(pdf_path).pages))
    assert "Input pipeline" in pdf and "RAM buffer" in pdf and "no verdict for resnet50" in pdf


def test_a_machine_without_the_document_says_not_collected():
    report = build_report_for(H100.parent / "h200")  # the H200 run has no dataloader document
    (line,) = [s for s in report.sections if isinstance(s, NotCollectedSection)]
    assert "dataloader" in line.kinds and not any(isinstance(s, DataloaderSection) for s in report.sections)
    assert re.search(r"Not collected: [^.]*dataloader", visible(render_report_html(report)))


def test_a_loader_far_slower_than_the_gpu_says_the_machine_cannot_feed_it(loader):
    real = dataclasses.replace(loader, scale="reference")   # judged as if the CPU's rates were a GPU host's
    resnet = h100_resnet50()
    (verdict, other) = build_feed_verdicts(real, [resnet, load_document(H100 / "workload-gpt-small.json").payload])
    gpu = appetite_point(resnet).throughput_per_s  # the main-batch trial the verdict judges against
    rates = {r.workers: r.samples_per_s for r in best_per_workers(real)}
    assert verdict.compared and verdict.gpu_samples_per_s == gpu and verdict.workers_needed is None
    assert verdict.best_fraction == pytest.approx(max(rates.values()) / gpu)
    assert "cannot feed resnet50 at bf16, batch 256" in verdict.sentence
    assert f"{math.ceil(gpu / rates[1])} workers" in verdict.sentence
    assert not other.applies and other.workload == "gpt-small"


def test_the_fewest_workers_that_keep_up_feed_the_gpu(loader):
    real = dataclasses.replace(loader, scale="reference")
    rates = {r.workers: r.samples_per_s for r in best_per_workers(real)}
    appetite = rates[1] * 0.99
    resnet = h100_resnet50()
    slower = dataclasses.replace(resnet, points=[dataclasses.replace(p, throughput_per_s=appetite)
                                                 for p in resnet.points])
    (verdict,) = build_feed_verdicts(real, [slower])
    needed = min(w for w, r in rates.items() if r >= appetite)
    enough = {0: "no workers (the main process loading) are", 1: "1 worker is", 2: "2 workers are"}[needed]
    assert verdict.workers_needed == needed
    assert verdict.sentence.startswith(f"{enough} enough for resnet50 at bf16, batch 256")
    assert f"{needed + 1} of the 2 cores" in verdict.sentence


def test_heatmaps_share_one_colour_scale_and_render_to_svg(loader):
    assert build_loader_heatmap(loader, pinned=True) is None   # nothing is pinned on a CPU
    spec = build_loader_heatmap(loader, pinned=False)
    cells = spec["datasets"]["cells"]   # the layers share one data set
    assert len(cells) == len(loader.points)
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == [0, max(c["rate"] for c in cells)]
    assert {(c["workers"], c["prefetch"]) for c in cells} == {("0", "none"), ("1", "2"), ("2", "2")}
    scaling = build_worker_scaling_chart(loader, [("resnet50 bf16, batch 256", 3914.0)])
    for chart in (spec, scaling):
        svg = vl_convert.vegalite_to_svg(with_width(chart, 560))
        assert svg.startswith("<svg") and "num_workers" in svg


def test_a_skipped_collection_renders_its_reason_and_exports_a_skipped_row(tmp_path):
    folder = tmp_path / "vm-cpu"
    folder.mkdir()
    shutil.copy(VM_CPU / "environment.json", folder / "environment.json")
    payload = skipped_payload(torch.device("cpu"), "quick", "Pillow is not installed", time.perf_counter(), 16)
    save_document(build_document("dataloader", "dataloader", "1", "vm-cpu", payload), folder / "dataloader.json")
    html = visible(render_report_html(build_report_for(folder)))
    assert "The input pipeline was not measured: Pillow is not installed." in html
    (row,) = [r for r in iter_tidy_rows(load_machine(folder)) if r.collector == "dataloader"]
    assert (row.metric, row.status, row.value) == ("throughput_per_s", "skipped", None)


# A fresh interpreter where the planner's stack and the named optional modules cannot be imported.
BLOCKED_RUN = textwrap.dedent("""
    import importlib.abc, sys
    blocked = set(sys.argv[1].split(","))

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                raise ModuleNotFoundError(f"blocked for this test: {name}", name=name)

    sys.meta_path.insert(0, Block())
    from collectors.__main__ import main
    sys.exit(main(["--only", "dataloader", "--out", sys.argv[2], "--machine", "t", "--dataset-cache", sys.argv[3]]))
""")
PLANNER_STACK = "pandas,jinja2,altair,vl_convert,weasyprint,pydantic,pypdf,planner"


def run_blocked(blocked: str, out: Path, cache: Path) -> tuple[DataloaderPayload, list[str]]:
    """The document and the stderr lines that name the blocked package."""
    proc = subprocess.run([sys.executable, "-c", BLOCKED_RUN, f"{PLANNER_STACK},{blocked}", str(out), str(cache)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    named = [line for line in proc.stderr.splitlines() if "needs " in line]
    return load_document(out / "t" / "dataloader.json").payload, named


def test_without_psutil_throughput_is_still_measured_and_memory_says_why(tmp_path, cache, cpu_folder):
    payload, lines = run_blocked("psutil", tmp_path, cache)
    assert lines == ["dataloader: no memory or CPU figures: needs psutil (pip install psutil)"]
    assert payload.status == "ok" and "needs psutil (pip install psutil)" in payload.memory_measure
    assert all(p.samples_per_s and p.memory_peak_bytes is None and p.cpu_cores_busy is None for p in payload.points)


def test_without_pillow_the_collector_writes_a_skipped_document(tmp_path, cache):
    payload, lines = run_blocked("PIL", tmp_path, cache)
    assert lines == ["dataloader: skipped: needs Pillow (pip install Pillow)"]
    assert (payload.status, payload.reason, payload.points) == ("skipped", "needs Pillow (pip install Pillow)", [])
