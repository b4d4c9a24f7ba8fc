"""The answer first: settings read from the recommendations, presets consistent with them and with the
measurements, snippets that parse and say the same, and `gpuplan plan`'s text with the answer and the
ranking on the first screen. On the committed GPU machines (results/h100-80gb, results/h200)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest
from paths import FROZEN, REPO

from gpuplan_schema.results import load_machine_and_root
from gpuplan_schema.schema import load_document
from planner.model.performance import Rates
from planner.plan.answer import build_answers
from planner.plan.choice import ties
from planner.plan.plan import MAIN_PRECISION, build_plan
from planner.plan.recommend import sweep_throughput
from planner.rank.fp8 import require_fp8
from planner.rank.jobs import JobError, parse_job
from planner.report.snippets import build_snippet_python, build_snippet_yaml

H100_DIR = "tests/fixtures/frozen/h100-80gb"  # relative to the repository root, where the commands run

MACHINES = ("h100-80gb", "h200")
SCREEN = 40


@pytest.fixture(scope="module", params=MACHINES)
def planned(request):  # noqa: ANN001, ANN201
    machine, root = load_machine_and_root(FROZEN / request.param)
    return machine, build_plan(machine, ["H200 SXM", "A100 80GB SXM"], None, root)


def by_setting(plan, workload: str) -> dict:  # noqa: ANN001
    source = plan.targets[0]
    return {r.setting: r for r in source.recommendations if r.workload == workload}


def test_balanced_is_the_recommendations_and_the_others_never_contradict_a_measurement(planned):
    machine, plan = planned
    source = plan.targets[0]
    assert source.is_source and set(source.preset_values) == {w.workload for w in machine.workloads}
    for payload in machine.workloads:
        recs = by_setting(plan, payload.workload)
        conservative, balanced, aggressive = (p.settings for p in source.preset_values[payload.workload])
        assert balanced.precision == recs["precision"].choice
        assert balanced.batch == int(recs["batch_size"].value)
        assert balanced.torch_compile == (recs["torch_compile"].value == "yes")
        assert balanced.loader.workers == int(recs["num_workers"].value)
        assert balanced.allocator == (recs["allocator"].choice if "allocator" in recs else None)
        sweep = sweep_throughput(payload, MAIN_PRECISION)
        for preset in (conservative, aggressive):
            # the precision is never one measured slower than the recommended one
            assert preset.precision == balanced.precision
            # torch.compile only where it was measured faster
            assert not preset.torch_compile or (preset.compile_gain or 0) > 0
            # a batch that ran in the sweep, and never past the memory model's boundary
            assert preset.batch in sweep or preset.batch < balanced.batch
            assert preset.batch <= max(c.safe_batch for c in source.capacity if c.workload == payload.workload)
        assert conservative.batch <= balanced.batch <= aggressive.batch
        assert not conservative.torch_compile


def test_the_recommended_precision_is_the_fastest_trial_or_ties_with_it_and_is_simpler(planned):
    """resnet50 measured fp16 faster than bf16 on the H100: a preset never says a precision that lost beyond the
    measured spread (issue 15), and where the trials do not apply at the recommended batch the sweep's own is kept."""
    machine, plan = planned
    source = plan.targets[0]
    for payload in machine.workloads:
        choice = source.choices[payload.workload]
        if choice.chosen is None:
            continue
        assert choice.chosen is choice.best or (ties(choice.chosen, choice.best) and choice.chosen.cost
                                                <= choice.best.cost) or not choice.applies, payload.workload
        for preset in source.preset_values[payload.workload]:
            assert preset.settings.precision == choice.chosen.precision, (payload.workload, preset.name)


def test_no_preset_batch_runs_past_the_measured_sweep(planned):
    """sensor-cnn's aggressive preset once said batch 765037, a batch never run, on a 256-batch workload."""
    machine, plan = planned
    for payload in machine.workloads:
        largest = max(sweep_throughput(payload, MAIN_PRECISION))
        assert all(p.settings.batch <= largest for p in plan.targets[0].preset_values[payload.workload])


