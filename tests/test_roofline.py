"""The per-op roofline on the CPU: known cases really profiled (a large matmul is math-bound, an
elementwise add memory-bound, a tiny op repeated many times latency-bound), the class rule at its
edges, and the collector end to end on tiny workloads through the CLI, with its export rows and
report sections.

The known cases use chosen roofs (100 GFLOP/s fp32 and 10 GB/s: a ridge at 10 FLOP/byte; a launch
latency of 100 µs, generous for this shared CPU's noisy timings) so that the class follows from the
op alone; the end-to-end run uses the real CPU ceilings of the committed fixture.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
import torch
import vl_convert
from paths import FIXTURES, REPO
from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent
from torch.utils.flop_counter import flop_registry

from collectors.__main__ import main as collect_main
from collectors.core.profiles import CPU_MAIN_BATCH
from collectors.roofline.collect import collect_roofline
from collectors.roofline.op_accounting import OpCall
from collectors.roofline.op_profile import attribute, profile_steps
from collectors.roofline.op_roofline import LATENCY_MULTIPLE, build_ops, build_roofs, classify
from collectors.workloads.accounting import count_flops
from collectors.workloads.sweep_plan import instantiate
from collectors.workloads.training import Variant, build_step, precision_mode, prepare_model
from gpuplan_schema.payloads import OpRoofline, RooflinePayload, RooflineRoofs
from gpuplan_schema.progress import Progress
from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import DocumentError, load_document
from planner.charts.base import with_width
from planner.export.tidy import iter_tidy_rows
from planner.model.roofline import OUTSIDE, class_shares, rank_by_time_lost
from planner.render.report import build_jinja_env, render_report_html
from planner.report.frame import NotCollectedSection, build_report_for
from planner.report.roofline import OpRooflineSection, build_op_roofline_section

CPU = torch.device("cpu")
FIXTURE = FIXTURES / "cpu-test"
PEAK, BANDWIDTH, LAUNCH = 100e9, 10e9, 100e-6
CHOSEN = RooflineRoofs("chosen for the test", {"fp32": PEAK}, BANDWIDTH, LAUNCH)
CLASSES = {"math-bound", "memory-bound", "latency-bound", "unclassified"}
WORKLOADS = ("gpt-small", "mlp-stgan")


def quiet_progress() -> Progress:
    return Progress("test", total=1, stream=io.StringIO())


def profile_ops(fn, roofs: RooflineRoofs = CHOSEN, steps: int = 3) -> dict[str, OpRoofline]:  # noqa: ANN001
    profiled = profile_steps(fn, CPU, steps)
    assert profiled.unmatched == 0 and profiled.timer == "cpu"
    return {op.name: op for op in build_ops(profiled.calls, roofs, "fp32", steps)}


# ── known cases, really profiled ────────────────────────────────────────────────────────────────

def test_large_matmul_is_math_bound():
    n = 512
    a, b = torch.randn(n, n), torch.randn(n, n)
    mm = profile_ops(lambda: a @ b)["aten::mm"]
    assert mm.op_class == "math-bound"
    assert mm.calls == 1 and mm.time_s.n == 3 and mm.time_s.median > 0
    assert mm.intensity == pytest.approx(2 * n**3 / (3 * n * n * 4))   # 85 FLOP/byte, above the ridge of 10
    assert mm.expected_s == pytest.approx(2 * n**3 / PEAK)
    assert mm.efficiency == pytest.approx(mm.expected_s / mm.time_s.median)


def test_elementwise_add_is_memory_bound():
    n = 1 << 22
    a, b = torch.randn(n), torch.randn(n)
    add = profile_ops(lambda: a + b)["aten::add"]
    assert add.op_class == "memory-bound"
    assert add.intensity == pytest.approx(1 / 12)  # one FLOP per 4 + 4 bytes read and 4 written
    assert add.expected_s == pytest.approx(12 * n / BANDWIDTH)
    assert add.math_s == pytest.approx(n / PEAK) and add.memory_s > add.math_s


def test_tiny_op_repeated_many_times_is_latency_bound():
    x, y = torch.randn(8), torch.randn(8)
    repeats = 200
    add = profile_ops(lambda: [x + y for _ in range(repeats)])["aten::add"]
    assert add.calls == repeats
    assert add.op_class == "latency-bound"
    assert add.expected_s / repeats == pytest.approx(96 / BANDWIDTH)        # far under one launch latency
    assert add.time_s.median / repeats < LATENCY_MULTIPLE * LAUNCH          # measured: the fixed cost per call
    assert add.efficiency < 0.01


def test_the_same_ops_against_this_machines_real_ceilings():
    roofs = build_roofs(load_document(FIXTURE / "ceilings.json").payload, "cpu", "fixture")
    a, b = torch.randn(512, 512), torch.randn(1 << 22)
    ops = profile_ops(lambda: (a @ a, b + b), roofs)
    assert ops["aten::mm"].op_class == "math-bound"      # 85 FLOP/byte against a fp32 ridge of 16
    assert ops["aten::add"].op_class == "memory-bound"


# ── the class rule at its edges ─────────────────────────────────────────────────────────────────

def test_a_small_op_that_runs_long_is_classed_by_its_roof_not_as_latency():
    # 1 µs of work, under one 10 µs launch, but it took 1 ms: launching is not what holds it back
    assert classify(None, 1e-6, 1e-6, 1e-3, 1, 10e-6) == "memory-bound"
    assert classify(None, 1e-6, 1e-6, 20e-6, 1, 10e-6) == "latency-bound"


def test_no_roof_is_unclassified_and_nothing_moved_is_latency():
    assert classify(None, None, None, 1e-3, 1, 10e-6) == "unclassified"
    assert classify(None, 0.0, 0.0, 1e-3, 5, None) == "latency-bound"
    assert classify(2e-3, None, 2e-3, 3e-3, 1, None) == "math-bound"  # no bandwidth: the math roof alone


def test_missing_ceilings_are_said_not_assumed():
    absent = build_roofs(None, "cpu", "r/m/ceilings.json")
    assert absent.source == "absent" and "no ceilings document" in absent.missing[0]
    ceilings = load_document(FIXTURE / "ceilings.json").payload
    elsewhere = build_roofs(ceilings, "cuda", "x")
    assert not elsewhere.flops_per_s and "measured on cpu" in elsewhere.missing[0]
    roofs = build_roofs(ceilings, "cpu", "x")
    assert set(roofs.flops_per_s) == {"fp32", "fp16", "bf16"}
    assert any(line.startswith("tf32 matmul peak: skipped") for line in roofs.missing)
    assert roofs.launch_latency_s == ceilings.launch_latency_s.median


def test_without_ceilings_every_op_is_unclassified_and_the_report_says_why():
    roofs = build_roofs(None, "cpu", "nowhere/ceilings.json")
    payload = collect_roofline("mlp-stgan", roofs, CPU, quiet_progress())
    assert payload.status == "ok" and payload.ops
    assert {op.op_class for op in payload.ops} == {"unclassified"}
    assert all(op.expected_s is None and op.lost_s is None for op in payload.ops)
    html = render_report_html_of(payload)
    assert "Roofs missing:" in html and "no ceilings document" in html


def render_report_html_of(payload: RooflinePayload) -> str:
    """The section's partial alone, as the report renders it."""
    section = build_op_roofline_section(payload)
    template = build_jinja_env().from_string('{% include "partials/op_roofline.html.j2" %}')
    return template.render(section=section, pdf=False)


