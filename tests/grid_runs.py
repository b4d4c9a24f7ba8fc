"""The GPU grid benchmarks' CPU check (benchmarks/gpu_*_grid.py, gpu_rnn_kernels.py --small), shared by their tests:
run the script at its tiny sizes into a fresh folder, and the document it writes there as its only file."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from paths import REPO, load_script


def small_grid(script: str, out: Path, *args: str) -> tuple[ModuleType, dict]:
    """(the benchmark module, its document) after `script --small --out OUT ARGS`, which exits 0, writes one file
    and skips nothing."""
    bench = load_script(REPO / "benchmarks" / script)
    assert bench.main(["--small", "--out", str(out), *args]) == 0
    assert [p.name for p in out.iterdir()] == [bench.OUT_NAME]
    doc = json.loads((out / bench.OUT_NAME).read_text())
    assert not doc["skipped"]
    return bench, doc


def assert_every_setting_checked_and_timed(bench: ModuleType, doc: dict) -> None:
    """Every setting's float64 check passed, and every point of the tiny grid was timed in every setting."""
    assert all(c["ok"] for c in doc["checks"].values()) and set(doc["checks"]) == set(bench.SETTINGS)
    assert {(p["sweep"], p["setting"]) for p in doc["points"]} == \
        {(p["sweep"], s) for p in bench.grid(True) for s in bench.SETTINGS}