def test_an_unmeasured_loader_says_so_and_how_to_measure_it(planned):
    machine, plan = planned
    has_loader = any(d.kind == "dataloader" for d in machine.documents.values())
    for answer in build_answers(plan):
        loader = answer.settings.loader
        if not loader.measured:
            assert "not measured" in loader.reason and "gpuplan collect --only dataloader" in loader.reason
    measured = {a.workload for a in build_answers(plan) if a.measured and a.settings.loader.measured}
    assert measured == ({"resnet50"} if has_loader else set())


def test_answers_carry_the_settings_to_every_target_with_its_own_batch(planned):
    _, plan = planned
    answers = build_answers(plan)
    source = {a.workload: a for a in answers if a.measured}
    for a in answers:
        mine = source[a.workload]
        assert (a.settings.precision, a.settings.torch_compile) == (mine.settings.precision,
                                                                     mine.settings.torch_compile)
        assert a.expected is None or a.expected.low_per_s <= a.expected.throughput_per_s <= a.expected.high_per_s
        if not a.measured:
            target = next(t for t in plan.targets if t.name == a.target)
            rec = next(r for r in target.recommendations if r.workload == a.workload)
            assert a.settings.batch == int(rec.choice) and "host, not this one" in a.loader_note


def yaml_mapping(text: str) -> dict:
    """A tiny reader for the snippets' YAML: `key: value` lines, two-space nesting, comments."""
    root: dict = {}
    stack = [(-1, root)]
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        key, sep, value = line.strip().partition(": ") if ": " in line else (line.strip().rstrip(":"), ":", "")
        assert sep and key, line
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value == "":
            parent[key] = {}
            stack.append((indent, parent[key]))
        else:
            parent[key] = {"true": True, "false": False}.get(value, value.strip('"'))
    return root


