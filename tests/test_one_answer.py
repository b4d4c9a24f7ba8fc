"""One answer: the plan decides, every screen formats it. The plan's JSON (`gpuplan plan --json`), the report and
the site say the same bound, settings, expected range and instances for every workload; the bound is judged at the
recommended batch; unchecked GPUs carry their mark everywhere; a report builds its plan once."""

from __future__ import annotations

import ast
import html as html_lib
import json
import re
from pathlib import Path

import pytest
from paths import FROZEN, REPO, RESULTS

from gpuplan_schema.results import load_machine, load_machine_and_root
from planner.cli import main as gpuplan_main
from planner.model.performance import measured_rates
from planner.model.split import machine_rooflines
from planner.plan import jobs as jobs_module
from planner.plan import plan as plan_module
from planner.plan import source as source_module
from planner.plan.bounds import BoundKind
from planner.plan.choice import Trial, choose, ties
from planner.plan.judge import elasticity, judge
from planner.plan.plan import build_plan, report_plan
from planner.rank.jobs import parse_job
from planner.render.node_table import ok_rows, render_node_markdown, render_node_text
from planner.render.plan_text import render_plan_text
from planner.render.report import render_report_html
from planner.report.decision import DecisionSection
from planner.report.frame import build_report, build_report_for
from planner.report.plan import InstancesSection
from planner.site.jobs import build_chooser

VIT = REPO / "tests" / "fixtures" / "vit-b16" / "h100-80gb"
COMMITTED = sorted(p for p in RESULTS.iterdir() if p.is_dir() and any(p.glob("*.json")))


def visible(page: str) -> str:
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", page))


