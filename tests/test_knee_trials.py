"""The main batch's trials timed again at the batch sweep's knee (workloads collector 6), and the plan choosing
among configurations timed at the batch it recommends. Timed on an H100 (results/h100-80gb/diagnostics/
recommended-check-2026-11-27): BERT-base's torch.compile gained +30 % at its trial batch (160) and +5 % at its
knee (320); ResNet-50 compiled ran 5768 images/s at its knee (512) and 5303 at its trial batch (256), so the no-carry
rule alone recommended the slower of the two. Real tiny collections on the CPU through the collector's generators."""

from __future__ import annotations

import io
import shutil
from dataclasses import replace

import pytest
import torch
from paths import FROZEN, REPO

from collectors.core import profiles
from collectors.workloads.collect import iter_workload_payloads
from collectors.workloads.run import WorkloadRun
from collectors.workloads.stages import precisions_stage
from collectors.workloads.sweep import Context
from gpuplan_schema.payloads import WorkloadPayload, WorkloadPoint
from gpuplan_schema.progress import Progress
from gpuplan_schema.results import load_machine
from gpuplan_schema.stats import Stat
from planner.plan.plan import build_plan
from planner.plan.presets import Bounds, aggressive_preset
from planner.plan.settings import LoaderSettings, Settings
from planner.render.words import settings_words as settings_line
from planner.report.dataloader import build_dataloader_sections
from planner.units import format_count

KNEE_FIXTURES = REPO / "tests" / "fixtures" / "knee-trials"

CPU = torch.device("cpu")


def quiet() -> Progress:
    return Progress("test", total=1, stream=io.StringIO())


@pytest.fixture(scope="module")
def collected() -> WorkloadPayload:
    *_, last = iter_workload_payloads("mlp-stgan", profiles.PROFILES["standard"], Context(CPU), quiet())
    return last


def test_a_standard_collection_times_every_precisions_trial_again_at_its_sweeps_knee(collected):
    """Where the bf16 sweep's knee is not the main batch, each precision's trial runs there too, as `knee` points;
    where it is, none (they would be the main batch's trials again)."""
    main = next(p.batch for p in collected.points if p.sweep == "variant")
    knee = collected.sweep_knee("bf16")
    at_knee = [p for p in collected.points if p.sweep == "knee"]
    if knee == main:
        assert not at_knee
        return
    assert {p.precision for p in at_knee} == {"bf16", "fp32"}  # the CPU's precisions, each once
    assert all(p.batch == knee and p.status == "ok" and p.throughput_per_s for p in at_knee)
    trials = {p.precision: p.variant for p in collected.points if p.sweep == "variant" and p.batch == main}
    assert {p.precision: p.variant for p in at_knee} == trials  # the same configurations as the main batch's