def test_snippets_parse_and_hold_the_recommended_values(planned):
    _, plan = planned
    for answer in build_answers(plan):
        s = answer.settings
        tree = ast.parse(build_snippet_python(answer))
        calls = {ast.unparse(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
        loader = {k.arg: ast.literal_eval(k.value) for k in calls["DataLoader"].keywords if k.arg != "batch_size"}
        assert loader == {"shuffle": True, "num_workers": s.loader.workers, "prefetch_factor": s.loader.prefetch_factor,
                          "pin_memory": s.loader.pin_memory, "persistent_workers": s.loader.persistent_workers}
        assert ("torch.compile" in calls) == s.torch_compile
        assert ("torch.autocast" in calls) == (s.precision in ("bf16", "fp16"))
        assert f"BATCH_SIZE = {s.batch}" in build_snippet_python(answer)
        config = yaml_mapping(build_snippet_yaml(answer))[answer.workload]
        assert (config["precision"], int(config["batch_size"]), config["torch_compile"]) == \
            (s.precision, s.batch, s.torch_compile)
        assert int(config["num_workers"]) == s.loader.workers
        assert config.get("env", {}).get("PYTORCH_CUDA_ALLOC_CONF") == s.allocator


def test_the_allocator_is_set_before_torch_is_imported(planned):
    _, plan = planned
    with_allocator = [a for a in build_answers(plan) if a.settings.allocator]
    assert with_allocator  # conv-rollout and gpt-small measured a larger boundary with expandable segments
    for answer in with_allocator:
        text = build_snippet_python(answer)
        assert text.index("os.environ['PYTORCH_CUDA_ALLOC_CONF']") < text.index("import torch")


def gpuplan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=300)


def test_plan_text_leads_with_the_answer_of_each_workload():
    """One line per workload on the first screen (settings → range, bound), the default job's picks after it; every
    reason with --verbose, which keeps the same first lines and adds each workload's block, the capacity table and
    every recommendation."""
    run = gpuplan("plan", H100_DIR, "--target", "H200")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    folder = FROZEN / "h100-80gb"
    measured = sorted(p.stem.removeprefix("workload-") for p in folder.glob("workload-*.json"))
    head = next(i for i, line in enumerate(lines) if line.startswith("workload "))
    assert [line.split()[0] for line in lines[head + 1:head + 1 + len(measured)]] == measured
    assert head + len(measured) < SCREEN  # every workload's settings and throughput on the first screen
    assert len(lines) <= 60 and any(line.startswith("Where to run resnet50 bf16") for line in lines)
    assert "Largest batch that fits" not in run.stdout and "max batch" not in run.stdout  # --verbose's
    verbose = gpuplan("plan", H100_DIR, "--target", "H200", "--verbose").stdout
    detail = verbose.splitlines()
    assert detail[head + 1:head + 1 + len(measured)] == lines[head + 1:head + 1 + len(measured)]
    start = next(i for i, line in enumerate(detail) if line.startswith("resnet50 on H100 SXM"))
    resnet = " ".join(line.strip() for line in detail[start:start + 3])
    doc = load_document(folder / "workload-resnet50.json").payload
    bf16 = {p.variant: p.throughput_per_s for p in doc.points if p.sweep == "variant" and p.precision == "bf16"
            and p.batch == 256}
    gain = bf16["compile"] / bf16["default"] - 1   # the measured torch.compile gain, as the plan prints it
    assert "bf16 autocast" in resnet and f"torch.compile ({gain:+.0%})" in resnet and "channels_last" in resnet
    heads = [i for i, line in enumerate(detail) if " on H100 SXM (measured): batch " in line]
    assert len(heads) == len(measured)
    table = detail.index(next(line for line in detail if line.startswith("Largest batch that fits")))
    assert table > heads[-1] and "recommended ≤" in verbose
    assert re.search(r"^   resnet50 +fp16 +default +1848 +1755$", verbose, re.M)


def test_plan_job_shows_its_picks_first_and_the_ranking_with_verbose():
    run = gpuplan("plan", H100_DIR, "--job", "gpt-small bf16 tokens=10B", "--top", "10", "--json")
    ok = [r for r in __import__("json").loads(run.stdout)["ranking"] if r["status"] == "ok"]
    text = gpuplan("plan", H100_DIR, "--job", "gpt-small bf16 tokens=10B").stdout
    lines = text.splitlines()
    where = next(i for i, line in enumerate(lines) if line.startswith("Where to run gpt-small bf16 tokens=10B"))
    assert "the job asked for" in " ".join(lines[where:where + 2]) and where < SCREEN
    cheapest = min(ok, key=lambda r: (r["cost_usd"], r["hours"]))
    assert any(line.split()[:2] in (["cheapest", cheapest["instance"] + ","], ["both", cheapest["instance"] + ","])
               for line in lines[where:])
    verbose = gpuplan("plan", H100_DIR, "--job", "gpt-small bf16 tokens=10B", "--top", "10", "--verbose").stdout
    lines = verbose.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Instances for 'gpt-small bf16 tokens=10B'"))
    head = next(i for i in range(head, len(lines)) if "instance" in lines[i].split())  # after the wrapped title
    rows = lines[head + 1:head + 11]
    # the instance cell: after the ★ column, up to the two spaces before GPUs (a GCP name holds single spaces)
    assert [r[6:].split("  ")[0] for r in rows] == [r["instance"] for r in ok[:10]]
    assert [row.lstrip().startswith("★") for row in rows] == [r["pareto"] for r in ok[:10]]
    assert f"… {len(ok) - 10} more run it" in lines[head + 11]


def test_fp8_jobs_need_a_measured_fp8_matmul(h100):
    plan = build_plan(h100, ["H100 SXM"], parse_job("gpt-small fp8 tokens=10B"))
    bf16 = build_plan(h100, ["H100 SXM"], parse_job("gpt-small bf16 tokens=10B"))
    fp8_hours = {r.instance: r.hours for r in plan.ranking if r.status == "ok"}
    bf16_hours = {r.instance: r.hours for r in bf16.ranking if r.status == "ok"}
    # the same batch with the matmuls at the fp8 rate: never slower (H200's datasheet fp8/bf16 ratio is H100's)
    assert fp8_hours and all(fp8_hours[i] <= bf16_hours[i] * (1 + 1e-9) for i in fp8_hours)
    assert any(fp8_hours[i] < 0.95 * bf16_hours[i] for i in fp8_hours)
    assert {r.status for r in plan.ranking if r.gpu == "A100 80GB SXM"} == {"unsupported_precision"}
    without = Rates({"bf16": 1e15, "fp16": 1e15}, 3e12, "measured ceilings")
    with pytest.raises(JobError, match="m1 measured no fp8 matmul .*bf16, fp16.*choose bf16 or fp16"):
        require_fp8(parse_job("gpt-small fp8 tokens=1B"), without, "m1")
