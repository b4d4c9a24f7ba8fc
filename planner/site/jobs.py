"""The site's job chooser: pick a workload (reference or a measured user workload), a precision and an amount
of work; see every catalog instance ranked by predicted time and cost.

Everything is computed here, at build time, and embedded in the page as JSON; the page's small script only
picks a table and scales it. Per plannable machine × workload × precision the ranking is computed at AMOUNTS
× the workload's default job (planner/plan/default_jobs.py); the script takes the table whose amount is
nearest the one asked (on a log scale) and scales its hours and dollars linearly with the amount (time is
samples ÷ throughput, so the scaling is exact; the page says so). A machine the planner cannot use (no
ceilings, only collectives) has no tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuplan_schema.results import MachineResults
from planner.plan.default_jobs import DEFAULT_AMOUNT, day_samples, default_job_spec
from planner.plan.plan import JobRanker, Plan
from planner.rank.jobs import DATASETS, PRECISIONS, TOKENS_PER_SAMPLE, parse_job
from planner.rank.ranking import OK, Predictor, RankedInstance, stand_in_words
from planner.render.words import feed_words, pick_settings

AMOUNTS = (0.1, 1.0, 10.0)   # × the default job's samples: the tables computed at build time
JOBS_NAME = "jobs.html"


@dataclass(frozen=True)
class ChooserData:
    """What the page embeds: `instances` once (name, provider, GPUs, $/h), then compact rankings."""

    instances: list[list]
    workloads: list[dict]     # one per machine × workload: names, unit, precisions, default amount
    tables: dict[str, dict]   # "machine|workload|precision|index" → {samples, rows}
    datasets: dict[str, int]
    # machine → GPU → the note its plan gives (Plan.unchecked_notes, Plan.checked_notes): each machine's tables are
    # ranked from its own measurements, so a note is the check of the predictions from that machine, and its GPU
    # (the measured one there) has none
    unchecked_notes: dict[str, dict[str, str]] = field(default_factory=dict)
    checked_notes: dict[str, dict[str, str]] = field(default_factory=dict)
    stand_in_words: dict[str, str] = field(default_factory=dict)   # job precision → the ‡ footnote of its rows

    @property
    def note_machines(self) -> list[str]:
        """The machines whose tables carry a note, in the order their tables come."""
        return [m for m in dict.fromkeys(w["machine"] for w in self.workloads)
                if m in self.unchecked_notes or m in self.checked_notes]

    def to_json(self) -> dict:
        return {"instances": self.instances, "workloads": self.workloads, "tables": self.tables,
                "datasets": self.datasets, "stand_in_words": self.stand_in_words}


def default_amount(workload: str, samples: float) -> dict:
    """The amount the chooser starts at, in the unit a person would state it in."""
    if workload in TOKENS_PER_SAMPLE and DEFAULT_AMOUNT.get(workload, "").startswith("tokens="):
        return {"kind": "tokens", "value": samples * TOKENS_PER_SAMPLE[workload]}
    if DEFAULT_AMOUNT.get(workload, "").startswith("epochs="):
        spec = parse_job(default_job_spec(workload))
        return {"kind": "epochs", "value": spec.samples / DATASETS["imagenet"], "dataset": "imagenet"}
    return {"kind": "samples", "value": samples}


def build_chooser(planned: Sequence[tuple[MachineResults, Plan | None]]) -> ChooserData:
    """The chooser's tables, ranked by each machine's plan (its ranker: the plan's bands, scaling and feed)."""
    instances: dict[str, int] = {}
    rows_meta: list[list] = []
    shown: dict[str, set[str]] = {}  # machine → the GPUs its tables can show
    stand_ins: dict[str, str] = {}  # job precision → the ‡ footnote, where a row runs its stand-in
    workloads, tables = [], {}
    for machine, plan in planned:
        ranker = plan.ranker if plan else None
        if ranker is None:
            continue
        for payload in machine.workloads:
            base = parse_job(default_job_spec(payload.workload, "bf16", day_samples(payload))).samples
            precisions = []
            for precision in PRECISIONS:
                if not any(p.precision == precision and p.status == "ok" for p in payload.points):
                    continue
                gpus = shown.setdefault(machine.machine, set())
                predict = ranker.predictor(parse_job(f"{payload.workload} {precision} samples={base:.6g}"))
                computed = [_table(ranker, predict, payload.workload, precision, base * k, instances, rows_meta,
                                   gpus, stand_ins) for k in AMOUNTS]
                if not any(t["rows"] and t["rows"][0][1] == 1 for t in computed):
                    continue  # no instance runs it at this precision
                precisions.append(precision)
                for i, table in enumerate(computed):
                    tables[f"{machine.machine}|{payload.workload}|{precision}|{i}"] = table
            if precisions:
                workloads.append({"machine": machine.machine, "gpu": machine.gpu_name, "workload": payload.workload,
                                  "traced": bool(plan and plan.traced),   # predicted from a trace: no GPU measured
                                  "unit": payload.unit, "precisions": precisions, "amounts": len(AMOUNTS),
                                  "tokens_per_sample": TOKENS_PER_SAMPLE.get(payload.workload),
                                  "default": default_amount(payload.workload, base)})
    plans = {machine.machine: plan for machine, plan in planned if plan and machine.machine in shown}
    unchecked = {m: _notes(plan.unchecked_notes, shown[m]) for m, plan in plans.items()}
    checked = {m: _notes(plan.checked_notes, shown[m]) for m, plan in plans.items()}
    return ChooserData(rows_meta, workloads, tables, dict(DATASETS), {m: n for m, n in unchecked.items() if n},
                       {m: n for m, n in checked.items() if n}, stand_ins)


def _notes(notes: dict[str, str], gpus: set[str]) -> dict[str, str]:
    """The notes of the GPUs a machine's tables can show, by GPU name."""
    return {g: words for g, words in sorted(notes.items()) if g in gpus}


def _table(ranker: JobRanker, predict: Predictor, workload: str, precision: str, samples: float,
           index: dict[str, int], meta: list[list], gpus: set[str], stand_ins: dict[str, str]) -> dict:
    job = parse_job(f"{workload} {precision} samples={samples:.6g}")
    ranked = ranker.rank(job, predict)
    gpus.update(r.gpu for r in ranked)
    stand_ins.update((r.stand_in_for, stand_in_words(r.stand_in_for, r.precision or "")) for r in ranked
                     if r.status == OK and r.stand_in_for)
    return {"samples": job.samples, "rows": [_row(r, index, meta) for r in ranked]}


def _row(r: RankedInstance, index: dict[str, int], meta: list[list]) -> list:
    """[instance, ok (1/0), samples/s, hours, cost, pareto, hours low, hours high, unvalidated, reason if not ok,
    the precision run in the job's place where the GPU lacks it ('fp16' for bf16 on a V100; '' otherwise), what the
    plan predicts the instance's GPU runs ('bf16 512 compile'), one GPU's samples/s, its vCPUs' loader feed]."""
    key = f"{r.provider}/{r.instance}"
    if key not in index:
        index[key] = len(meta)
        meta.append([r.instance, r.provider, f"{r.gpu_count} × {r.gpu}", r.price_usd_per_hour])
    if r.status != OK:
        return [index[key], 0, None, None, None, 0, None, None, 0, r.status.replace("_", " "), "", "", None, ""]
    return [index[key], 1, _round(r.samples_per_s), _round(r.hours), _round(r.cost_usd), int(r.pareto),
            _round(r.hours_low), _round(r.hours_high), int(r.unchecked), "",
            (r.precision or "") if r.stand_in_for else "", pick_settings(r), _round(r.per_gpu_samples_per_s),
            "" if (feed := feed_words(r)) == "—" else feed]


def _round(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.5g}")
