"""The import rules of docs/architecture.md, checked on the source: which package may import which,
no import cycles, a model that needs no rendering stack, and a wheel that works on its own."""

from __future__ import annotations

import ast
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from paths import FROZEN, REPO

PACKAGES = ("gpuplan_schema", "collectors", "planner", "gpuplan_templates")
# package (or sub-package) -> the first-party packages it may import
ALLOWED = {
    "gpuplan_schema": {"gpuplan_schema"},
    "collectors": {"gpuplan_schema", "collectors"},
    "planner": {"gpuplan_schema", "planner", "gpuplan_templates"},
    "gpuplan_templates": set(),
}
# The deciding packages compute; they never import presentation (charts, rendering, report, site, export).
# Each imports only those before it in this order (PLANNER_MAY): one GPU's step, several GPUs, the checks
# and the bands they set, instances for a job, the plan.
DECIDE = ("model", "scaling", "check", "rank", "trace", "plan")
DECIDING = tuple(f"planner.{stage}" for stage in DECIDE)
MODEL_MAY_NOT = ("planner.charts", "planner.render", "planner.report", "planner.site", "planner.export",
                 "planner.cli")
RENDERING_STACK = ("altair", "jinja2", "markupsafe", "weasyprint", "vl_convert")
# Each collector package imports collectors.core (what they share) and itself; the documented exceptions
# (docs/architecture.md, "Collectors"): roofline profiles the workloads collector's steps, built by its
# sweep plan; distributed trains the reference workloads with its training step and overlaps the ceilings'
# matmul with the all-reduce; trace loads workloads and plans their sweep as the workloads collector does and
# counts each op as the roofline collector counts it. collectors.core imports no collector package.
COLLECTOR_PACKAGES = ("core", "environment", "ceilings", "workloads", "roofline", "dataloader", "distributed", "trace")
COLLECTOR_MAY_ALSO = {"roofline": {"workloads"}, "distributed": {"workloads", "ceilings"},
                      "trace": {"workloads", "roofline"}}
# planner's stages (docs/architecture.md, "Inside planner"): the deciding packages (DECIDE) decide, each from those
# before it; report builds typed structures
# from the plan (charts are part of them); render turns them into HTML, PDF and text; site puts pages
# together. Nothing imports cli; report never imports render or site, render never imports site.
PLANNER_MAY = {
    "units": set(),
    "specs": set(),
    **{stage: {*DECIDE[:i], "specs", "units"} for i, stage in enumerate(DECIDE)},
    "charts": {*DECIDE, "units"},
    "report": {*DECIDE, "specs", "charts", "units"},
    "render": {*DECIDE, "specs", "charts", "report", "units"},
    "site": {*DECIDE, "specs", "charts", "report", "render", "export", "units"},
    "export": {*DECIDE, "specs", "units"},
    "fleet": {*DECIDE, "specs", "units"},
}
TEMPLATES = REPO / "templates"   # installs as gpuplan_templates (pyproject.toml's package-dir)


def module_name(path: Path) -> str:
    if path.is_relative_to(TEMPLATES):
        path = REPO / "gpuplan_templates" / path.relative_to(TEMPLATES)
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_dir(package: str) -> Path:
    return TEMPLATES if package == "gpuplan_templates" else REPO / package


def iter_modules() -> list[tuple[str, Path]]:
    return sorted((module_name(p), p) for pkg in PACKAGES for p in package_dir(pkg).rglob("*.py"))


