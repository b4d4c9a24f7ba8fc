"""Held-out model families against Lambda's published tables, across architectures (issues 39 and 41). Two modes:

1. Frozen (`--frozen PLAN_JSON`): a trace-only plan's answers (`gpuplan plan TRACE_DIR --json --target ...` for every
   catalog GPU, written before any GPU ran the models) against every row of the tables whose model the plan holds:
   the predicted rate at our point nearest the row's batch (our precision for the table's: tf32 for Lambda's "fp32"
   where the GPU has it, else fp32), absolute (predicted / published − 1, and whether the published figure lies
   inside the plan's band), and as the ratio to the table's H100 SXM row (predicted / published − 1).
2. Measured (`MEASURED_DIR`): a machine folder that collected the held-out models (an H200's, say), each published GPU
   predicted from it and held as a ratio to the H100 SXM against the range its two bands give it, the bands built from
   the committed results without the family (planner/check/lambda_heldout.py): coverage and median half-width.

    F=results/predictions-before-measurement/lambdaheld-2026-11-29                 # ncf, waveglow
    PYTHONPATH=$PWD python benchmarks/lambda_heldout.py --frozen $F/plan-all-gpus.json        # 1
    M=results/h200/diagnostics/lambdaheld-2026-11-29/runs/lambda-heldout
    PYTHONPATH=$PWD python benchmarks/lambda_heldout.py $M                                   # 2
    F=results/predictions-before-measurement/lambdaheld2-2026-11-29                # tacotron2, transformer-xl-large

Rates are compared in the table's unit: WaveGlow's published figure is audio samples a second, our workload's unit a
segment of 8,000 of them (examples/waveglow.py); Tacotron 2's is mel frames, ours an utterance (566 frames of its own
in the mean: examples/tacotron2.py); Transformer-XL large's target tokens, ours a segment of 256; NCF's is samples a
second in both. DLE's NCF counts the samples of the partial batch it drops (examples/ncf.py), so its published rates
lie 0.8-3.4 % above the rate it trained at.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpuplan_schema.results import load_machine, load_results_root  # noqa: E402
from planner.check.bands import band_table_for  # noqa: E402
from planner.check.crossarch import PRECISIONS_OF  # noqa: E402
from planner.check.lambda_heldout import HELD_OUT_FAMILIES, REFERENCE, held_out_lambda_ratios, render  # noqa: E402
from planner.specs.published import PublishedTable, load_published  # noqa: E402

# published units in one of our workload's: audio samples in a segment (examples/waveglow.py), an utterance's own mel
# frames in the mean of Lambda's logs (examples/tacotron2.py FRAMES_PER_UTTERANCE), target tokens in a segment
UNIT_SCALE = {"waveglow": 8000, "tacotron2": 566, "transformer-xl-large": 256}


def _prediction(target: dict, model: str, precisions: tuple[str, ...], batch: int | None) -> dict | None:
    """The plan's default-variant prediction of `model` in the first of `precisions` it has on this GPU, at the batch
    nearest `batch` (the larger of two as near)."""
    for precision in precisions:
        found = [p for p in target["predictions"] if p["workload"] == model and p["precision"] == precision
                 and p["variant"] == "default" and p.get("seq_len") is None and p.get("throughput_per_s")]
        if found:
            return min(found, key=lambda p: (abs(p["batch"] - (batch or p["batch"])), -p["batch"]))
    return None


def frozen_rows(plan: dict, tables: list[PublishedTable]) -> list[dict]:
    """Each row of each table whose model the plan predicted, with the plan's answer on that GPU."""
    targets = {t["gpu"]: t for t in plan["targets"]}
    models = {p["workload"] for t in plan["targets"] for p in t["predictions"]}
    out = []
    for table in tables:
        ref = table.row(REFERENCE)
        if table.model not in models or ref is None or table.precision not in PRECISIONS_OF:
            continue
        # Lambda's fp32 ran TF32 where the GPU has it, plain fp32 where not (crossarch's stand-in)
        precisions = PRECISIONS_OF[table.precision] + (("fp32",) if table.precision == "fp32" else ())
        scale = UNIT_SCALE.get(table.model, 1)
        ref_pred = _prediction(targets[REFERENCE], table.model, precisions, ref.batch) if REFERENCE in targets else None
        for row in table.rows:
            p = _prediction(targets[row.gpu], table.model, precisions, row.batch) if row.gpu in targets else None
            if p is None:
                continue
            rate, low, high = (p[k] * scale for k in ("throughput_per_s", "throughput_low", "throughput_high"))
            ratio = None
            if ref_pred and row is not ref and row.same_stack:
                ratio = (p["throughput_per_s"] / ref_pred["throughput_per_s"]) / (row.throughput_per_s
                                                                                  / ref.throughput_per_s) - 1
            out.append({"table": table.id, "gpu": row.gpu, "point": f"{p['precision']}, {p['batch']}",
                        "published": row.throughput_per_s, "published_batch": row.batch, "predicted": rate,
                        "low": low, "high": high, "error": rate / row.throughput_per_s - 1,
                        "inside": low <= row.throughput_per_s <= high, "same_stack": row.same_stack,
                        "ratio_error": ratio})
    return out


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1%}" if values else "n/a"


