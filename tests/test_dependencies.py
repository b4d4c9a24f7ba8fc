"""Dependencies: every third-party module any code path imports is declared in pyproject.toml (runtime ones in
`dependencies`, test-only ones in the `test` extra; torch is the one exception, installed by `make setup`);
a bare host without Pillow or psutil still collects, the data-loader collector saying why in one line; and
start-up is quiet: no "Failed to initialize NumPy" from torch, one line for bad input."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from paths import REPO as ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

RUNTIME_DIRS = ("gpuplan_schema", "collectors", "planner", "examples", "benchmarks")
NOT_DECLARED = {"torch"}  # GPU hosts bring their own build; `make setup` installs the pinned CPU one elsewhere
NUMPY_WARNING = "Failed to initialize NumPy"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(requirements: list[str]) -> set[str]:
    return {canonical(re.match(r"[A-Za-z0-9._-]+", r.strip()).group(0)) for r in requirements}


def local_modules() -> set[str]:
    """Top-level packages and modules of this repository, and the tests' own helper modules."""
    names = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"].get(
        "package-dir", {}))  # packages installed from a folder of another name (templates/ as gpuplan_templates)
    names |= {p.stem for p in ROOT.glob("*.py")} | {p.stem for p in (ROOT / "tests").glob("*.py")}
    names |= {p.stem for p in (ROOT / "docs").glob("*.py")}  # docs/generate.py and its tables, run by a test
    names.add("docs")  # the same tables imported as a namespace package (tests/test_trace_tables.py)
    return names | set(RUNTIME_DIRS)


def imported_top_level(files: list[Path]) -> dict[str, Path]:
    """{top-level module: a file importing it} for every absolute import, at module level or inside a function."""
    found: dict[str, Path] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], path)
    return found


def third_party(files: list[Path]) -> dict[str, Path]:
    skip = set(sys.stdlib_module_names) | local_modules() | {"__future__"} | NOT_DECLARED
    return {m: p for m, p in imported_top_level(files).items() if m not in skip}


def undeclared(modules: dict[str, Path], declared: set[str]) -> list[str]:
    distributions = importlib.metadata.packages_distributions()
    problems = []
    for module, path in sorted(modules.items()):
        # a module not installed here (an optional extra's) is taken to come from the distribution of its name
        names = {canonical(d) for d in distributions.get(module, [])} or {canonical(module)}
        if not names & declared:
            where = f"installed by {sorted(names)}" if names else "not installed"
            problems.append(f"{module} (imported by {path.relative_to(ROOT)}; {where})")
    return problems


@pytest.fixture(scope="module")
def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_every_runtime_import_is_a_declared_dependency(project):
    files = [p for d in RUNTIME_DIRS for p in (ROOT / d).rglob("*.py")]
    modules = third_party(files)
    assert {"PIL", "psutil", "jinja2", "altair", "vl_convert", "weasyprint"} <= modules.keys()  # the walk sees them
    # an optional extra's package (pyarrow: `parquet`) counts only where its feature says how to get it
    optional = {name for extra, reqs in project["optional-dependencies"].items() if extra != "test"
                for name in requirement_names(reqs)}
    assert undeclared(modules, requirement_names(project["dependencies"]) | optional) == []
    frame = (ROOT / "planner" / "export" / "frame.py").read_text(encoding="utf-8")
    assert "pip install 'gpuplan[parquet]'" in frame  # the Parquet writer names its extra


def test_every_test_import_is_declared_in_the_dependencies_or_the_test_extra(project):
    declared = requirement_names(project["dependencies"] + project["optional-dependencies"]["test"])
    modules = third_party(sorted((ROOT / "tests").rglob("*.py")))
    assert {"pytest", "hypothesis", "pypdf"} <= modules.keys()
    assert undeclared(modules, declared) == []


def test_the_stated_dependencies_and_extras(project):
    runtime = requirement_names(project["dependencies"])
    assert {"psutil", "pillow", "numpy", "pandas", "nvidia-ml-py"} <= runtime
    assert "torch" not in runtime and "pyarrow" not in runtime
    assert requirement_names(project["optional-dependencies"]["parquet"]) == {"pyarrow"}
    assert {"pytest", "pypdf", "hypothesis", "ruff"} <= requirement_names(project["optional-dependencies"]["test"])
    assert all(re.search(r">=\s*\d", r) for r in project["dependencies"]), "each runtime dependency has a lower bound"


# `python -m collectors` in a fresh interpreter where Pillow, psutil and the planner's stack cannot be imported:
# what a bare GPU host with torch, the standard library and nvidia-ml-py has.
BARE_HOST = textwrap.dedent("""
    import importlib.abc, runpy, sys
    blocked = set(sys.argv.pop(1).split(","))

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    sys.meta_path.insert(0, Block())
    sys.argv[0] = "collectors"
    runpy.run_module("collectors", run_name="__main__", alter_sys=True)
""")
BLOCKED = "PIL,psutil,pandas,jinja2,markupsafe,altair,vl_convert,weasyprint,pypdf,planner"


def test_a_host_without_pillow_and_psutil_collects_the_rest_and_says_why_in_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", BARE_HOST, BLOCKED, "--only", "environment", "dataloader", "--out", str(tmp_path),
         "--machine", "bare", "--dataset-cache", str(tmp_path.parent / "jpeg-cache")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    named = [line for line in proc.stderr.splitlines() if "Pillow" in line or "psutil" in line]
    assert named == ["dataloader: skipped: needs Pillow (pip install Pillow)"]
    folder = tmp_path / "bare"
    assert sorted(p.name for p in folder.glob("*.json")) == ["dataloader.json", "environment.json"]
    payload = json.loads((folder / "dataloader.json").read_text(encoding="utf-8"))["payload"]
    assert (payload["status"], payload["reason"]) == ("skipped", "needs Pillow (pip install Pillow)")
    assert "skipped: needs Pillow (pip install Pillow)" in proc.stdout   # the collection's summary line


def run_python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_bad_input_is_one_line_on_stderr_and_exit_2():
    proc = run_python("-m", "planner.cli", "report", "/nonexistent")
    assert proc.returncode == 2
    assert NUMPY_WARNING not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("gpuplan: error: /nonexistent")


@pytest.mark.parametrize("args", [("-m", "collectors", "--help"), ("-m", "planner.cli", "collect", "--help"),
                                  ("-c", "import torch")], ids=["collectors", "gpuplan-collect", "torch"])
def test_start_up_writes_nothing_to_stderr(args):
    proc = run_python(*args)
    assert proc.returncode == 0, proc.stderr
    assert NUMPY_WARNING not in proc.stderr
    assert proc.stderr == ""
