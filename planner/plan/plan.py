"""The plan: one machine's results projected onto target GPUs and instances, with recommendations and,
for a job, the instance ranking. `build_plan` returns typed values; `plan_to_json` is the contract that
the README documents (`gpuplan plan RESULTS_DIR [--target NAME …] [--job SPEC] [--json]`).

A user workload file is never executed here: the plan reads documents only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from gpuplan_schema.results import MachineResults
from planner.check.crossarch import CrossCheck
from planner.plan.advice import MAIN_PRECISION
from planner.plan.changes import CHANGES_SHOWN, Change, changes_of, top_changes
from planner.plan.default_jobs import JobRanking, rank_default_jobs
from planner.plan.jobs import JobRanker, build_feed, build_predictor
from planner.plan.measured import Measured
from planner.plan.source import PlanError, load_source, plannable, prepare_source
from planner.plan.targets import Capacity, Target, build_source_target, build_target, resolve_target
from planner.rank.jobs import Job, parse_job
from planner.rank.nodes import NodeRow, rank_nodes
from planner.rank.ranking import ASSUMPTIONS, OK, RankedInstance
from planner.specs import GpuSpec, load_gpu_catalog
from planner.trace.model_file import load_learned
from planner.trace.summary import TraceSummary, trace_summaries

__all__ = ["DEFAULT_JOB", "DEFAULT_TARGETS", "MAIN_PRECISION", "PLAN_SCHEMA_VERSION", "Capacity", "JobRanker", "Plan",
           "PlanError", "Target", "build_plan", "build_predictor", "load_source", "plan_to_json", "plannable",
           "prepare_source", "report_plan"]

PLAN_SCHEMA_VERSION = 1
DEFAULT_TARGETS = ("A100 80GB SXM", "H100 SXM", "H200 SXM", "L40S", "B200")
DEFAULT_JOB = "resnet50 bf16 epochs=100 dataset=imagenet"


@dataclass(frozen=True)
class Plan:
    machine: str
    source_gpu: GpuSpec
    targets: list[Target]
    job: Job | None
    ranking: list[RankedInstance]
    crosscheck: CrossCheck | None = None
    assumptions: list[str] = field(default_factory=list)
    node_ranking: list[NodeRow] = field(default_factory=list)   # with a job: multi-node instances by node count
    jobs: dict[str, JobRanking] = field(default_factory=dict)   # workload → its default job (or the one asked) ranked
    job_asked: bool = False     # `job` is the user's (--job), not the default job
    ranker: JobRanker | None = field(default=None, repr=False, compare=False)   # ranks any other job of the source
    machines_used: tuple[str, ...] = ()   # the machines the plan read: the one given first, then those named with it
    traced: bool = False        # the source is a trace (planner/trace): every figure predicted, none measured
    trace: list[TraceSummary] = field(default_factory=list)   # traced: per workload, the dominant ops, unknown share

    @cached_property
    def unchecked_notes(self) -> dict[str, str]:
        """GPU name → how the checked GPUs of its architecture fared (CrossCheck.kin_words), for every catalog GPU
        the † marks that has such kin: the plan text, its JSON, the report and the job chooser print it by the †."""
        if self.crosscheck is None:
            return {}
        return {g.name: words for g in load_gpu_catalog() if (words := self.crosscheck.kin_words(g))}

    def unchecked_notes_for(self, gpus: Iterable[str]) -> list[str]:
        """The notes of these GPUs that have one, each once, in the order given (an output's † rows or targets)."""
        return [self.unchecked_notes[g] for g in dict.fromkeys(gpus) if g in self.unchecked_notes]

    def row_notes(self, r: RankedInstance) -> tuple[str, str]:
        """The notes a ranking row carries, (†, checked): a † row its kin's note (unchecked_notes); a ★ row on a GPU
        published rows check how those rows lay from the prediction (checked_notes: the cheapest pick on an L40S
        says its one row was predicted 14 % too fast); any other row, and the measured GPU (no rows), none. Every
        output that shows a ranking reads them here."""
        unchecked = self.unchecked_notes.get(r.gpu, "") if r.unchecked else ""
        checked = self.checked_notes.get(r.gpu, "") if r.pareto and not r.unchecked and r.status == OK else ""
        return unchecked, checked

    def ranking_notes(self, rows: Iterable[RankedInstance]) -> tuple[list[str], list[str]]:
        """The † notes and the checked notes of these rows (row_notes), each note once, in the order given."""
        pairs = [self.row_notes(r) for r in rows]
        unchecked, checked = ([n for n in dict.fromkeys(p[side] for p in pairs) if n] for side in (0, 1))
        return unchecked, checked

    @cached_property
    def changes(self) -> list[Change]:
        """The three recommended settings worth most over the measured workloads, each with its measured gain
        (planner/plan/changes.py): the report's decision page shows them, the JSON lists them."""
        source = self.targets[0]
        return top_changes(changes_of(source.recommendations), CHANGES_SHOWN, len(source.settings) or None)

    @cached_property
    def checked_notes(self) -> dict[str, str]:
        """GPU name → how its own published rows lay from the prediction (CrossCheck.own_words), for every GPU the
        published check covers: printed beside each predicted target."""
        if self.crosscheck is None:
            return {}
        return {g.name: words for g in load_gpu_catalog() if (words := self.crosscheck.own_words(g))}


def report_plan(machine: MachineResults, job: Job | None = None,
                measured: Sequence[MachineResults] | Measured = ()) -> Plan | None:
    """The plan a report shows (default targets, every workload's default job ranked, `job` in its workload's
    place), or None for a machine the planner cannot use (no GPU in the catalog, no ceilings, no workloads): its
    report says so in each planner part."""
    if not plannable(machine):
        return None
    return build_plan(machine, None, job, measured, rank_defaults=True)


def build_plan(machine: MachineResults, targets: list[str] | None = None, job: Job | None = None,
               measured: Sequence[MachineResults] | Measured = (), *, rank_defaults: bool = False) -> Plan:
    """The plan of one measured machine. `measured`: the machines (loaded once, the source among them or
    not) whose measurements the plan may cite: multi-GPU efficiencies, and the accuracy residuals that set
    the prediction bands. `job` is ranked; without one, `rank_defaults` ranks each workload's default job at its
    recommended precision and makes resnet50's (DEFAULT_JOB's workload; without it, the first workload's) the plan's
    job, as a report shows it. A machine predicted from a trace (planner/trace/machine.py) is planned the same way,
    with the trace's bands and every answer marked as from a trace."""
    context = Measured.of(machine, measured)
    source, check = prepare_source(machine, context)
    names = targets or [source.spec.name, *(t for t in DEFAULT_TARGETS if t != source.spec.name)]
    built = [build_source_target(source, source.spec.name, 1)]
    for name in dict.fromkeys(names):
        label, gpu, count = resolve_target(name)
        if gpu.name == source.spec.name and count == 1:
            continue  # the measured GPU itself: already first
        built.append(build_source_target(source, label, count) if gpu.name == source.spec.name
                     else build_target(source, label, gpu, count, built[0]))
    used = context.names
    traced = {"traced": source.traced, "machines_used": used,
              "trace": trace_summaries(machine, load_learned().model) if source.traced else []}
    if job is None and not rank_defaults:
        return Plan(machine.machine, source.spec, built, None, [], check, **traced)
    ranker = JobRanker(source, context.scaling, tuple(built))
    precisions = {w: s.precision for w, s in built[0].settings.items()}
    jobs = rank_default_jobs(machine.workloads, ranker.rank, job, precisions) if rank_defaults else {}
    asked = job is not None
    if job is None:
        # resnet50's default job; a folder without it (a user's model, a trace) its first workload's
        default = parse_job(DEFAULT_JOB).workload
        job = jobs[default].job if default in jobs else next((r.job for r in jobs.values()), None)
    if job is None:
        return Plan(machine.machine, source.spec, built, None, [], check, jobs=jobs, ranker=ranker, **traced)
    predict = build_predictor(source, job, ranker.answers)
    ranking = jobs[job.workload].rows if job.workload in jobs else ranker.rank(job, predict)
    nodes = rank_nodes(job, predict, context.node, context.socket, ranker.scaling, build_feed(source, job))
    return Plan(machine.machine, source.spec, built, job, ranking, check, ASSUMPTIONS, nodes, jobs, asked, ranker,
                **traced)


def plan_to_json(plan: Plan) -> dict:
    from planner.plan.answer import answers_of_target  # answer reads the plan: imported here, not at the top
    from planner.plan.precisions import by_precision

    return {
        "schema_version": PLAN_SCHEMA_VERSION,
        "source": {"machine": plan.machine, "gpu": plan.source_gpu.name,
                   "predicted_from": "trace" if plan.traced else "measurements"},
        "machines_used": list(plan.machines_used),
        "targets": [{"name": t.name, "gpu": t.gpu.name, "gpu_count": t.gpu_count,
                     "measured": t.is_source and not plan.traced, "from_trace": plan.traced,
                     "predictions": [p.to_dict() for p in t.predictions],
                     "by_precision": [b.to_dict() for b in by_precision(t.predictions)],
                     "capacity": [c.to_dict() for c in t.capacity],
                     "recommendations": [r.to_dict() for r in t.recommendations],
                     "presets": t.presets,
                     "preset_values": {w: [p.to_dict() for p in ps] for w, ps in t.preset_values.items()},
                     "answers": [a.to_dict() for a in answers_of_target(plan, t)],
                     "validated": t.validated} for t in plan.targets],
        "job": plan.job.to_dict() if plan.job else None,
        "ranking": [r.to_dict() for r in plan.ranking],
        "job_asked": plan.job_asked,
        "jobs": {w: {"job": j.job.to_dict(), "asked": j.asked, "ranking": [r.to_dict() for r in j.rows]}
                 for w, j in plan.jobs.items()},
        "assumptions": plan.assumptions,
        "node_ranking": [r.to_dict() for r in plan.node_ranking],
        "crosscheck": plan.crosscheck.to_dict() if plan.crosscheck else None,
        "unchecked_notes": plan.unchecked_notes,
        "checked_notes": plan.checked_notes,
        "changes": [c.to_dict() for c in plan.changes],
        "trace": [t.to_dict() for t in plan.trace],
    }