def run_with_knee(knee_factor: int, knee_trials: bool = True) -> WorkloadRun:
    """mlp-stgan's run on the CPU with a bf16 sweep whose knee is `knee_factor` × the main batch."""
    profile = replace(profiles.PROFILES["standard"], knee_trials=knee_trials, precisions=("bf16",))
    run = WorkloadRun.start("mlp-stgan", "workload-mlp-stgan", profile, Context(CPU), None)
    main = run.plan.main_batch
    for batch, per_s in ((main // 2, 1.0), (main, 2.0), (2 * main, 2.0 if knee_factor == 1 else 4.0)):
        run.add(WorkloadPoint("batch", "bf16", batch, "default", "ok", step_s=Stat(*[batch / per_s] * 5, 1),
                              throughput_per_s=per_s))
    assert run.knee == knee_factor * main
    return run


def test_knee_trials_run_only_where_the_knee_is_another_batch_and_the_profile_asks():
    at_main = list(precisions_stage(run_with_knee(1), quiet()))
    assert [(p.sweep, p.precision) for p in at_main] == [("variant", "bf16")]  # the main batch's trial, not twice
    assert list(precisions_stage(run_with_knee(2, knee_trials=False), quiet())) == []
    run = run_with_knee(2)
    (point,) = precisions_stage(run, quiet())  # no torch.compile on a CPU
    assert (point.sweep, point.batch, point.precision, point.status) == ("knee", 2 * run.plan.main_batch, "bf16", "ok")
    assert point.step_s is not None and point.throughput_per_s == pytest.approx(point.batch / point.step_s.median)


@pytest.fixture(scope="module")
def with_knee_trials(tmp_path_factory):
    """The frozen H100 machine with resnet50's and vit-tiny's documents of workloads collector 6 in place."""
    folder = tmp_path_factory.mktemp("knee") / "h100-80gb"
    shutil.copytree(FROZEN / "h100-80gb", folder)
    for name in ("resnet50", "vit-tiny", "bert-base-squad"):
        shutil.copy(KNEE_FIXTURES / f"workload-{name}.json", folder / f"workload-{name}.json")
    return load_machine(folder)


def test_the_plan_recommends_the_fastest_configuration_timed_at_the_batch_it_recommends(with_knee_trials):
    """ResNet-50: compiled at the knee (512) ran 5824 images/s, compiled at the trial batch (256) 5303, the
    sweep's plain run at 512 4126: the answer is compiled at 512, measured there, its reason naming the figures
    at 512. ViT-tiny: its trials at batch 64 were host-bound (no regime to carry them from), but at the knee (2048)
    compiled ran 17,951 against 12,042 eager: compiled at 2048, where before the knee trials the plan kept eager
    bf16. On another GPU the same configuration is predicted at its batch."""
    plan = build_plan(with_knee_trials, ["H100 SXM", "H200 SXM"])
    here, there = plan.targets[0], plan.targets[1]
    for name, batch in (("resnet50", 512), ("vit-tiny", 2048)):
        s, e = here.settings[name], here.gpu_expected[name]
        payload = next(w for w in with_knee_trials.workloads if w.workload == name)
        timed = next(p for p in payload.points if p.sweep == "knee" and p.variant == "compile")
        assert (s.batch, s.precision, s.torch_compile) == (batch, "bf16", True), name
        assert e.how == "measured" and e.throughput_per_s == pytest.approx(timed.throughput_per_s), name
        assert f"batch {format_count(batch)}" in e.basis
        best = max(p.throughput_per_s for p in payload.points if p.status == "ok" and p.throughput_per_s
                   and p.batch <= batch and p.sweep in ("variant", "knee", "batch"))
        assert timed.throughput_per_s == best  # nothing timed at or below the batch recommended ran faster
        compile_rec = next(r for r in here.recommendations if r.workload == name and r.setting == "torch_compile")
        assert compile_rec.choice == "true" and f"at batch {format_count(batch)}" in compile_rec.reason
        t = there.settings[name]
        assert t.torch_compile and there.gpu_expected[name].how == "predicted", name
    old = build_plan(load_machine(FROZEN / "h100-80gb"), ["H100 SXM"]).targets[0]
    assert not old.settings["vit-tiny"].torch_compile and old.settings["resnet50"].batch == 256


def test_the_loader_is_set_against_the_configuration_recommended(with_knee_trials):
    """ResNet-50's answer is compiled at 512 (5824 images/s on the GPU); the loader's verdict once quoted the main
    batch's eager run (bf16, batch 256, 3908) beside it. The plan's loader verdict, its num_workers reason and the
    report's input-pipeline section now set the measured loader against the answer's own GPU rate."""
    plan = build_plan(with_knee_trials, ["H100 SXM"])
    here = plan.targets[0]
    s, expected, feed = here.settings["resnet50"], here.gpu_expected["resnet50"], here.feeds["resnet50"]
    assert (feed.precision, feed.batch, feed.compiled) == (s.precision, s.batch, s.torch_compile) == ("bf16", 512, True)
    assert feed.gpu_samples_per_s == pytest.approx(expected.throughput_per_s)
    workers = next(r for r in here.recommendations if r.workload == "resnet50" and r.setting == "num_workers")
    assert "resnet50 at bf16, compiled, batch 512" in workers.reason
    (section,) = build_dataloader_sections(with_knee_trials, plan)
    assert [v for v in section.verdicts if v.workload == "resnet50"] == [feed]
    assert not here.feeds["gpt-small"].applies  # not an image workload: the JPEG loader says nothing of it


def test_on_a_card_the_knees_trial_does_not_fit_the_same_configuration_timed_at_the_main_batch_is_predicted(
        with_knee_trials):
    """ResNet-50 compiled was chosen at its knee (512), which does not fit a 16 GB card; compiled was timed at 256
    too. On a T4 and a V100 16GB the answer is compiled at 256, predicted faster than the plain sweep's knee there
    (it fell back to the plain sweep's knee once the choice was made at 512: −13 % on the T4, −17 % on a V100)."""
    plan = build_plan(with_knee_trials, ["H100 SXM", "T4", "V100 SXM2 16GB"])
    for target in plan.targets[1:]:
        s, e = target.settings["resnet50"], target.gpu_expected["resnet50"]
        assert (s.batch, s.torch_compile) == (256, True), target.gpu.name
        plain = next(p for p in target.predictions if p.workload == "resnet50" and p.variant in ("default",
                     "no_cudnn_benchmark") and p.precision == s.precision and p.batch < 256 and p.seq_len is None)
        assert e.how == "predicted" and e.throughput_per_s > plain.throughput_per_s


def test_the_knees_choice_reads_only_the_trials_at_the_knee(with_knee_trials):
    """A document can hold trials at an earlier knee too (a larger profile extended the sweep, or the steady timing
    moved the knee): one faster compiled point at another batch must neither hide the knee's trials nor join them."""
    machine = with_knee_trials
    payload = next(w for w in machine.workloads if w.workload == "resnet50")
    compiled = next(p for p in payload.points if p.sweep == "knee" and p.variant == "compile")
    stray = replace(compiled, batch=1024, throughput_per_s=compiled.throughput_per_s * 1.02)
    doc = machine.documents["workload-resnet50"]
    documents = {**machine.documents, "workload-resnet50": replace(doc, payload=replace(payload, points=[
        *payload.points, stray]))}
    plan = build_plan(replace(machine, documents=documents), ["H100 SXM"])
    s = plan.targets[0].settings["resnet50"]
    assert (s.batch, s.torch_compile) == (512, True)
    assert plan.targets[0].gpu_expected["resnet50"].throughput_per_s == pytest.approx(compiled.throughput_per_s)


def test_a_trial_beating_the_knees_trials_names_what_it_beat(with_knee_trials):
    """BERT-base compiled at 160 (1570) beats everything timed at its knee, 320 (compiled 1322): the batch's
    reason names that rival, not the sweep's eager figure."""
    plan = build_plan(with_knee_trials, ["H100 SXM"])
    here = plan.targets[0]
    assert (here.settings["bert-base-squad"].batch, here.settings["bert-base-squad"].torch_compile) == (160, True)
    batch = next(r for r in here.recommendations if r.workload == "bert-base-squad" and r.setting == "batch_size")
    assert "bf16 compiled at the bf16 sweep's knee, batch 320: 1322" in batch.reason, batch.reason


def test_the_aggressive_preset_never_adds_compile_to_a_precision_it_was_not_timed_in():
    """gnmt's answer is fp16 eager at 2048 (faster than bf16 compiled there): compile was timed in bf16 only, so
    the aggressive preset does not offer fp16 + compile, a combination nothing measured."""
    loader = LoaderSettings(2, 2, True, True, False, "a default")
    fp16 = Settings("gnmt", "fp16", 2048, False, 0.06, None, None, None, loader, compile_precision="bf16")
    assert not aggressive_preset(fp16, None, Bounds(None, None, None)).settings.torch_compile
    bf16 = replace(fp16, precision="bf16")
    assert aggressive_preset(bf16, None, Bounds(None, None, None)).settings.torch_compile
    # and the answer's line does not set a bf16 gain beside the fp16 answer as if it were its own
    assert "eager (compile timed in bf16 only: +6% there)" in settings_line(fp16)
    assert "eager (compile measured +6%)" in settings_line(bf16)


def test_a_target_answer_in_another_precision_says_its_compile_gain_was_timed_in_the_sweeps():
    """On a T4 (no bf16) the plan's answers run fp16; the compile gain was timed in bf16 on the source: a compiled
    answer says so instead of showing the bf16 gain as its own, and the measured GPU's line shows its own gain."""
    plan = build_plan(load_machine(FROZEN / "h100-80gb"), ["T4", "H100 SXM"])
    t4, h100 = (next(t for t in plan.targets if t.name == name) for name in ("T4", "H100 SXM"))
    fp16, bf16 = t4.settings["resnet50"], h100.settings["resnet50"]
    assert (fp16.precision, fp16.torch_compile, fp16.compile_precision) == ("fp16", True, "bf16")
    assert fp16.compile_gain_here is None and bf16.compile_gain_here == bf16.compile_gain
    assert f"torch.compile (timed in bf16: {fp16.compile_gain:+.0%} there)" in settings_line(fp16)
    assert f"torch.compile ({bf16.compile_gain:+.0%})" in settings_line(bf16)


def test_the_accuracy_check_reads_a_configurations_collection_point_before_its_knee_trial(with_knee_trials):
    """BERT-base bf16 at 320 was timed in the batch sweep (1278/s) and again at the knee on another lend (1264/s):
    a prediction of it is checked against the collection's, as every other row is. A configuration timed only at
    the knee (bf16 compiled at 320) is checked against the knee's; the sweep's twice-timed main batch against the
    later of its two (the variant), never the repeat."""
    from planner.check.accuracy import measured_configurations
    payload = next(w for w in with_knee_trials.workloads if w.workload == "bert-base-squad")
    measured = measured_configurations(payload.points)
    assert measured[("bf16", 320, "default", None)].sweep == "batch"
    assert any(p.sweep == "knee" and (p.precision, p.batch, p.variant) == ("bf16", 320, "default")
               for p in payload.points)
    assert measured[("bf16", 320, "compile", None)].sweep == "knee"
    assert measured[("bf16", 160, "default", None)].sweep == "variant"