def plan_json(folder: Path, capsys: pytest.CaptureFixture, *extra: str) -> dict:
    assert gpuplan_main(["plan", str(folder), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_unchecked_gpu_is_marked_on_every_screen(capsys):
    """A B200 has no published check: the plan text (†), its JSON (`unchecked`), the report's instance table and the
    site's job chooser all say so; an H100 SXM row does not."""
    machine, measured = load_machine_and_root(FROZEN / "h100-80gb")
    plan = report_plan(machine, None, measured)
    b200 = [r for r in plan.ranking if r.gpu == "B200" and r.status == "ok"]
    assert b200 and all(r.unchecked for r in b200)
    assert not any(r.unchecked for r in plan.ranking if r.gpu == "H100 SXM")
    asked = report_plan(machine, parse_job("resnet50 bf16 epochs=100 dataset=imagenet"), measured)  # `--job`
    text = render_plan_text(asked, top=200, verbose=True)
    rows = [line for line in text.splitlines() if "× B200" in line and not line.startswith("==")]
    assert rows and all("†" in line for line in rows) and "on B200 † (predicted)" in text
    data = plan_json(FROZEN / "h100-80gb", capsys, "--job", "resnet50 bf16 epochs=100 dataset=imagenet")
    assert all(r["unchecked"] for r in data["ranking"] if r["gpu"] == "B200")
    assert not next(t for t in data["targets"] if t["gpu"] == "B200")["validated"]
    page = render_report_html(build_report(machine, plan, measured))
    instance = next(r.instance for r in b200)
    row = next(line for line in page.splitlines() if f"<tr><td>{instance} " in line)
    assert "† unchecked" in row
    chooser = build_chooser([(machine, plan)])
    names = [m[0] for m in chooser.instances]
    flagged = {names[r[0]] for t in chooser.tables.values() for r in t["rows"] if r[1] and r[8]}
    assert instance in flagged and not any("H100" in n and "B200" not in n for n in flagged if "p5." in n)


def test_a_gpu_that_runs_the_jobs_stand_in_precision_is_marked_on_every_screen(capsys):
    """A bf16 job on a T4 or V100 runs fp16 (the plan's answer there): the plan text marks its rows ‡ with the
    footnote, at 80 columns too; the JSON says `precision` fp16, `stand_in_for` bf16; the report's instance table, its
    decision page's picks, the time/cost chart, the job chooser and 'Across nodes' say it runs fp16. No other row
    carries the mark."""
    machine, measured = load_machine_and_root(FROZEN / "h100-80gb")
    job = parse_job("resnet50 bf16 epochs=100 dataset=imagenet")
    plan = report_plan(machine, job, measured)
    marked = {r.instance for r in plan.ranking if r.stand_in_for}
    assert marked and {r.gpu for r in plan.ranking if r.instance in marked} >= {"T4", "V100 SXM2 16GB"}
    assert all(r.status == "ok" and r.precision == "fp16" for r in plan.ranking if r.instance in marked)
    assert all(r.precision == "bf16" for r in plan.ranking if r.status == "ok" and r.instance not in marked)
    footnote = "‡ no bf16 on this GPU: it runs fp16 autocast with loss scaling (GradScaler), the plan's answer there"
    text = render_plan_text(plan, top=200, width=400, verbose=True)
    rows = [line for line in text.splitlines() if line.startswith("   ") and " × " in line and "$" in line]
    assert rows and all(("‡" in line) == any(f"{i}  " in line for i in marked) for line in rows)
    assert footnote in text and "unsupported precision" not in text
    narrow = render_plan_text(plan, top=200, width=80, verbose=True)
    assert max(map(len, narrow.splitlines())) <= 80 and "‡ no bf16 on this GPU" in " ".join(narrow.split())
    data = plan_json(FROZEN / "h100-80gb", capsys, "--job", job.spec)
    stand_ins = {(r["precision"], r["stand_in_for"]) for r in data["ranking"] if r["instance"] in marked}
    assert stand_ins == {("fp16", "bf16")}
    report = build_report(machine, plan, measured)
    page = render_report_html(report).splitlines()
    t4 = next(r.instance for r in plan.ranking if r.gpu == "T4")
    at = next(i for i, line in enumerate(page) if line.startswith(f"<tr><td>{t4} "))
    assert "× T4" in page[at + 1] and "‡ runs fp16, no bf16" in page[at + 1]
    picks = [p for s in report.sections if isinstance(s, DecisionSection) for b in s.blocks if b.workload == "resnet50"
             for p in b.picks]
    assert any(p.instance in marked for p in picks)
    assert all((p.stand_in == "runs fp16, no bf16") == (p.instance in marked) for p in picks)
    chart = next(s.chart for s in report.sections if isinstance(s, InstancesSection))
    assert {d["gpus"] for d in chart["datasets"]["instances"] if d["instance"] == t4} == {"1 × T4 (runs fp16, no bf16)"}
    chooser = build_chooser([(machine, plan)])
    names = [m[0] for m in chooser.instances]
    table = chooser.tables[f"{machine.machine}|resnet50|bf16|1"]
    assert {names[r[0]] for r in table["rows"] if r[1] and r[10] == "fp16"} == marked
    assert chooser.stand_in_words["bf16"] == footnote and "stand_in_words" in chooser.to_json()
    nodes = ok_rows(plan.node_ranking, {r.base for r in plan.node_ranking if r.ranked.stand_in_for})
    assert nodes and footnote in render_node_markdown(nodes)
    assert footnote in " ".join(" ".join(render_node_text(nodes, 3, 80)).split())


def test_vit_b16_is_judged_where_the_plan_runs_it_not_at_its_main_batch():
    """ViT-B/16 (examples/vit_tiny.py:build_b16), collected on the lent H100: its main batch is 8, where the host
    sets the step; the plan recommends the sweep's knee (512), profiled by roofline collector 3, where the GPU does.
    The bound there agrees with the measured step scaling, and the trials at batch 8 are not carried to 512."""
    machine = load_machine(VIT)
    [payload] = machine.workloads
    plan = build_plan(machine, ["H100 SXM"])
    source = plan.targets[0]
    settings, expected = source.settings["vit-b16"], source.expected["vit-b16"]
    assert settings.batch == 512 and expected.judgement.batch == 512
    assert expected.judgement.kind.gpu_sets_step and "per-operation profile at batch 512" in expected.judgement.how
    e, low, high = elasticity(payload, "bf16", 512)
    assert e >= 0.75 and (low, high) == (256, 512)       # the step grows with the batch: the GPU sets it
    rooflines, rates = machine_rooflines(machine), measured_rates(machine.ceilings)
    at_main = judge(payload, 8, "bf16", rooflines, rates)
    assert at_main.kind is BoundKind.HOST
    assert elasticity(payload, "bf16", 8)[0] < 0.35     # and at 8 it barely grows: the host sets it
    # torch.compile measured +33 % at batch 8; not recommended at 512, and the reason says why
    assert not settings.torch_compile and settings.precision == "bf16" and not source.choices["vit-b16"].applies
    reason = next(r.reason for r in source.recommendations if r.setting == "precision")
    assert "do not apply at the recommended batch" in reason and "host/launch-bound" in reason
    assert expected.throughput_per_s == pytest.approx(
        next(p.throughput_per_s for p in payload.points if p.sweep == "batch" and p.batch == 512))


def test_a_choice_within_the_measured_spread_keeps_the_simpler_configuration_whichever_measured_faster():
    """Two hosts of one GPU type time the same configurations a few per cent apart: where two options tie, both
    recommend the simpler, so their settings agree (the H100 and H200 once split tf32/fp32 on noise)."""
    machine = load_machine(FROZEN / "h100-80gb")
    payload = next(w for w in machine.workloads if w.workload == "vit-tiny")
    base = choose(payload, "bf16", True, applies=True)
    fp32, tf32 = (next(t for t in base.candidates if t.precision == p and not t.compiled) for p in ("fp32", "tf32"))
    assert ties(fp32, tf32)
    for leader in (fp32, tf32):   # either one measured a little faster: the same answer
        nudged = [p for p in payload.points if p is not leader.point] + [
            type(leader.point)(**{**leader.point.__dict__, "throughput_per_s": leader.throughput * 1.01})]
        chosen = choose(type(payload)(**{**payload.__dict__, "points": nudged}), "bf16", True, True).chosen
        assert chosen.precision in ("fp32", "tf32") and chosen.cost <= Trial(tf32.point).cost
        assert chosen.precision == base.chosen.precision


def test_committed_results_h100_and_h200_recommend_the_same_where_their_measurements_tie():
    h100, h200 = (report_plan(load_machine(RESULTS / m)) for m in ("h100-80gb", "h200"))
    for workload, a in h100.targets[0].choices.items():
        b = h200.targets[0].choices.get(workload)
        if b is None or a.chosen is None or b.chosen is None:
            continue
        tie_a = all(ties(t, a.best) for t in a.candidates if t.name in {c.name for c in b.candidates})
        tie_b = all(ties(t, b.best) for t in b.candidates if t.name in {c.name for c in a.candidates})
        if (not a.applies and not b.applies) or (tie_a and tie_b):
            assert a.chosen.name == b.chosen.name, workload


def test_a_report_builds_its_plan_once(monkeypatch):
    """load_source ran three times and prepare_source twice per report: the decision page, the instance section
    and the workload sections each rebuilt what the plan had."""
    calls = {"load_source": 0, "prepare_source": 0}
    for name in calls:
        original = getattr(source_module, name)

        def counted(*args, _name=name, _original=original, **kwargs):  # noqa: ANN002, ANN003, ANN202
            calls[_name] += 1
            return _original(*args, **kwargs)
        for module in (plan_module, source_module, jobs_module):  # each module that calls it by its own name
            if hasattr(module, name):
                monkeypatch.setattr(module, name, counted)
    build_report_for(FROZEN / "h100-80gb")
    assert calls == {"load_source": 1, "prepare_source": 1}


PRESENTATION = ("planner/report", "planner/render", "planner/site", "planner/charts")
DECIDERS = {
    "planner.plan.judge", "planner.plan.choice", "planner.plan.expect.build_expected",
    "planner.plan.expect.cap_by_input", "planner.model.performance.predict_point",
    "planner.model.performance.iter_predictions", "planner.model.performance.source_bound",
    "planner.model.performance.target_rates", "planner.plan.plan.build_plan", "planner.plan.plan.load_source",
    "planner.plan.plan.prepare_source", "planner.plan.source.load_source", "planner.plan.source.prepare_source",
    "planner.plan.jobs.build_ranker", "planner.plan.jobs.build_predictor", "planner.plan.targets.build_target",
    "planner.plan.targets.build_source_target",
    "planner.plan.advice",
    "planner.plan.recommend.find_knee", "planner.plan.recommend.recommend_precision",
    "planner.plan.recommend.recommend_variants",
}
# load their folder once, then report_plan (the site's loading, with its cache, is planner/site/load.py)
ENTRY_POINTS = {"planner/report/frame.py", "planner/site/build.py", "planner/site/load.py"}


def test_presentation_imports_no_function_that_decides_and_no_loader():
    """docs/architecture.md, 'The plan decides; everything else formats'."""
    wrong = []
    for folder in PRESENTATION:
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = str(path.relative_to(REPO))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom) or not node.module:
                    continue
                names = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
                wrong += [f"{rel}: {n}" for n in names if n in DECIDERS]
                if node.module == "gpuplan_schema.results" and rel not in ENTRY_POINTS:
                    wrong += [f"{rel}: {a.name}" for a in node.names if a.name.startswith("load_")]
    assert wrong == []


def test_one_instance_has_one_figure_per_job_in_one_report():
    """'Across nodes' put Standard_ND96isr_MI300X_v5 at 0.8 h where the main table had 1.2 h, input-bound: the
    node ranking now applies the same vCPU feed limit, so its one-node rows are the main table's."""
    machine, measured = load_machine_and_root(FROZEN / "h100-80gb")
    plan = report_plan(machine, None, measured)
    main = {r.instance: (r.hours, r.cost_usd, r.limited_by) for r in plan.ranking if r.status == "ok"}
    one_node = [(row.base, row.ranked) for row in plan.node_ranking if row.nodes == 1 and row.ranked.status == "ok"]
    assert one_node and any(main[base][2] == "input" for base, _ in one_node)
    for base, ranked in one_node:
        assert (ranked.hours, ranked.cost_usd, ranked.limited_by) == pytest.approx(main[base]), base


def test_an_unchecked_gpu_says_how_its_architecture_was_checked_where_it_is_marked(capsys):
    """The L40S has no published row, but GPUs of its architecture (compute capability 8.9) do: the plan says how far
    their rows lay from the prediction beside its † (one note per GPU, computed once in the plan), in the text, the
    JSON and the report; a GPU of an architecture nobody checked (B200) and a checked one (A100 80GB SXM) get none."""
    machine, measured = load_machine_and_root(FROZEN / "h100-80gb")
    plan = report_plan(machine, parse_job("resnet50 bf16 epochs=100 dataset=imagenet"), measured)
    notes = plan.unchecked_notes
    kin = sorted({r.gpu for r in plan.crosscheck.rows if r.gpu in ("RTX 4090", "RTX 6000 Ada")})
    assert kin and all(name in notes["L40S"] for name in kin) and "compute capability 8.9" in notes["L40S"]
    worst = max(r.error for r in plan.crosscheck.rows if r.gpu in kin)
    assert f"{worst:+.0%}" in notes["L40S"]
    assert "B200" not in notes and "A100 80GB SXM" not in notes
    text = render_plan_text(plan, top=200, width=400, verbose=True)
    assert notes["L40S"] in text
    data = plan_json(FROZEN / "h100-80gb", capsys, "--job", "resnet50 bf16 epochs=100 dataset=imagenet")
    assert data["unchecked_notes"]["L40S"] == notes["L40S"]
    page = visible(render_report_html(build_report(machine, plan, measured)))
    assert f"† {notes['L40S']}." in " ".join(page.split())


def test_an_unchecked_gpu_with_indirect_evidence_carries_it_beside_its_dagger(capsys):
    """No published row checks the T4, but published measurements outside the check say its transformer steps run
    slower than predicted (the catalog's `indirect_evidence`): the note beside its † says so, in the ranking's text
    where a T4 is the cheap pick, and in the JSON; a GPU without such evidence (the L40S) does not get it."""
    from planner.specs import match_gpu
    machine, measured = load_machine_and_root(FROZEN / "h100-80gb")
    plan = report_plan(machine, parse_job("resnet50 bf16 epochs=100 dataset=imagenet"), measured)
    evidence = match_gpu("T4").indirect_evidence
    assert evidence and match_gpu("L40S").indirect_evidence is None
    note = plan.unchecked_notes["T4"]
    assert note.startswith("T4 is not checked itself") and evidence in note
    assert "Indirect evidence" not in plan.unchecked_notes["L40S"]
    assert any(r.gpu == "T4" and r.unchecked for r in plan.ranking)
    assert note in " ".join(render_plan_text(plan, top=200, width=400, verbose=True).split())
    data = plan_json(FROZEN / "h100-80gb", capsys, "--job", "resnet50 bf16 epochs=100 dataset=imagenet")
    assert data["unchecked_notes"]["T4"] == note


def test_the_job_chooser_lists_the_note_of_each_unchecked_gpu_it_can_show():
    machine, measured = load_machine_and_root(FROZEN / "h100-80gb")
    plan = report_plan(machine, None, measured)
    chooser = build_chooser([(machine, plan)])
    unchecked, checked = chooser.unchecked_notes[machine.machine], chooser.checked_notes[machine.machine]
    assert unchecked["L40S"] == plan.unchecked_notes["L40S"]
    assert set(unchecked) <= {m[2].split(" × ")[-1] for m in chooser.instances}
    assert "A100 80GB SXM" not in unchecked  # checked: no † note
    # a checked GPU it can show says how its own published rows lay instead, as the plan says it
    assert checked["A100 80GB SXM"] == plan.checked_notes["A100 80GB SXM"]
    assert set(checked) <= {m[2].split(" × ")[-1] for m in chooser.instances}
    assert not set(checked) & set(unchecked) and "H100 SXM" not in checked | unchecked  # the measured GPU: none


def test_the_job_chooser_keeps_each_machines_notes_apart():
    """Each machine's tables are predicted from its own measurements: the notes of one machine's plan are not
    another's (the H200's check from the H100 is not shown as the H200 plan's, nor the H200 as checked there)."""
    h100, measured = load_machine_and_root(FROZEN / "h100-80gb")
    h200 = load_machine(FROZEN / "h200")
    plans = [(h100, report_plan(h100, None, measured)), (h200, report_plan(h200, None, measured))]
    chooser = build_chooser(plans)
    for machine, plan in plans:
        own = plan.crosscheck.reference if plan.crosscheck else None
        for name, notes in (("unchecked", chooser.unchecked_notes), ("checked", chooser.checked_notes)):
            given = getattr(plan, f"{name}_notes")
            assert all(given[g] == note for g, note in notes.get(machine.machine, {}).items()), (machine, name)
            assert own not in notes.get(machine.machine, {})
    from planner.site.build import render_site_page
    page = render_site_page("site_jobs.html.j2", [], chooser=chooser, amounts="1")
    for machine, _ in plans:
        assert f"From {machine.machine}" in page


def test_each_predicted_gpu_says_how_its_own_published_rows_lay_from_the_prediction(capsys):
    machine, measured = load_machine_and_root(FROZEN / "h100-80gb")
    plan = report_plan(machine, None, measured)
    a100 = [r.error for r in plan.crosscheck.rows if r.gpu == "A100 80GB SXM"]
    note = plan.checked_notes["A100 80GB SXM"]
    assert f"its {len(a100)} published rows lie at {min(a100):+.0%} … {max(a100):+.0%}" in note
    assert "L40S" not in plan.checked_notes and "H100 SXM" not in plan.checked_notes  # unchecked; the reference
    assert note in render_plan_text(plan, width=400)
    assert plan_json(FROZEN / "h100-80gb", capsys)["checked_notes"]["A100 80GB SXM"] == note
    page = " ".join(visible(render_report_html(build_report(machine, plan, measured))).split())
    assert f"{note}." in page


def test_a_pick_on_a_checked_gpu_says_how_its_own_published_rows_lay_beside_the_ranking(capsys):
    """A ★ instance on a GPU published rows check (an A100, an H100 PCIe…) carries how far those rows lay from the
    prediction beside the ranking: in the plan text, the report's instance table and its decision picks, one note
    per GPU; a † row keeps its kin's note instead, and the measured GPU (the reference) has none."""
    machine, measured = load_machine_and_root(FROZEN / "h100-80gb")
    plan = report_plan(machine, parse_job("resnet50 bf16 epochs=100 dataset=imagenet"), measured)
    starred = [r for r in plan.ranking if r.pareto and r.status == "ok"]
    notes = plan.ranking_notes(plan.ranking)[1]
    checked = {r.gpu for r in starred if not r.unchecked and r.gpu in plan.checked_notes}
    assert checked and notes == list(dict.fromkeys(plan.checked_notes[r.gpu] for r in starred if r.gpu in checked))
    assert all(not r.unchecked for r in starred if any(n.startswith(f"{r.gpu}:") for n in notes))
    assert "H100 SXM" not in plan.checked_notes
    text = " ".join(render_plan_text(plan, top=200, width=400, verbose=True).split())
    page = " ".join(visible(render_report_html(build_report(machine, plan, measured))).split())
    for note in notes:
        assert note in text and f"{note}." in page
    section = next(s for s in build_report(machine, plan, measured).sections if isinstance(s, InstancesSection))
    assert section.checked_notes == notes
    decision = next(s for s in build_report(machine, plan, measured).sections if isinstance(s, DecisionSection))
    picks = [p for b in decision.blocks for p in b.picks]
    own = {p.gpus.split(" × ")[-1]: p.checked_note for p in picks if not p.unvalidated}
    assert own and all(note == plan.checked_notes.get(gpu, "") for gpu, note in own.items())
    assert not any(p.checked_note for p in picks if p.unvalidated)


def test_on_another_gpu_the_expected_figure_is_the_recommended_configurations_own_prediction():
    """gpt-small on the frozen H100 is recommended at batch 32 with torch.compile, the configuration its compile
    trial timed. On the H200 the expected figure and its band are that trial's own prediction (as the ranking's
    knee reads it), not the eager prediction × the compile gain with the eager step's host band: compiling
    changes how much of the step the host issues. Where the recommended batch was not timed compiled (resnet50 at
    512, its trial at 256), the eager prediction × the measured gain stands."""
    plan = build_plan(load_machine(FROZEN / "h100-80gb"), ["H200 SXM"])
    h200 = plan.targets[1]
    settings, expected = h200.settings["gpt-small"], h200.expected["gpt-small"]
    assert settings.torch_compile and settings.batch == 32
    own = next(p for p in h200.predictions if p.workload == "gpt-small" and p.variant == "compile" and p.batch == 32)
    assert expected.how == "predicted" and expected.throughput_per_s == pytest.approx(own.throughput_per_s)
    assert expected.low_per_s == pytest.approx(own.throughput_per_s * (1 - own.band_low))
    assert expected.high_per_s == pytest.approx(own.throughput_per_s * (1 + own.band_high))
    assert "torch.compile: the configuration recommended" in expected.basis
    resnet = h200.expected["resnet50"]
    assert h200.settings["resnet50"].batch == 256 and "the configuration recommended" in resnet.basis


def test_a_trials_gain_is_never_carried_to_a_batch_it_was_not_timed_at():
    """A compile or precision trial timed at one batch says nothing of another: timed on an H100 (results/h100-80gb/
    diagnostics/recommended-check-2026-11-27), BERT-base's compile gain was +30 % at its trial batch and +5 % at the
    knee, dlrm-small's fp32 ×1.07 of bf16 at 16,384 and ×0.73 at the knee, so the plan's carried figures read 26 % and
    43 % above what those settings did. On every GPU the plan shows, a setting that differs from the sweep's plain
    run (torch.compile, another precision) is recommended at the batch its trial was timed at, and no expected figure
    is carried; where the trial's batch does not fit or is predicted slower than the sweep's knee, the sweep's plain
    configuration is the answer (gpt-small on a T4)."""
    plan = build_plan(load_machine(FROZEN / "h100-80gb"), ["H100 SXM", "H200 SXM", "T4"])
    choices = plan.targets[0].choices
    for target in plan.targets:
        for workload, settings in target.settings.items():
            expected, chosen = target.gpu_expected.get(workload), choices[workload].chosen
            assert expected is None or expected.how in ("measured", "predicted"), (target.name, workload, expected)
            if settings.torch_compile:
                assert chosen is not None and chosen.compiled and settings.batch == chosen.point.batch, \
                    (target.name, workload)
    t4 = next(t for t in plan.targets if t.gpu.name == "T4")
    assert not t4.settings["gpt-small"].torch_compile and t4.settings["gpt-small"].batch != 32
    batch = next(r for r in plan.targets[0].recommendations if r.workload == "resnet50" and r.setting == "batch_size")
    assert batch.choice == "256" and "timed at" in batch.reason and "not carried" in batch.reason


def test_the_ranking_reads_the_plans_answer_on_every_gpu_the_plan_shows():
    """A default job runs at its workload's recommended precision; on every GPU the plan has a line for, each
    ranked instance's per-GPU batch and figure are that line's (before the loader's cap, which the ranking applies
    per instance): TXL on an L40S once ranked at 151 segments/s while the plan's line said 402, dlrm-small at batch
    16,384 while the plan recommended 1,048,576. On a GPU without bf16 (V100, T4) the plan's line runs a bf16 job in
    fp16: the ranking ranks it there too, at that line, its row saying it runs fp16 (it once listed every V100 and T4
    instance as 'unsupported precision' beside a plan line that ran it). An fp8 job starts from the same answer and
    is never slower."""
    machine = load_machine(FROZEN / "h100-80gb")
    plan = build_plan(machine, ["H100 SXM", "H200 SXM", "A100 80GB SXM", "L40S", "T4", "V100 SXM2 16GB"],
                      rank_defaults=True)
    targets = {t.gpu.name: t for t in plan.targets if t.gpu_count == 1}
    measured = plan.targets[0].settings
    checked, stand_ins = 0, 0
    for workload, ranking in plan.jobs.items():
        for row in ranking.rows:
            target = targets.get(row.gpu)
            if target is None or ranking.job.precision != measured[workload].precision:
                continue  # the plan's line is for its workload's recommended precision
            settings, expected = target.settings.get(workload), target.gpu_expected.get(workload)
            assert (row.status == "ok") == (expected is not None), (workload, row.instance, row.reason)
            if expected is None:
                continue
            assert row.batch_per_gpu == settings.batch and row.precision == settings.precision
            assert row.per_gpu_samples_per_s == pytest.approx(expected.throughput_per_s)
            assert row.stand_in_for == (ranking.job.precision if settings.precision != ranking.job.precision else None)
            checked += 1
            if row.gpu in ("T4", "V100 SXM2 16GB") and ranking.job.precision == "bf16":
                assert row.precision == "fp16" and row.reason.startswith(f"no bf16 on {row.gpu}: runs fp16 autocast")
                stand_ins += 1
    assert checked > 50 and stand_ins > 20
    fp8 = build_plan(machine, ["H100 SXM"], parse_job("gpt-small fp8 tokens=10B"))
    bf16 = {r.instance: r.hours for r in plan.jobs["gpt-small"].rows if r.status == "ok"}
    assert all(r.hours <= bf16[r.instance] * (1 + 1e-9) for r in fp8.ranking if r.status == "ok" and r.instance in bf16)
