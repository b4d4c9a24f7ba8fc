"""One decision engine: for every committed machine, every batch, precision, rate, bound and instance that the plan
text, the report (its decision page and its workload pages) and the site (its index and its job chooser) print is
the plan JSON's. The outputs are read as a person reads them (the printed text, parsed back into numbers), never
through the structures they were made from."""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
from pathlib import Path

import pytest
from paths import RESULTS

from gpuplan_schema.results import load_machine, load_results_root
from planner.cli import main as gpuplan
from planner.plan.bounds import BoundKind
from planner.plan.plan import report_plan
from planner.render.report import render_report_html
from planner.report.frame import build_report, build_report_for
from planner.site.index import build_site_index
from planner.site.jobs import build_chooser
from planner.units import short_rate

COMMITTED = sorted(p for p in RESULTS.iterdir() if p.is_dir() and any(p.glob("*.json")))
RANGE = re.compile(r"^([\d.]+[kMG]?)(?:–([\d.]+[kMG]?))?$")


def run(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    rc = gpuplan(list(args))
    return rc, capsys.readouterr().out


def visible(fragment: str) -> str:
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def number(text: str) -> float:
    """'8400' → 8400, '11.7k' → 11700, '1.05M' → 1.05e6, '131 072' → 131072 (as printed)."""
    text = text.replace(" ", "").replace(",", "")
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1:], 1)
    return float(text.rstrip("kMG")) * scale


def same(printed: str, value: float) -> bool:
    """The printed figure is the value at the precision it was printed with (three figures, k/M from 10k)."""
    return printed == short_rate(value) or abs(number(printed) - value) <= 0.005 * value + 0.5


def same_range(printed: str, expected: dict) -> bool:
    found = RANGE.match(printed.strip())
    assert found, printed
    low, high = found.group(1), found.group(2) or found.group(1)
    return same(low, expected["low_per_s"]) and same(high, expected["high_per_s"])


def same_batch(printed: str, batch: int) -> bool:
    return abs(number(printed) - batch) <= 0.005 * batch


def check_runs(printed: str, row: dict) -> None:
    """'bf16 512 compile' against the ranking row's precision, batch per GPU and compiled step."""
    precision, batch, *mode = printed.split()
    assert precision == row["precision"] and same_batch(batch, row["batch_per_gpu"]), (printed, row["instance"])
    if row["torch_compile"] is not None:
        assert mode == ["compile" if row["torch_compile"] else "eager"], (printed, row["instance"])


def ranking_row(data: dict, workload: str, instance: str) -> dict:
    return next(r for r in data["jobs"][workload]["ranking"] if r["instance"] == instance)


@pytest.fixture(scope="module")
def root():  # noqa: ANN201 - the committed machines, loaded once
    return load_results_root(RESULTS)


def plan_data(capsys: pytest.CaptureFixture, folder: Path, *extra: str) -> dict | None:
    rc, out = run(capsys, "plan", str(folder), "--json", *extra)
    return json.loads(out) if rc == 0 else None


@pytest.mark.slow
@pytest.mark.parametrize("folder", COMMITTED, ids=lambda p: p.name)
def test_the_plan_text_prints_the_plan_jsons_answer(folder, capsys, monkeypatch):
    data = plan_data(capsys, folder)
    if data is None:
        assert gpuplan(["plan", str(folder)]) == 2  # no plan for this folder: the text says so in one line
        return
    monkeypatch.setenv("COLUMNS", "80")
    rc, text = run(capsys, "plan", str(folder))
    assert rc == 0
    lines = text.splitlines()
    assert len(lines) <= 60 and max(map(len, lines)) <= 80
    answers = {a["workload"]: a for a in data["targets"][0]["answers"] if a["gpu_count"] == 1}
    head = next(i for i, line in enumerate(lines) if line.startswith("workload "))
    table = lines[head + 1:head + 1 + len(answers)]
    for line in table:
        workload, precision, batch, mode, *rest = line.split()
        answer = answers[workload]
        settings, expected = answer["settings"], answer["expected"]
        assert precision == settings["precision"] and same_batch(batch, settings["batch"]), line
        assert mode == ("compile" if settings["torch_compile"] else "eager"), line
        at = next(i for i, word in enumerate(rest) if re.fullmatch(r"\d+w\*?", word))
        assert rest[at] == f"{settings['loader']['workers']}w{'' if settings['loader']['measured'] else '*'}"
        figure, bound = rest[at + 1], rest[at + 3]
        rest[at + 2] = rest[at + 2].rstrip("⁰¹²³⁴⁵⁶⁷⁸⁹")  # a note's mark follows the unit
        assert same_range(figure, expected), line
        assert bound == BoundKind(expected["bound"]["bound"]).brief, line
    assert {line.split()[0] for line in table} == set(answers)
    check_text_picks(lines, data)