# ── the collector end to end ────────────────────────────────────────────────────────────────────

@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("roofline") / "cpu-test"
    folder.mkdir()
    for name in ("ceilings.json", "environment.json"):
        shutil.copy(FIXTURE / name, folder / name)
    args = ["--only", "roofline", "--out", str(folder.parent), "--machine", "cpu-test"]
    assert collect_main(args + [arg for w in WORKLOADS for arg in ("--workload", w)]) == 0
    return folder


@pytest.fixture(scope="module")
def payloads(collected: Path) -> dict[str, RooflinePayload]:
    return {w: load_document(collected / f"roofline-{w}.json").payload for w in WORKLOADS}


def test_one_document_per_workload_at_its_main_configuration(payloads):
    fixture_bf16 = load_document(FIXTURE / "ceilings.json").payload.matmul[3].flops_per_s.median
    for name, p in payloads.items():
        assert (p.status, p.scale, p.precision, p.timer, p.steps) == ("ok", "tiny", "bf16", "cpu", 3)
        assert p.batch == CPU_MAIN_BATCH[name] and p.training
        assert p.unmatched_calls == 0 and p.step_s is not None
        assert p.roofs.flops_per_s["bf16"] == fixture_bf16
        assert {op.op_class for op in p.ops} <= CLASSES
        assert all(op.time_s.n == 3 and op.time_s.median > 0 for op in p.ops)
        assert p.ops == sorted(p.ops, key=lambda op: op.time_s.median, reverse=True)


