"""Points measured in NVIDIA DeepLearningExamples' own configuration, for the DLE check (planner/check/pairs.py).

The check predicts each published row from our measured point of the same workload and precision. Where DLE ran
another tensor layout than our workload (ResNet-50's TF32 and FP32 runs are NCHW, ours channels_last; every SSD300
run is NHWC, ours NCHW), another batch (BERT-large at 32, 16 and 8, ours at 64; GNMT at 128, ours at 1024) or
another attention (DLE's BERT writes it out, ours calls scaled_dot_product_attention: 36 % of our H200's TF32 step
was its fp32 memory-efficient kernels), the row can only be a proxy. `benchmarks/dle_points.py` (through
`benchmarks/gpu_dle_points.sh`, one GPU call) times
each row's configuration on our GPU, and profiles it per operation where the published GPU runs it in our precision
(an A100's TF32 and fp16 rows, a V100's fp16 rows; a V100's FP32 row runs our tf32 step at its fp32 rate on the
counts basis, performance.predict_point, and needs no profile). It writes standard documents into
`results/<machine>/diagnostics/dle-points/`: an environment, `workload-<name>.json` with one point per
configuration (its variant names the layout: `contiguous` = NCHW, `channels_last`) and
`roofline-<name>-<precision>[-<layout>].json` per profiled precision and layout. Nothing else reads that folder:
the machine's own documents, the plan and the other harnesses are unchanged.

What to measure is derived here from planner/specs/published_pairs.json (`wanted`) and written to
`benchmarks/dle_points_plan.json`, the list the GPU script reads with the standard library only:
`python -m planner.check.dle_points` writes it again (tests/test_dle_points.py checks it is current).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from gpuplan_schema.payloads import RooflinePayload, WorkloadPayload, WorkloadPoint
from gpuplan_schema.results import MachineResults, load_machine
from gpuplan_schema.schema import DocumentError
from planner.model.performance import run_precision
from planner.specs import match_gpu
from planner.specs.published_pairs import PairRow, PairTable, load_pairs

DLE_POINTS = Path("diagnostics") / "dle-points"
PLAN_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "dle_points_plan.json"
OURS = {"amp": "fp16", "tf32": "tf32", "fp32": "tf32"}  # DLE's precision → ours (pairs.OURS, the same mapping)
# The workloads the GPU script builds for a table's model (the file and function the machine's own documents came
# from), and the tiny build a CPU run tests the path with. A table whose model has none here is not measured.
WORKLOAD_SPECS = {
    "resnet50": ("resnet50", "resnet50"),
    "ssd300": ("examples/ssd300.py:build", "examples/ssd300.py:build_tiny"),
    # DLE's BERT writes its attention out (modeling.py BertSelfAttention: two batched products and a softmax), where
    # our workload calls scaled_dot_product_attention: its rows are timed with attention written out
    "bert-large-squad": ("examples/bert_squad.py:build_large_dle", "examples/bert_squad.py:build_tiny_dle"),
    "gnmt": ("examples/gnmt.py:build", "examples/gnmt.py:build_tiny"),
    # the new models (issue 38), held out of every choice of the model: their DLE rows are scored from these points
    "efficientnet-b0": ("examples/efficientnet_b0.py:build", "examples/efficientnet_b0.py:build_tiny"),
    "resnext101-32x4d": ("examples/resnext101.py:build", "examples/resnext101.py:build_tiny"),
}
LAYOUT_PARTS = {"channels_last": "channels_last", "contiguous": "nchw"}  # a variant's layout part → a row's layout


@dataclass(frozen=True)
class Wanted:
    """One configuration to time (and profile) on our GPU: the rows of a table it stands for."""

    model: str
    spec: str
    tiny: str
    precision: str
    batch: int
    layout: str       # channels_last, nchw or n/a (no convolution: the workload's own)
    profile: bool     # a per-op roofline too: some row's GPU runs our precision (not a stand-in)
    rows: tuple[str, ...]


def needs_profile(row: PairRow) -> bool:
    """Whether the row's GPU runs our precision itself: its prediction is split by a profile of that precision
    (a stand-in run, TF32 work as plain fp32 on a V100, takes the counts basis: performance.predict_point)."""
    gpu = match_gpu(row.gpu)
    ours = OURS[row.precision]
    return gpu is not None and run_precision(ours, gpu.flops_per_s) == ours


def wanted(tables: list[PairTable] | None = None) -> list[Wanted]:
    """Every configuration the DLE rows of our own models need, in the tables' order, one per (model, precision,
    batch, layout): the tables defined as our workload (twin `same`) and built by the GPU script."""
    out: dict[tuple[str, str, int, str], Wanted] = {}
    for table in load_pairs() if tables is None else tables:
        if table.twin != "same" or table.model not in WORKLOAD_SPECS:
            continue
        spec, tiny = WORKLOAD_SPECS[table.model]
        for row in table.rows:
            key = (table.model, OURS[row.precision], row.batch, row.layout)
            label = f"{table.id}: {row.gpu} {row.precision}"
            before = out.get(key)
            out[key] = Wanted(table.model, spec, tiny, key[1], row.batch, row.layout,
                              needs_profile(row) or (before is not None and before.profile),
                              (*(before.rows if before else ()), label))
    return list(out.values())


def plan_document(tables: list[PairTable] | None = None) -> dict:
    """The plan file's content: what benchmarks/dle_points.py measures, in order."""
    return {"kind": "dle_points_plan", "written_by": "python -m planner.check.dle_points",
            "configs": [asdict(w) | {"rows": list(w.rows)} for w in wanted(tables)]}