def check_text_picks(lines: list[str], data: dict) -> None:
    """Each pick's line and its 'runs' line against the default job's ranking row."""
    workload = data["job"]["workload"]
    picks = [(i, m) for i, line in enumerate(lines)
             if (m := re.match(r"^  (?:fastest|cheapest|both|Pareto) +(\S+), \d+ × [^:]+: (.+?), \$([\d,.]+)", line))]
    assert picks
    for i, found in picks:
        row = ranking_row(data, workload, found.group(1))
        runs = re.search(r"runs (.+?) at ([\d.]+[kMG]?)/s per GPU", lines[i + 1])
        assert runs, lines[i + 1]
        check_runs(runs.group(1), row)
        assert same(runs.group(2), row["per_gpu_samples_per_s"])
        cost = row["cost_usd"]
        assert abs(number(found.group(3)) - cost) <= (0.005 if cost < 10 else 0.5)  # cents under $10, whole dollars


@pytest.mark.slow
@pytest.mark.parametrize("folder", COMMITTED, ids=lambda p: p.name)
def test_the_report_prints_the_plan_jsons_answer(folder, capsys):
    """The report of the folder alone (`gpuplan report DIR`) against `gpuplan plan DIR --json`."""
    data = plan_data(capsys, folder)
    report = build_report_for(folder)
    page = render_report_html(report)
    if data is None:
        assert "data-workload" not in page or all(
            "undetermined" in visible(row) for row in re.findall(r'<tr data-workload=.*?</tr>', page, re.S))
        return
    check_report(page, data)


def check_report(page: str, data: dict) -> None:
    answers = {(a["workload"], a["target"]): a for t in data["targets"] for a in t["answers"] if a["gpu_count"] == 1}
    source = data["targets"][0]["name"]
    rows = re.findall(r'<tr data-workload="([^"]+)">(.*?)</tr>', page, re.S)
    assert rows
    for workload, row in rows:
        answer = answers[(workload, source)]
        settings, expected = answer["settings"], answer["expected"]
        bound = visible(re.search(r'class="g-bound"[^>]*>(.*?)</td>', row, re.S).group(1))
        assert bound.startswith(BoundKind(expected["bound"]["bound"]).label.removesuffix("-bound").replace("-", " "))
        assert same_range(visible(re.search(r'<span class="rate">(.*?)</span>', row).group(1)), expected)
        shown = visible(re.search(r'class="g-settings">(.*?)</td>', row, re.S).group(1)).split()
        assert shown[0] == settings["precision"] and same_batch(shown[1], settings["batch"]), (workload, shown)
        for instance, runs in re.findall(r'<span class="instance">([^<]+)</span>.*?<span class="runs">([^<]+)</span>',
                                         row, re.S):
            check_runs(runs, ranking_row(data, workload, instance))
        check_page(page, workload, data, answers)


