"""The collectors run on a bare PyTorch GPU host: torch, the standard library and (optionally)
nvidia-ml-py, nothing of the planner's stack. One real CPU run proves it and checks its figures."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from paths import REPO as ROOT

from gpuplan_schema.payloads import CeilingsPayload
from gpuplan_schema.schema import load_document

BLOCKED = ("pandas", "jinja2", "altair", "vl_convert", "weasyprint", "pydantic", "pypdf", "planner")

# Runs in a fresh interpreter: a meta-path finder makes the planner's dependencies (and the
# planner itself) unimportable before anything is imported, then both entry points run.
SCRIPT = textwrap.dedent("""
    import importlib.abc, sys
    from pathlib import Path

    BLOCKED = set(sys.argv[2].split(","))

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"blocked for this test: {name}", name=name)
            return None

    sys.meta_path.insert(0, Block())
    out = sys.argv[1]

    from collectors.__main__ import main
    rc = main(["--only", "environment", "--out", out, "--machine", "t"])

    import collectors.ceilings.collect
    from gpuplan_schema.progress import Progress
    from gpuplan_schema.schema import build_document, save_document
    with Progress("ceilings", 1) as progress:
        payload = collectors.ceilings.collect.collect_ceilings(progress, dtypes=("fp32",))
    c = collectors.ceilings.collect
    save_document(build_document(c.NAME, c.NAME, c.VERSION, "t", payload), Path(out) / "t" / "ceilings.json")

    leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not leaked, leaked
    sys.exit(rc)
""")


@pytest.fixture(scope="module")
def standalone_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("standalone")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(out), ",".join(BLOCKED)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    return proc, out / "t"


def test_collectors_need_only_torch_and_the_standard_library(standalone_run):
    proc, folder = standalone_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in folder.iterdir()) == ["ceilings.json", "environment.json"]
    assert load_document(folder / "environment.json").kind == "environment"
    assert load_document(folder / "ceilings.json").kind == "ceilings"


def test_a_real_cpu_ceilings_run_gives_sane_figures(standalone_run):
    proc, folder = standalone_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    ceilings: CeilingsPayload = load_document(folder / "ceilings.json").payload
    (fp32,) = ceilings.matmul
    assert fp32.dtype == "fp32" and fp32.status == "ok"
    assert fp32.flops_per_s.median > 1e9  # even 2 CPU cores do more than 1 GFLOP/s
    copy = next(b for b in ceilings.memory if b.name == "copy")
    assert copy.status == "ok" and copy.bytes_per_s.median > 100e6
    assert ceilings.launch_latency_s is not None and ceilings.launch_latency_s.median < 1e-3
    for stat in (fp32.flops_per_s, copy.bytes_per_s, ceilings.launch_latency_s):
        assert stat.n >= 3 and stat.q1 <= stat.median <= stat.q3  # figures carry their statistics