def test_counted_flops_match_flop_counter_mode_for_the_whole_step(payloads):
    """The FlopCounterMode formulas applied per op add up to FlopCounterMode's own total."""
    registry = {"aten::" + str(packet).split(".", 1)[1] for packet in flop_registry if str(packet).startswith("aten.")}
    for name, p in payloads.items():
        workload = instantiate(name, torch.device("cpu"))
        with precision_mode("bf16", CPU, Variant()):
            step = build_step(workload, prepare_model(workload, CPU, Variant()), "bf16", p.batch, CPU, Variant())
            expected = count_flops(step)
        assert sum(op.flops for op in p.ops if op.name in registry) == pytest.approx(expected), name


def test_ops_without_a_formula_are_listed(payloads):
    gpt = payloads["gpt-small"]
    assert "aten::native_layer_norm" in gpt.no_flop_formula
    assert "aten::mm" not in gpt.no_flop_formula and "aten::gelu" not in gpt.no_flop_formula
    gelu = next(op for op in gpt.ops if op.name == "aten::gelu")
    assert gelu.op_class in ("memory-bound", "latency-bound") and gelu.intensity < 1


def test_export_rows_carry_op_name_and_its_class_in_columns_of_their_own(collected, payloads):
    rows = [r for r in iter_tidy_rows(load_machine(collected)) if r.collector == "roofline"]
    for name, p in payloads.items():
        mine = [r for r in rows if r.workload == name and r.batch == p.batch]
        for op in p.ops:
            by_metric = {r.metric: r for r in mine if r.op == op.name}
            assert {(r.bound, r.status) for r in by_metric.values()} == {(op.op_class, "ok")}
            assert by_metric["op_time_s"].value == op.time_s.median and by_metric["op_time_s"].n == 3
            assert by_metric["op_bytes"].value == op.read_bytes + op.written_bytes
            assert ("op_flops" in by_metric) == (op.flops is not None)
            if op.flops is not None and op.bytes:
                assert by_metric["arithmetic_intensity"].value == pytest.approx(op.flops / op.bytes)
            assert all(r.precision == "bf16" and r.batch == p.batch for r in by_metric.values())


def test_report_has_a_roofline_section_per_workload_after_its_workload(collected, payloads):
    report = build_report_for(collected)
    sections = [s for s in report.sections if isinstance(s, OpRooflineSection)]
    assert [s.name for s in sections] == sorted(WORKLOADS, key=lambda w: f"roofline-{w}.json")
    html = render_report_html(report)
    for s in sections:
        assert s.chart is not None and s.share_chart is not None and s.top
        assert f'data-chart="chart-{s.anchor}-op-roofline"' in html
        assert s.top[0].op.lost_s == max(op.lost_s for op in s.payload.ops if op.lost_s is not None)
        svg = vl_convert.vegalite_to_svg(with_width(s.chart, 560))
        assert "Arithmetic intensity" in svg and svg.count("<path") > 3
        shares = class_shares(s.payload)
        assert sum(x.fraction for x in shares) == pytest.approx(1.0)
        assert [x.name for x in shares if x.name != OUTSIDE] == [a for a in ("math-bound", "memory-bound",
                                                                     "latency-bound", "unclassified")
                                                                 if any(op.op_class == a for op in s.payload.ops)]
    assert html.count("How ops are classed.") == 1
    assert "Top ops by time lost against their roof" in html


def test_a_machine_without_roofline_documents_says_not_collected():
    report = build_report_for(FIXTURE)
    line = next(s for s in report.sections if isinstance(s, NotCollectedSection))
    assert "roofline" in line.kinds
    assert not any(isinstance(s, OpRooflineSection) for s in report.sections)