def check_page(page: str, workload: str, data: dict, answers: dict) -> None:
    """A workload's page: its title's range, every other GPU's row, every pick's row."""
    start = page.index(f'<section id="decision-{workload}"')
    section = page[start:page.index("</section>", start)]
    mine = answers[(workload, data["targets"][0]["name"])]
    assert same_range(visible(re.search(r'<span class="rate">(.*?)</span>', section).group(1)), mine["expected"])
    settings = visible(re.search(r'<span class="settings">(.*?)</span>', section).group(1))
    assert f"{mine['settings']['precision']} " in settings + " "
    assert same_batch(re.search(r"batch ([\d ]+)", settings).group(1), mine["settings"]["batch"])
    for target, row in re.findall(r'<tr data-target="([^"]+)">(.*?)</tr>', section, re.S):
        answer = answers[(workload, html_lib.unescape(target))]
        cells = [visible(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        assert cells[1].split()[0] == answer["settings"]["precision"]
        assert same_batch(cells[1].split()[1], answer["settings"]["batch"])
        assert same_range(cells[2], answer["expected"]) and cells[3] == answer["bound"], (workload, target)
    for instance, row in re.findall(r'<tr data-instance="([^"]+)">(.*?)</tr>', section, re.S):
        ranked = ranking_row(data, workload, html_lib.unescape(instance))
        check_runs(visible(re.search(r'class="runs">(.*?)</td>', row).group(1)), ranked)
        assert same(visible(re.search(r'class="num rate">(.*?)</td>', row).group(1)), ranked["per_gpu_samples_per_s"])


@pytest.mark.slow
def test_the_site_prints_each_machines_plan_json_answer(root, capsys):
    """The site plans every machine with the others of its root: `gpuplan plan DIR --with ROOT --json` is its answer."""
    planned = [(m, report_plan(m, None, root)) for m in root]
    reports = [build_report(m, plan, root) for m, plan in planned]
    index = build_site_index(root, reports)
    chooser = build_chooser(planned)
    names = [m[0] for m in chooser.instances]
    checked = 0
    for (machine, plan), report in zip(planned, reports, strict=True):
        if plan is None:
            continue
        data = plan_data(capsys, machine.folder, "--with", str(RESULTS))
        check_report(render_report_html(report, part="short"), data)   # the machine's page of the site
        row = next(r for r in index.rows if r.machine == machine.machine)
        cells = dict(zip([c.title for c in index.columns], row.cells, strict=True))
        for answer in (a for a in data["targets"][0]["answers"] if a["gpu_count"] == 1 and a["expected"]):
            assert cells[answer["workload"]].value == answer["expected"]["throughput_per_s"]
            key = f"{machine.machine}|{answer['workload']}|{answer['settings']['precision']}|1"
            job = data["jobs"][answer["workload"]]
            if key in chooser.tables and job["job"]["samples"] == chooser.tables[key]["samples"]:
                for shown in chooser.tables[key]["rows"][:5]:
                    if shown[1]:
                        check_runs(shown[11], ranking_row(data, answer["workload"], names[shown[0]]))
                        checked += 1
    assert checked


def test_a_foreign_json_beside_the_folder_is_skipped_with_one_warning_and_changes_nothing(tmp_path, capsys):
    """Issue 37: runs/other/notes.json beside runs/h100-80gb stopped `plan` with 'schema_version: missing'; a
    package.json in the folder did too. Now: exit 0, one warning line, the answer of the folder alone."""
    runs = tmp_path / "runs"
    (runs / "other").mkdir(parents=True)
    h100 = runs / "h100-80gb"
    shutil.copytree(RESULTS / "h100-80gb", h100)   # with its diagnostics/ (another host's timings)
    (runs / "other" / "notes.json").write_text('{"a": 1}')
    (h100 / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    rc = gpuplan(["plan", str(h100), "--json"])
    out, err = capsys.readouterr()
    assert rc == 0 and err.count("\n") == 1 and "warning: skipped 1 JSON file" in err and "package.json" in err
    alone = json.loads(out)
    rc = gpuplan(["plan", str(RESULTS / "h100-80gb"), "--json"])
    inside = json.loads(capsys.readouterr().out)
    assert rc == 0 and alone["targets"] == inside["targets"] and alone["jobs"] == inside["jobs"]
    assert alone["machines_used"] == ["h100-80gb"]
    rc = gpuplan(["plan", str(h100), "--with", str(runs), "--json"])
    out, err = capsys.readouterr()
    assert rc == 0 and err.count("\n") == 1 and "notes.json" in err and "skipped 2 JSON files" in err


def test_the_plan_says_which_machines_it_read(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    rc, text = run(capsys, "plan", str(RESULTS / "h100-80gb"))
    assert rc == 0 and "Machines read: h100-80gb alone" in text
    rc, text = run(capsys, "plan", str(RESULTS / "h100-80gb"), "--with", str(RESULTS / "h200"))
    assert rc == 0 and "Machines read: h100-80gb, with h200" in " ".join(text.split())
    data = plan_data(capsys, RESULTS / "h100-80gb", "--with", str(RESULTS))
    assert data["machines_used"][0] == "h100-80gb" and "h200" in data["machines_used"]
    assert load_machine(RESULTS / "h100-80gb").skipped == ()