def layout_of(variant: str) -> str:
    """The tensor layout a point's variant names (n/a: none, the workload's own)."""
    parts = variant.split("+")
    return next((LAYOUT_PARTS[p] for p in parts if p in LAYOUT_PARTS), "n/a")


def plain_variant(variant: str) -> str:
    """The variant without its layout part: the run the planner's split takes a profile for (split.PLAIN_VARIANTS)."""
    return "+".join(p for p in variant.split("+") if p not in LAYOUT_PARTS) or "default"


@dataclass(frozen=True)
class DlePoints:
    """The dle-points documents measured on the source's own GPU type."""

    folder: Path
    workloads: dict[str, WorkloadPayload]
    rooflines: list[RooflinePayload]

    def point(self, model: str, precision: str, batch: int, layout: str) -> tuple[WorkloadPoint, WorkloadPayload,
                                                                                  list[RooflinePayload]] | None:
        """The point timed in this configuration, relabelled as a plain run (its layout is the configuration's), with
        its profiles of that layout only; None where it was not timed or did not run."""
        payload = self.workloads.get(model)
        if payload is None:
            return None
        found = next((p for p in payload.points if p.precision == precision and p.batch == batch and p.status == "ok"
                      and p.step_s and p.seq_len is None and layout_of(p.variant) == layout), None)
        if found is None:
            return None
        profiles = [r for r in self.rooflines if r.workload == model and layout_of(r.variant) == layout]
        return replace(found, variant=plain_variant(found.variant)), payload, profiles


def load_dle_points(source: MachineResults) -> tuple[DlePoints | None, str | None]:
    """The source's dle-points folder where it holds documents of the source's GPU type; else None and why not (None
    where there is no folder: nothing to say)."""
    folder = source.folder / DLE_POINTS
    if not folder.is_dir():
        return None, None
    try:
        measured = load_machine(folder)
    except DocumentError as e:
        return None, f"{folder}: not read ({e})"
    theirs, ours = match_gpu(measured.gpu_name or ""), match_gpu(source.gpu_name or "")
    if theirs is None or ours is None or theirs.name != ours.name:
        return None, f"{folder}: measured on {measured.gpu_name or 'an unknown GPU'}, not {source.gpu_name}: not used"
    rooflines = [d.payload for d in measured.documents.values() if d.kind == "roofline" and d.payload.status == "ok"]
    return DlePoints(folder, {w.workload: w for w in measured.workloads}, rooflines), None


def main(argv: list[str] | None = None) -> int:
    """Write the plan file again (after planner/specs/published_pairs.json or WORKLOAD_SPECS changed)."""
    path = Path(argv[0]) if argv else PLAN_FILE
    path.write_text(json.dumps(plan_document(), indent=1) + "\n", encoding="utf-8")
    print(f"{path}: {len(plan_document()['configs'])} configurations")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