def test_a_bad_class_names_the_file_and_field(collected, tmp_path):
    doc = json.loads((collected / "roofline-mlp-stgan.json").read_text(encoding="utf-8"))
    doc["payload"]["ops"][0]["op_class"] = "fast"
    path = tmp_path / "roofline-mlp-stgan.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(DocumentError, match=r"roofline-mlp-stgan.json: payload.ops\[0\].op_class: 'fast'"):
        load_document(path)


def test_ranking_puts_ops_without_a_roof_last():
    stat = load_document(FIXTURE / "ceilings.json").payload.launch_latency_s
    judged = OpRoofline("aten::a", 1, stat, 10, 10, "memory-bound", expected_s=0.0)
    unjudged = OpRoofline("aten::b", 1, stat, 10, 10, "unclassified")
    assert rank_by_time_lost([unjudged, judged]) == [judged, unjudged]


def test_cuda_attribution_counts_kernels_below_each_call_and_not_range_spans():
    """The GPU branch of the attribution, on real profiler event objects shaped as a CUDA profile gives them:
    a kernel hangs off the innermost aten op that launched it, and every profiler range (ours, the optimizer's)
    carries a device-side span of its own name, which is not a kernel and must not be counted."""
    cuda = DeviceType.CUDA

    def event(i: int, name: str, start: float, end: float, annotation: bool = False) -> FunctionEvent:
        return FunctionEvent(i, name, thread=1, start_us=start, end_us=end, use_device="cuda",
                             is_user_annotation=annotation)

    def nest(parent: FunctionEvent, child: FunctionEvent) -> None:
        parent.append_cpu_child(child)
        child.set_cpu_parent(parent)

    mm_range, mm = event(1, "roofline#0", 0, 50, True), event(2, "aten::mm", 1, 49)
    nest(mm_range, mm)
    mm.append_kernel("sm90_xmma_gemm_bf16", 0, 100.0)
    mm_range.append_kernel("roofline#0", 0, 130.0)                # the range's device-side span
    conv_range, conv = event(3, "roofline#1", 60, 90, True), event(4, "aten::convolution", 61, 89)
    cudnn = event(5, "aten::cudnn_convolution", 62, 88)
    nest(conv_range, conv)
    nest(conv, cudnn)
    cudnn.append_kernel("implicit_gemm", 0, 40.0)
    cudnn.append_kernel("nchwToNhwc", 0, 5.0)
    step, outside = event(6, "Optimizer.step#AdamW.step", 100, 200, True), event(7, "aten::add_", 101, 110)
    nest(step, outside)
    step.append_kernel("Optimizer.step#AdamW.step", 0, 90.0)
    outside.append_kernel("vectorized_elementwise_kernel", 0, 7.0)
    kernel_event = FunctionEvent(8, "sm90_xmma_gemm_bf16", thread=1, start_us=2, end_us=102, device_type=cuda)
    calls = [OpCall("aten::mm", 0, 1.0, 1, 1, "bf16"), OpCall("aten::convolution", 0, 1.0, 1, 1, "bf16")]
    total_us = attribute([mm_range, mm, conv_range, conv, cudnn, step, outside, kernel_event], calls, cuda=True)
    assert total_us == pytest.approx(100 + 40 + 5 + 7)
    assert calls[0].time_s == pytest.approx(100e-6)
    assert [(k, pytest.approx(s)) for k, s in calls[0].kernels] == [("sm90_xmma_gemm_bf16", 100e-6)]
    assert calls[1].time_s == pytest.approx(45e-6) and [k for k, _ in calls[1].kernels] == ["implicit_gemm",
                                                                                          "nchwToNhwc"]
    assert all(c.matched for c in calls)


# ── several batches (roofline collector 2) ──────────────────────────────────────────────────────

