"""Regenerate every table in README.md and docs/*.md that quotes results/, so that none can drift from the data.

    python docs/generate.py                # rewrite the generated blocks in place; the screenshots where stale
    python docs/generate.py --check        # exit 1 naming each stale block and stale screenshots; change nothing
    python docs/generate.py --screenshots  # … and take the screenshots again whether stale or not

A block is the text between `<!-- generated: NAME -->` and `<!-- end generated: NAME -->`; NAME is a key of
GENERATORS, a function from the loaded machines of results/ to the block's Markdown (docs/tables.py). Prose
around the blocks is hand-written and quotes no measured figure (tests/test_docs.py checks both).

The README's screenshots (docs/report-*.png, taken by tests/screenshots.py with headless Chromium and
pdftoppm) have the figures they show recorded beside them in docs/screenshots.json
(tables.screenshot_figures); when the report of results/ gives other figures, the screenshots are stale:
`--check` says so, a plain run takes them again.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "docs"):  # run as a script from a clone that is not installed; tables.py beside it
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import collection_tables  # noqa: E402
import multinode_tables  # noqa: E402
import tables  # noqa: E402
import trace_tables  # noqa: E402

from gpuplan_schema.results import MachineResults, load_results_root  # noqa: E402

RESULTS = ROOT / "results"
SHOT_FIGURES = ROOT / "docs" / "screenshots.json"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated: (?P=name) -->)", re.S)

GENERATORS: dict[str, Callable[[list[MachineResults]], str]] = {
    "headline": tables.headline,
    "plan-answer": tables.plan_answer,
    "plan-default": tables.plan_default,
    "plan-head": tables.plan_head,
    "load-results-example": tables.load_results_example,
    "pivot-example": tables.pivot_example,
    "ceilings": tables.ceilings,
    "workloads-main": tables.workloads_main,
    "variants": tables.variants,
    "allocator-boundaries": tables.allocator_boundaries,
    "user-workload": tables.user_workload,
    "accuracy-summary": tables.accuracy_summary,
    "network-inputs": multinode_tables.network_inputs,
    "sync-fit": multinode_tables.sync_fit,
    "two-node-emulation": multinode_tables.two_node_emulation,
    "node-ranking": multinode_tables.node_ranking,
    "accuracy-regimes": tables.accuracy_regimes,
    "accuracy-crossarch": tables.accuracy_crossarch,
    "accuracy-dle": tables.accuracy_dle,
    "accuracy-scaling": tables.accuracy_scaling,
    "accuracy-repeatability": tables.accuracy_repeatability,
    "host-noise": tables.host_noise,
    "recommended-check": tables.recommended_check,
    "compiled-bands": tables.compiled_bands,
    "band-harnesses": tables.band_harnesses,
    "held-out-models": tables.held_out_models,
    "held-out-lambda": tables.held_out_lambda,
    "held-out-timm": tables.held_out_timm,
    "below-roof-candidates": tables.below_roof_candidates,
    "below-roof-families": tables.below_roof_families,
    "accuracy-h100-h200": tables.accuracy_tables,
    "collectives": tables.collectives,
    "ddp": tables.ddp,
    "dataloader": tables.dataloader,
    "trace-leave-one-out": trace_tables.trace_leave_one_out,
    "trace-new-models": trace_tables.trace_new_models,
    "collection-stages": collection_tables.collection_stages,
}



def iter_blocks(text: str) -> Iterator[re.Match[str]]:
    return BLOCK.finditer(text)


def regenerate(text: str, machines: list[MachineResults], cache: dict[str, str]) -> str:
    """`text` with every generated block's body replaced by its generator's output."""

    def body(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            raise SystemExit(f"docs/generate.py: no generator named {name!r} (known: {', '.join(GENERATORS)})")
        if name not in cache:
            cache[name] = GENERATORS[name](machines)
        return match.group(1) + cache[name] + match.group(4)

    return BLOCK.sub(body, text)


def stale_blocks(machines: list[MachineResults], docs: list[Path] = DOCS) -> dict[Path, str]:
    """Each document whose generated blocks differ from what the results give, with its new text."""
    cache: dict[str, str] = {}
    changed = {}
    for path in docs:
        text = path.read_text(encoding="utf-8")
        new = regenerate(text, machines, cache)
        if new != text:
            changed[path] = new
    return changed


def stale_screenshots(machines: list[MachineResults], recorded: Path = SHOT_FIGURES) -> str | None:
    """Where the figures the screenshots show (as recorded) differ from the report's now: the first difference."""
    now = tables.screenshot_figures(machines)
    before = json.loads(recorded.read_text(encoding="utf-8")) if recorded.exists() else {}
    if before == now:
        return None
    old = {w["workload"]: w for w in before.get("workloads", [])}
    for new in now["workloads"]:
        was = old.get(new["workload"], {})
        for field, value in new.items():
            if was.get(field) != value:
                return f"{new['workload']} {field}: {was.get(field)!r} shown, the report gives {value!r}"
    return "the recorded workloads differ from the report's"


def take_screenshots(machines: list[MachineResults], recorded: Path = SHOT_FIGURES) -> None:
    """The four PNGs of tests/screenshots.py into docs/, and the figures they show beside them."""
    sys.path.insert(0, str(ROOT / "tests"))
    import screenshots

    screenshots.main(recorded.parent)
    text = json.dumps(tables.screenshot_figures(machines), indent=1, ensure_ascii=False) + "\n"
    recorded.write_text(text, encoding="utf-8")
    print(f"{os.path.relpath(recorded, ROOT)}: took the screenshots again")


def main(argv: list[str] | None = None, docs: list[Path] = DOCS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 naming the stale blocks; write nothing")
    parser.add_argument("--screenshots", action="store_true",
                        help="take the README's screenshots again (headless chromium, pdftoppm)")
    args = parser.parse_args(argv)
    machines = load_results_root(RESULTS)
    shots = stale_screenshots(machines) if docs == DOCS else None  # the screenshots belong to the real docs
    if args.check and shots:
        print(f"docs/report-*.png: stale screenshots: {shots} (run: python docs/generate.py)")
    elif not args.check and (shots or args.screenshots):
        take_screenshots(machines)
    changed = stale_blocks(machines, docs)
    for path, new in changed.items():
        old = path.read_text(encoding="utf-8")
        names = [m["name"] for m, n in zip(iter_blocks(old), iter_blocks(new), strict=True) if m[0] != n[0]]
        where = os.path.relpath(path, ROOT)
        if args.check:
            print(f"{where}: stale generated block(s): {', '.join(names)} (run: python docs/generate.py)")
        else:
            path.write_text(new, encoding="utf-8")
            print(f"{where}: regenerated {', '.join(names)}")
    return 1 if args.check and (changed or shots) else 0


if __name__ == "__main__":
    sys.exit(main())