def is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def runtime_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:` (names for the type checker, never imported)."""
    skip = {id(n) for block in ast.walk(tree) if is_type_checking(block) for n in ast.walk(block)}
    return [n for n in ast.walk(tree) if id(n) not in skip]


def imports_of(path: Path, module: str, *, top_level_only: bool = False) -> set[str]:
    """Absolute names a module imports; `top_level_only` leaves out imports inside functions (lazy ones)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else runtime_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: up `level - 1` packages from this one
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found |= {f"{base}.{alias.name}" for alias in node.names} | {base}
    return found


def first_party(name: str) -> str | None:
    top = name.split(".")[0]
    return top if top in PACKAGES else None


MODULES = iter_modules()


def test_every_package_imports_only_what_its_stage_may():
    wrong = [f"{module} imports {name}" for module, path in MODULES for name in imports_of(path, module)
             if first_party(name) and first_party(name) not in ALLOWED[module.split(".")[0]]]
    assert wrong == []


def test_the_model_imports_no_presentation():
    wrong = [f"{module} imports {name}" for module, path in MODULES if module.startswith(DECIDING)
             for name in imports_of(path, module)
             if name.startswith(MODEL_MAY_NOT) or name.split(".")[0] in RENDERING_STACK]
    assert wrong == []


def test_the_contract_needs_only_the_standard_library():
    third_party = [f"{module} imports {name}" for module, path in MODULES if module.startswith("gpuplan_schema")
                   for name in imports_of(path, module)
                   if not first_party(name) and name.split(".")[0] not in sys.stdlib_module_names]
    assert third_party == []


def resolve(name: str, known: set[str]) -> str | None:
    """The module a `from x import y` names: x.y when that is a module, else x."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}   # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_module_level_import_cycles():
    known = {m for m, _ in MODULES}
    graph = {m: {r for name in imports_of(p, m, top_level_only=True) if (r := resolve(name, known)) and r != m
                 and not (r in known and m.startswith(r + "."))}   # a package's own __init__ is not a cycle
             for m, p in MODULES}
    assert find_cycle(graph) is None


def test_find_cycle_finds_one():  # the checker itself can fail
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def sub_package(name: str, top: str) -> str | None:
    """`collectors.workloads.sweep` -> `workloads`; None for the package itself and its __main__."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == top and parts[1] != "__main__" else None


def imports_between(top: str) -> list[tuple[str, str, str]]:
    """(importing module, its sub-package, the imported sub-package) for imports across sub-packages of `top`."""
    found = []
    for module, path in MODULES:
        if (own := sub_package(module, top)) is None:
            continue
        for name in imports_of(path, module):
            other = sub_package(name, top)
            if other and other != own:
                found.append((module, own, other))
    return found


def test_the_collectors_are_one_package_each_sharing_only_core():
    assert {p.name for p in (REPO / "collectors").iterdir() if (p / "__init__.py").is_file()} == set(
        COLLECTOR_PACKAGES)
    assert sorted(p.name for p in (REPO / "collectors").glob("*.py")) == ["__init__.py", "__main__.py"]
    wrong = [f"{module} imports collectors.{other}" for module, own, other in imports_between("collectors")
             if other != "core" and other not in COLLECTOR_MAY_ALSO.get(own, set()) or own == "core"]
    assert wrong == []


def test_the_planner_stages_import_only_what_their_rules_allow():
    wrong = [f"{module} imports planner.{other}" for module, own, other in imports_between("planner")
             if own != "cli" and other not in PLANNER_MAY[own]]
    assert wrong == []
    assert set(PLANNER_MAY) | {"cli"} == {p.stem for p in (REPO / "planner").iterdir()
                                          if p.suffix == ".py" or (p / "__init__.py").is_file()} - {"__init__"}


def test_the_charts_are_pure_functions_of_their_data():
    """No file, no clock, no rendering: a chart spec follows from its arguments (altair builds the spec)."""
    effects = ("open", "write_text", "write_bytes", "read_text", "read_bytes", "now", "time", "perf_counter")
    wrong = []
    for module, path in MODULES:
        if module.startswith("planner.charts"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            wrong += [f"{module} calls {ast.unparse(n.func)}" for n in ast.walk(tree) if isinstance(n, ast.Call)
                      and (n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")) in effects]
            wrong += [f"{module} imports {name}" for name in imports_of(path, module)
                      if name.split(".")[0] in set(RENDERING_STACK) - {"altair"}]
    assert wrong == []


def package_graph(top: str) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for _module, own, other in imports_between(top):
        graph.setdefault(own, set()).add(other)
        graph.setdefault(other, set())
    return graph


@pytest.mark.parametrize("top", ["collectors", "planner"])
def test_no_circles_between_sub_packages(top):
    """Lazy imports included: report and render importing each other was a circle no module-level test saw."""
    assert find_cycle(package_graph(top)) is None


def test_pyproject_lists_every_package_and_ships_the_templates():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = {module for module, path in MODULES if path.name == "__init__.py"}
    assert set(config["packages"]) == found
    assert config["package-dir"] == {"gpuplan_templates": "templates"}
    shipped = {p.relative_to(TEMPLATES).as_posix() for pattern in config["package-data"]["gpuplan_templates"]
               for p in TEMPLATES.glob(pattern)}
    assert shipped == {p.relative_to(TEMPLATES).as_posix() for p in TEMPLATES.rglob("*")
                       if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts}


BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked!r}:
            raise ImportError('blocked for the test: ' + name)
sys.meta_path.insert(0, Block())
"""


def test_planner_model_imports_with_the_rendering_stack_blocked():
    code = BLOCKER.format(blocked=set(RENDERING_STACK)) + (
        "import pkgutil, importlib\n"
        f"for p in {DECIDING!r}:\n"
        "    for m in pkgutil.walk_packages(importlib.import_module(p).__path__, p + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "from planner.render.plan_text import render_plan_text\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_gpuplan_plan_runs_without_the_rendering_stack(tmp_path):
    code = BLOCKER.format(blocked=set(RENDERING_STACK)) + (
        "import sys; from planner.cli import main\n"
        f"sys.exit(main(['plan', {str(FROZEN / 'h100-80gb')!r}, '--target', 'H200']))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "H200" in done.stdout


@pytest.mark.slow
def test_a_wheel_installs_into_a_fresh_environment_and_runs(tmp_path):
    """Built from the checkout, installed (not editable) into a new virtual environment whose only other
    packages are this environment's dependencies (on PYTHONPATH, so nothing of the checkout leaks in)."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(REPO),
                    "-w", str(wheels)], check=True, timeout=300, capture_output=True)
    (wheel,) = wheels.glob("gpuplan-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    deps = [p for p in sys.path if p.endswith("site-packages")]
    env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    # A clean environment for pip: with the checkout on PYTHONPATH it would find the build's egg-info there
    # and call gpuplan installed already.
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   timeout=300, capture_output=True, env=env, cwd=tmp_path)
    env["PYTHONPATH"] = ":".join(deps)
    work = tmp_path / "work"   # not the checkout: only the installed packages can be imported here
    work.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=600)

    where = run(str(python), "-c", "import planner, collectors, gpuplan_schema; print(planner.__file__)")
    assert where.returncode == 0 and str(env_dir) in where.stdout, where.stderr
    assert run(str(python), "-m", "collectors", "--help").returncode == 0
    gpuplan = str(env_dir / "bin" / "gpuplan")
    plan = run(gpuplan, "plan", str(FROZEN / "h100-80gb"), "--target", "H200")
    assert plan.returncode == 0, plan.stderr
    report = run(gpuplan, "report", str(FROZEN / "h100-80gb"), "--out", str(tmp_path / "reports"))
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "reports" / "h100-80gb" / "report.pdf").stat().st_size > 10_000
    site = run(gpuplan, "site", str(REPO / "tests" / "fixtures" / "results"), "--out", str(tmp_path / "site"),
               "--no-pdf")
    assert site.returncode == 0, site.stderr
    assert (tmp_path / "site" / "index.html").is_file()
