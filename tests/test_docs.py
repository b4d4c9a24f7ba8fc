"""The docs' measured figures come from results/: generated blocks are current, and no measured figure sits
outside one (docs/generate.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from paths import FIXTURES, FROZEN, REPO, RESULTS

sys.path.insert(0, str(REPO / "docs"))
import generate  # noqa: E402  (docs/generate.py: a script, imported here for its functions)
import tables  # noqa: E402

from gpuplan_schema.results import load_results_root  # noqa: E402

H100_DIR = "tests/fixtures/frozen/h100-80gb"  # relative to the repository root, where the commands run

# A figure with one of these units is a measurement (rates and latencies); thresholds and sizes in the prose
# ("steps ≥ 20 ms", "8 KiB to 1 GiB") are not, so ms and bytes are left out of the scan.
MEASURED = re.compile(r"\d[\d.,]*\s*(?:k\s+)?(?:TFLOP/s|GFLOP/s|GB/s|MB/s|img/s|images/s|seq/s|sequences/s|"
                      r"samples/s|tokens/s|realizations/s|windows/s|µs)(?!\w)")
# Prose citations of measurements that are not in results/ (each names its source on the same line).
ALLOWED = {
    "docs/method.md": ("benchmarks/matmul_burst.py", "for the first 20 ms and at 640–680 TFLOP/s"),
    "docs/history.md": ("benchmarks/host_noise.py",),   # the record of past measurements, each line citing
}


@pytest.fixture(scope="module")
def machines():
    """The committed machines: the docs' generated blocks quote them (the checks named test_committed_results_*)."""
    return load_results_root(RESULTS)


@pytest.fixture(scope="module")
def frozen_machines():
    return load_results_root(FROZEN)


def outside_blocks(text: str) -> str:
    return generate.BLOCK.sub("", text)


def test_committed_results_are_what_the_docs_generated_blocks_say(machines):
    stale = generate.stale_blocks(machines)
    assert not stale, f"run `python docs/generate.py`: stale {sorted(str(p.relative_to(REPO)) for p in stale)}"


def test_check_exits_1_naming_the_stale_block_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(generate, "RESULTS", FROZEN)
    doc = tmp_path / "page.md"
    text = "intro\n<!-- generated: ddp -->\n| old | table |\n<!-- end generated: ddp -->\nend\n"
    doc.write_text(text, encoding="utf-8")
    assert generate.main(["--check"], docs=[doc]) == 1
    assert "stale generated block(s): ddp" in capsys.readouterr().out
    assert doc.read_text(encoding="utf-8") == text
    assert generate.main([], docs=[doc]) == 0  # regenerate in place: the block now holds the ddp table
    new = doc.read_text(encoding="utf-8")
    assert new.startswith("intro\n") and new.endswith("end\n") and "| `h200-x4` | `gpt-small` | 4 |" in new
    assert generate.main(["--check"], docs=[doc]) == 0


def test_committed_screenshots_show_the_figures_the_report_gives(machines):
    """Reads the committed docs/screenshots.json: the figures the README's screenshots show are the report's now."""
    assert generate.stale_screenshots(machines) is None, "run `python docs/generate.py` (it takes them again)"
    shown = json.loads(generate.SHOT_FIGURES.read_text(encoding="utf-8"))
    assert {w["workload"] for w in shown["workloads"]} >= {"resnet50", "gpt-small", "wide-transformer"}


def test_a_screenshot_showing_an_old_figure_is_stale_without_comparing_pixels(tmp_path, frozen_machines):
    shown = tables.screenshot_figures(frozen_machines)   # what screenshots of the frozen results would show
    (tmp_path / "screenshots.json").write_text(json.dumps(shown), encoding="utf-8")
    assert generate.stale_screenshots(frozen_machines, tmp_path / "screenshots.json") is None
    wide = next(w for w in shown["workloads"] if w["workload"] == "wide-transformer")
    now, wide["throughput"] = wide["throughput"], "501 sequences/s"  # the figure of issue 27's old screenshot
    (tmp_path / "screenshots.json").write_text(json.dumps(shown), encoding="utf-8")
    assert generate.stale_screenshots(frozen_machines, tmp_path / "screenshots.json") == \
        f"wide-transformer throughput: '501 sequences/s' shown, the report gives {now!r}"
    assert generate.stale_screenshots(frozen_machines, tmp_path / "absent.json") is not None