def render_frozen(rows: list[dict]) -> str:
    lines = []
    for table in dict.fromkeys(r["table"] for r in rows):
        these = [r for r in rows if r["table"] == table]
        absolute = [abs(r["error"]) for r in these]
        ratios = [abs(r["ratio_error"]) for r in these if r["ratio_error"] is not None]
        lines += [f"{table}: absolute median |error| {_median(absolute)} ({sum(r['inside'] for r in these)} of "
                  f"{len(these)} inside the plan's band); ratio to the {REFERENCE} median |error| {_median(ratios)} "
                  f"over {len(ratios)} same-stack rows, largest {max(ratios, default=0):.1%}", "",
                  "| GPU | our point | published (batch) | predicted (band) | error | ratio error |",
                  "|---|---|---|---|---|---|"]
        for r in these:
            ratio = "(H100 row)" if r["gpu"] == REFERENCE else ("other stack" if r["ratio_error"] is None
                                                              else f"{r['ratio_error']:+.1%}")
            lines.append(f"| {r['gpu']} | {r['point']} | {r['published']:,.0f} ({r['published_batch']:,}) | "
                         f"{r['predicted']:,.0f} ({r['low']:,.0f}-{r['high']:,.0f}) | {r['error']:+.1%} | {ratio} |")
        lines.append("")
    ratios = [abs(r["ratio_error"]) for r in rows if r["ratio_error"] is not None]
    lines.append(f"All held-out rows: absolute median |error| {_median([abs(r['error']) for r in rows])}, "
                 f"{sum(r['inside'] for r in rows)} of {len(rows)} inside the plan's band; ratio median |error| "
                 f"{_median(ratios)} over {len(ratios)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("measured", nargs="?", type=Path, help="a machine folder that collected the held-out models")
    parser.add_argument("--frozen", type=Path, help="a trace-only plan's JSON (every catalog GPU) to check instead")
    parser.add_argument("--results", type=Path, default=Path("results"), help="the committed results the bands are "
                        "built from (default: results/)")
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args(argv)
    if (args.measured is None) == (args.frozen is None):
        parser.error("give a measured machine folder or --frozen PLAN_JSON")
    held_out = [t for t in load_published() if t.model in HELD_OUT_FAMILIES]
    if args.frozen:
        rows = frozen_rows(json.loads(args.frozen.read_text()), held_out)
        print(render_frozen(rows), end="")
    else:
        try:
            machine = load_machine(args.measured)
        except (OSError, ValueError) as e:
            print(f"lambda_heldout.py: {args.measured}: not a machine's results folder ({e})", file=sys.stderr)
            return 2
        ratios = held_out_lambda_ratios(band_table_for(load_results_root(args.results)), machine, held_out)
        print(render(ratios, machine.gpu_name or machine.machine), end="")
        rows = [r.__dict__ | {"error": r.error} for r in ratios]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