def test_each_workload_is_profiled_at_a_quarter_and_twice_its_main_batch(payloads):
    for name, p in payloads.items():
        main = CPU_MAIN_BATCH[name]
        assert [b.batch for b in p.profiled()] == [max(1, main // 4), main, 2 * main]
        assert all(b.status == "ok" and b.steps == 3 and b.unmatched_calls == 0 for b in p.profiled())
        assert next(b for b in p.profiled() if b.batch == main).ops == p.ops


def test_each_batch_counts_its_own_work(payloads):
    """mlp-stgan is Linear layers: every matmul (forward and both backward ones) scales with the batch, so
    the profile at 8x the samples counts 8x the matmul FLOPs. (Times on this shared CPU are too noisy to
    compare across batches; a GPU's are what the planner reads.)"""
    small, _, large = payloads["mlp-stgan"].profiled()
    flops = {b.batch: sum(op.flops or 0 for op in b.ops if op.name in ("aten::mm", "aten::addmm"))
             for b in (small, large)}
    assert flops[small.batch] > 0
    assert flops[large.batch] == pytest.approx(flops[small.batch] * large.batch / small.batch)
    assert large.class_time_s() and sum(large.class_time_s().values()) == pytest.approx(large.op_time_s)


def test_export_has_op_and_class_rows_at_every_profiled_batch(collected, payloads):
    rows = [r for r in iter_tidy_rows(load_machine(collected)) if r.collector == "roofline"]
    for name, p in payloads.items():
        for at in p.profiled():
            mine = [r for r in rows if r.workload == name and r.batch == at.batch]
            assert {r.op for r in mine if r.metric == "op_time_s"} == {op.name for op in at.ops}
            classes = {r.bound: r.value for r in mine if r.metric == "class_time_s"}
            assert classes == pytest.approx(at.class_time_s())


def test_a_user_workload_is_profiled_at_several_batches_with_its_variant(tmp_path):
    folder = tmp_path / "cpu-test"
    folder.mkdir()
    shutil.copy(FIXTURE / "ceilings.json", folder / "ceilings.json")
    example = str(Path(__file__).resolve().parent.parent / "examples" / "user_workload.py") + ":build"
    args = ["--only", "roofline", "--out", str(tmp_path), "--machine", "cpu-test", "--workload", example]
    assert collect_main(args) == 0
    p = load_document(folder / "roofline-sensor-cnn.json").payload
    main = p.batch
    assert [(b.batch, b.status) for b in p.profiled()] == [(main // 4, "ok"), (main, "ok"), (2 * main, "ok")]
    # a network with convolutions: its other batches run untuned, as the workloads sweep runs them
    assert [b.variant for b in p.profiled()] == ["no_cudnn_benchmark", "default", "no_cudnn_benchmark"]
    assert any(op.name == "aten::convolution" or "conv" in op.name for op in p.batches[-1].ops)


def test_a_version_1_document_loads_with_its_main_batch_alone():
    doc = load_document(REPO / "tests" / "fixtures" / "older" / "roofline-v1-gpt-small-h100.json")
    assert doc.collector.version == "1" and doc.payload.batches == []
    assert [b.batch for b in doc.payload.profiled()] == [doc.payload.batch]


def test_a_bad_profiled_batch_names_the_file_and_field(collected, tmp_path):
    raw = json.loads((collected / "roofline-mlp-stgan.json").read_text())
    raw["payload"]["batches"][0]["batch"] = 0
    path = tmp_path / "roofline-mlp-stgan.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(DocumentError, match=r"roofline-mlp-stgan\.json: payload\.batches\[0\]: batch is 0"):
        load_document(path)


def test_a_resumed_profile_run_does_not_profile_a_kept_document_again(tmp_path, collected):
    """A resume owes only the profiles not done (on a GPU, the tf32 sibling where the run stopped in it: an H200 run
    of transformer-xl-large called itself complete without it): a document `kept` says is complete is not
    profiled again, and one it does not is."""
    from collectors.roofline.collect import iter_roofline_documents

    folder = tmp_path / "cpu-test"
    shutil.copytree(collected, folder)
    quiet = Progress("test", total=1, stream=io.StringIO())
    name = WORKLOADS[0]
    assert list(iter_roofline_documents([name], folder, torch.device("cpu"), quiet, lambda stem: True)) == []
    again = list(iter_roofline_documents([name], folder, torch.device("cpu"), quiet, lambda stem: False))
    assert [stem for stem, _ in again] == [f"roofline-{name}"] and again[0][1].status == "ok"