def test_committed_results_generate_check_passes_from_the_command_line():
    run = subprocess.run([sys.executable, str(REPO / "docs" / "generate.py"), "--check"], capture_output=True,
                         text=True, cwd=REPO)
    assert run.returncode == 0, run.stdout + run.stderr


def test_an_unknown_block_name_stops_the_script(frozen_machines):
    with pytest.raises(SystemExit, match="no generator named 'nope'"):
        generate.regenerate("<!-- generated: nope -->\n<!-- end generated: nope -->", frozen_machines, {})


def test_every_generator_is_used_and_every_block_is_known():
    used = {m["name"] for path in generate.DOCS for m in generate.iter_blocks(path.read_text(encoding="utf-8"))}
    assert used == set(generate.GENERATORS)


def test_no_measured_figure_outside_a_generated_block():
    found = []
    for path in generate.DOCS:
        where = str(path.relative_to(REPO))
        for line in outside_blocks(path.read_text(encoding="utf-8")).splitlines():
            if MEASURED.search(line) and not any(cite in line for cite in ALLOWED.get(where, ())):
                found.append(f"{where}: {line.strip()}")
    assert not found, "measured figures outside generated blocks:\n" + "\n".join(found)


def test_the_scan_sees_a_measured_figure_in_prose():
    assert MEASURED.search("bf16 runs at 798.9 TFLOP/s") and MEASURED.search("216 k tokens/s")
    assert MEASURED.search("latency 11.0 µs") and not MEASURED.search("steps ≥ 20 ms, 8 KiB to 1 GiB")


def test_the_tables_follow_the_documents_they_read():
    """Generated from other results (the test fixtures' H100 alone), the ceilings table says their figures."""
    fixtures = load_results_root(FIXTURES)
    (h100,) = [m for m in fixtures if m.gpu_name]
    bf16 = next(m for m in h100.ceilings.matmul if m.dtype == "bf16")
    table = tables.ceilings(fixtures)
    assert table.count("\n") == 2 + 5 + 5  # header, rule; 5 dtypes; copy, read/write, h2d, latency, elapsed
    assert f"(`{h100.machine}`)" in table and "h200" not in table
    assert f"| bf16 matmul, peak / sustained (TFLOP/s) | {bf16.flops_per_s.median / 1e12:.4g} / " in table


def test_the_readme_is_a_front_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert readme.count("\n") < 250
    assert "../shared" not in readme and "make setup report" in readme and "make test" in readme
    assert "`gpuplan plan" in readme and "docs/report-first-screen.png" in readme
    assert tables.LOAD_EXAMPLE in readme
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / link).exists(), link


def test_committed_results_print_what_the_readme_pandas_example_shows():
    run = subprocess.run([sys.executable, "-c", tables.LOAD_EXAMPLE], capture_output=True, text=True, cwd=REPO,
                         check=True)
    block = re.search(r"<!-- generated: load-results-example -->\n```text\n\$ [^\n]*\n(.*?)```",
                      (REPO / "README.md").read_text(encoding="utf-8"), re.S)
    assert block and block[1] == run.stdout


def test_committed_results_print_what_the_readme_pivot_example_shows():
    """The pivot over the key's columns, run as a user would on the committed results, prints the generated
    block's output: one measured value per cell (the key is unique, so there is nothing to average)."""
    run = subprocess.run([sys.executable, "-c", tables.PIVOT_EXAMPLE], capture_output=True, text=True, cwd=REPO,
                         check=True)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- generated: pivot-example -->\n```python\n(.*?)\n```\n\n```text\n(.*?)```", readme, re.S)
    assert block and block[1] == tables.PIVOT_EXAMPLE and block[2] == run.stdout
    assert "compile" in run.stdout and "NaN" not in run.stdout and "<NA>" not in run.stdout


def test_no_doc_links_outside_the_repository():
    for path in [*generate.DOCS, REPO / "docs" / "architecture.md"]:
        text = path.read_text(encoding="utf-8")
        assert "../shared" not in text, path
        for link in re.findall(r"\]\(([^)#:]+\.md)", text):
            assert (path.parent / link).exists(), f"{path.name}: {link}"



def test_the_readme_plan_command_piped_into_head_ends_quietly():
    """`gpuplan plan … | head`: the reader closes the pipe early; that is no error (it printed one before)."""
    proc = subprocess.Popen([sys.executable, "-m", "planner.cli", "plan", H100_DIR, "--target", "H200"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    first = proc.stdout.read(40)
    proc.stdout.close()  # as head does once it has its lines
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and err == "" and first.startswith(b"Plan for h100-80gb")
