"""Do the compiled bands hold on timed truths? Every torch.compile configuration timed again on a lent GPU
(benchmarks/recommended_check.py's runs, results/*/diagnostics/recommended-check-*/recommended-*.json) predicted from
the other measured GPU type's results, with the band a compiled prediction gets (planner/check/bands.py
`BandTable.compiled_band`) and, beside it, the eager band it carried before issue 39. The band is built without the
workload's own residuals (held out: the timed configuration's twin is among the collection's own rows), so each row
reads as a workload the bands have not seen. Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/compiled_bands.py [RESULTS_ROOT]

docs/accuracy.md quotes the table (generated block `compiled-bands`).
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from gpuplan_schema.results import MachineResults, load_results_root
from planner.check.bands import BandTable, band_table_for
from planner.model.performance import iter_predictions, measured_rates, target_rates
from planner.model.split import COMPILED, machine_rooflines
from planner.specs import match_gpu

CHECKS = "diagnostics/recommended-check-*/recommended-*.json"


@dataclass(frozen=True)
class TimedCompiled:
    source: str          # the machine predicting
    gpu: str             # the GPU type timed
    workload: str
    precision: str
    batch: int
    predicted: float
    timed: float         # the median of the lend's passes (several lends: the median of theirs)
    compiled_band: tuple[float, float]
    eager_band: tuple[float, float]

    @property
    def error(self) -> float:
        return self.predicted / self.timed - 1

    def inside(self, band: tuple[float, float]) -> bool:
        low, high = band
        return self.predicted * (1 - low) - 1e-9 <= self.timed <= self.predicted * (1 + high) + 1e-9


def timed_compiled(machines: list[MachineResults]) -> dict[tuple[str, str, str, int], list[float]]:
    """(GPU, workload, precision, batch) → the figure each lend timed for a compiled configuration."""
    out: dict[tuple[str, str, str, int], list[float]] = {}
    for m in machines:
        for path in sorted(m.folder.glob(CHECKS)):
            for c in json.loads(path.read_text())["configurations"]:
                ok = [t["throughput_per_s"] for t in c["timed"] if t.get("status") == "ok"]
                if c["compile"] and ok:
                    out.setdefault((c["gpu"], c["workload"], c["precision"], c["batch"]), []).append(
                        statistics.median(ok))
    return out


def evaluate(machines: list[MachineResults]) -> list[TimedCompiled]:
    measured = [m for m in machines if m.ceilings and m.workloads and m.gpu_name and match_gpu(m.gpu_name)]
    table = band_table_for(measured)
    rows = []
    for (gpu_name, workload, precision, batch), figures in sorted(timed_compiled(machines).items()):
        for source in measured:
            spec, gpu = match_gpu(source.gpu_name or ""), match_gpu(gpu_name)
            if spec is None or gpu is None or spec.name == gpu.name:
                continue
            row = _predict(source, spec, gpu, workload, precision, batch, table.without(workload))
            if row:
                rows.append(TimedCompiled(source.machine, gpu.name, workload, precision, batch, row[0],
                                          statistics.median(figures), row[1], row[2]))
    return rows


def _predict(source: MachineResults, spec, gpu, workload: str, precision: str, batch: int,  # noqa: ANN001
             table: BandTable) -> tuple[float, tuple[float, float], tuple[float, float]] | None:
    payload = next((w for w in source.workloads if w.workload == workload), None)
    if payload is None:
        return None
    rates = measured_rates(source.ceilings)  # type: ignore[arg-type]
    same = (gpu.compute_capability or "")[:1] == (spec.compute_capability or "")[:1]
    prediction = next((p for p in iter_predictions(payload, rates, target_rates(rates, spec, gpu), same,
                                                    machine_rooflines(source), gpu)
                       if p.variant == COMPILED and p.precision == precision and p.batch == batch
                       and p.seq_len is None), None)
    if prediction is None:
        return None
    compiled = table.band(same, prediction.host_there, compiled=True)
    eager = table.band(same, prediction.host_there)
    return prediction.throughput_per_s, (compiled.low, compiled.high), (eager.low, eager.high)


def markdown(rows: list[TimedCompiled]) -> str:
    if not rows:
        return "No compiled configuration timed again on another lend.\n"
    inside = sum(r.inside(r.compiled_band) for r in rows)
    before = sum(r.inside(r.eager_band) for r in rows)
    half = statistics.median(max(r.compiled_band) for r in rows)
    lines = [f"Compiled configurations timed again on a lent GPU, each predicted from the other GPU type: "
             f"{inside} of {len(rows)} inside the compiled band ({inside / len(rows):.0%}; median half-width "
             f"±{half:.0%}), {before} of {len(rows)} inside the eager band they carried before "
             f"({before / len(rows):.0%}). Each band built without its workload's own residuals.", "",
             "| from | GPU timed | workload | precision, batch | predicted | timed | error | compiled band | in | "
             "eager band | in |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        bands = " | ".join(f"−{b[0]:.0%}/+{b[1]:.0%} | {'yes' if r.inside(b) else 'no'}"
                           for b in (r.compiled_band, r.eager_band))
        lines.append(f"| {r.source} | {r.gpu} | {r.workload} | {r.precision}, {r.batch} | {r.predicted:.4g} | "
                     f"{r.timed:.4g} | {r.error:+.1%} | {bands} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("results")
    print(markdown(evaluate(load_results_root(root))), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
