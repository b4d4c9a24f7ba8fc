"""`gpuplan`: the command line. It only parses arguments and calls the stage functions.

Every bad-input error is turned into one line, `gpuplan: error: <file>: <field>: <problem>`,
with exit status 2, in one place (`main`); nothing reaches the user as a traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpuplan_schema.schema import DocumentError, load_document, write_text_atomic

PROG = "gpuplan"


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("gpuplan")
    except PackageNotFoundError:  # a source tree not installed (python -m planner.cli)
        return "unknown (not installed)"
DEFAULT_JOB_HELP = "'resnet50 bf16 epochs=100 dataset=imagenet'"  # planner.plan.plan.DEFAULT_JOB, a test checks
EXIT_OK, EXIT_BAD_INPUT = 0, 2


class UsageError(Exception):
    """Bad input that is not a document: a missing dependency, an unusable path."""


PANGO_HINT = ("; the PDF needs Pango from the system (Debian: apt-get install libpango-1.0-0 libpangoft2-1.0-0), "
              "which pip cannot install; gpuplan plan and gpuplan site --no-pdf need none")


def format_error(error: BaseException) -> str:
    if isinstance(error, OSError) and error.filename is not None:
        return f"{PROG}: error: {error.filename}: {error.strerror or error}"
    if isinstance(error, OSError) and "cannot load library 'libpango" in str(error):  # WeasyPrint's, on two lines
        return f"{PROG}: error: {' '.join(str(error).split())}{PANGO_HINT}"
    return f"{PROG}: error: {error}"


# ── collect ─────────────────────────────────────────────────────────────────────────────────

COLLECT_HELP = "measure this machine (needs torch; a GPU if there is one) into runs/MACHINE/"


def cmd_collect(args: argparse.Namespace) -> int:
    """`gpuplan collect ARGS` is `python -m collectors ARGS` in a process of its own: collection is the
    stage that runs on the GPU host with torch, and the planner never imports it. The child gets its own
    process group, so a terminal's Ctrl-C reaches it once, forwarded from here (its first Ctrl-C stops
    within seconds, keeping every finished point, a second at once); its exit status is this command's."""
    return _run_collector("collectors", "collect", args.collect_args)


TRACE_HELP = ("trace a model on the meta device, no GPU needed (FILE.py:build or a built-in workload), into "
              "RESULTS/MACHINE/; `gpuplan plan` then predicts it on every catalog GPU")


def cmd_trace(args: argparse.Namespace) -> int:
    """`gpuplan trace ARGS` is `python -m collectors.trace ARGS`, in a process of its own as collect is (it
    imports torch and the user's file; the planner imports neither)."""
    return _run_collector("collectors.trace", "trace", args.trace_args)


def _run_collector(module: str, command: str, argv: list[str]) -> int:
    if not has_torch():
        where = "the machine it measures" if command == "collect" else "the machine that traces (a CPU will do)"
        raise UsageError(f"gpuplan {command} needs PyTorch on {where} (pip install torch, or a PyTorch "
                         "GPU image); gpuplan plan, report and site need none")
    env = dict(os.environ, GPUPLAN_PROG=f"{PROG} {command}")
    child = subprocess.Popen([sys.executable, "-m", module, *argv], env=env,
                             preexec_fn=os.setpgrp)  # noqa: PLW1509 - only setpgrp, no locks taken
    previous = signal.signal(signal.SIGINT, lambda signum, frame: child.send_signal(signal.SIGINT))
    try:
        return child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


def has_torch() -> bool:
    """Whether torch can be imported, without importing it (seconds, and gigabytes of CUDA libraries)."""
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a broken install, or torch blocked in sys.modules
        return False


# ── validate ────────────────────────────────────────────────────────────────────────────────

# A machine folder's `diagnostics/` holds benchmark outputs that are not result documents (e.g.
# benchmarks/host_noise.py's): the loaders read only the folder's own *.json, and validate skips it.
DIAGNOSTICS = "diagnostics"


def iter_validate_targets(path: Path) -> list[Path]:
    """The documents a path names: the file itself, or every *.json under a folder (not `diagnostics/`)."""
    if not path.is_dir():
        return [path]
    found = sorted(p for p in path.rglob("*.json")
                   if not any(part.startswith(".") or part == DIAGNOSTICS for part in p.relative_to(path).parts))
    if not found:
        raise DocumentError(path, "", "holds no result documents (*.json)")
    return found


def cmd_validate(args: argparse.Namespace) -> int:
    bad = 0
    for target in args.paths:
        try:
            paths = iter_validate_targets(Path(target))
        except DocumentError as e:
            print(format_error(e), file=sys.stderr)
            bad += 1
            continue
        for path in paths:
            try:
                doc = load_document(path)
            except DocumentError as e:
                print(format_error(e), file=sys.stderr)
                bad += 1
            else:
                print(f"ok {path} ({doc.kind})")
    return EXIT_BAD_INPUT if bad else EXIT_OK


# ── export ──────────────────────────────────────────────────────────────────────────────────

def cmd_export(args: argparse.Namespace) -> int:
    from planner.export.frame import ParquetUnavailable, load_frame, to_csv, to_json, write_parquet

    frame = load_frame([args.results_dir])
    if args.format == "parquet":
        if args.output is None:
            raise UsageError("--parquet writes a binary file: name it with -o FILE")
        try:
            write_parquet(frame, args.output)
        except ParquetUnavailable as e:
            raise UsageError(str(e)) from None
    else:
        text = to_json(frame) if args.format == "json" else to_csv(frame)
        if args.output is None:
            sys.stdout.write(text)
            return EXIT_OK
        write_text_atomic(args.output, text)
    print(f"wrote {len(frame)} rows to {args.output}")
    return EXIT_OK


# ── report, site ────────────────────────────────────────────────────────────────────────────

def _load(module: str, name: str) -> Callable[..., Any]:
    """Import a rendering function only when its command runs: jinja2, altair and WeasyPrint
    load slowly, and a machine that only collects or exports need not have them."""
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as e:
        # A missing dependency (jinja2, weasyprint…) is fixed by installing; a missing gpuplan
        # module means a broken or partial checkout.
        hint = "this gpuplan is incomplete" if (e.name or "").startswith("planner") else "run `make setup`"
        raise UsageError(f"{module}.{name} cannot be loaded ({e}); {hint}") from None


def cmd_report(args: argparse.Namespace) -> int:
    render_report = _load("planner.render.report", "render_report")
    job = parse_job_arg(args.job, planned_folder(args.results_dir) if job_spec_arg(args.job) else None)
    others = load_others(args.results_dir, args.others)
    _print_written(render_report(args.results_dir, args.out, paper=args.paper, job=job, others=others,
                                 full=args.full))
    return EXIT_OK


def cmd_site(args: argparse.Namespace) -> int:
    from gpuplan_schema.results import iter_document_paths

    root = Path(args.results_root)
    if root.is_dir() and iter_document_paths(root):
        raise UsageError(f"{root} is a machine folder; gpuplan site wants a results root, the folder of machine "
                         f"folders ({root.resolve().parent}); `gpuplan report {root}` renders this one machine")
    build_site = _load("planner.site.build", "build_site")
    # the bar on a terminal only: a log or a pipe gets the written path, warnings and errors, one line each
    _print_written(build_site(args.results_root, args.out, pdf=args.pdf, paper=args.paper,
                              progress=sys.stderr.isatty(), cache=args.cache))
    return EXIT_OK


def job_spec_arg(spec: str | None) -> str | None:
    """--job SPEC as given: None where not given; an empty SPEC is an error, never a silent default."""
    if spec is not None and not spec.strip():
        raise UsageError("--job '': empty; give a workload, a precision and an amount, e.g. "
                         "'resnet50 bf16 epochs=90 dataset=imagenet', or leave --job out for the default jobs")
    return spec


def parse_job_arg(spec: str | None, machine: Any = None):  # noqa: ANN201 - a Job or None
    """--job SPEC as a Job (None where not given). `machine`: the MachineResults whose workloads' sequence lengths
    turn tokens= into samples (a traced or measured LM's own, as its documents record it: no seq= needed)."""
    from planner.rank.jobs import parse_job

    if job_spec_arg(spec) is None:
        return None
    known = {w.workload: w.tokens_per_sample for w in machine.workloads if w.tokens_per_sample} if machine else None
    return parse_job(spec, known)


def planned_folder(folder: Path):  # noqa: ANN201 - a MachineResults
    """The machine a folder holds as plan and report read it: measured, or predicted from its traces."""
    from gpuplan_schema.results import load_machine
    from planner.trace.machine import planned_machine

    return planned_machine(load_machine(folder))


def load_others(folder: Path, named: Sequence[Path] | None) -> list:
    """The machines named with --with (machine folders or results roots), loaded once, the given one left out; the
    JSON files there and in the given folder that are no gpuplan documents are skipped with one warning line."""
    from gpuplan_schema.results import load_machine, load_machines

    skipped: list[Path] = list(load_machine(folder).skipped)
    given = Path(folder).resolve()
    others = [m for path in named or () for m in load_machines(path, skipped) if m.folder.resolve() != given]
    skipped = list(dict.fromkeys(skipped))  # the given folder again under a root named with --with: said once
    if skipped:
        names = ", ".join(str(p) for p in skipped[:3]) + (f" and {len(skipped) - 3} more" if len(skipped) > 3 else "")
        print(f"{PROG}: warning: skipped {len(skipped)} JSON file{'s' if len(skipped) > 1 else ''} that "
              f"{'are' if len(skipped) > 1 else 'is'} no gpuplan document: {names}", file=sys.stderr)
    return list({m.machine: m for m in others}.values())


def _print_written(result: Any) -> None:
    paths = result if isinstance(result, (list, tuple)) else [result]
    for path in paths:
        if path is not None:
            print(f"wrote {path}")


# ── plan ────────────────────────────────────────────────────────────────────────────────────

def cmd_plan(args: argparse.Namespace) -> int:
    import json

    from planner.plan.plan import build_plan, plan_to_json
    from planner.render.fit import plan_width
    from planner.render.plan_text import render_plan_text

    # the folder is read once: first where --job needs its workloads' sequence lengths (an empty --job is refused
    # before any folder is read), else after the other machines, as before
    machine = planned_folder(args.results_dir) if job_spec_arg(args.job) else None  # a trace folder: predicted
    job = parse_job_arg(args.job, machine)
    others = load_others(args.results_dir, args.others)
    machine = machine or planned_folder(args.results_dir)
    if machine.gpu_name is None and machine.ceilings is not None and machine.ceilings.device == "cpu":
        folder = args.results_dir
        raise UsageError(f"{folder} measured a CPU (no GPU): gpuplan plan needs a GPU machine's ceilings and "
                         f"workloads; `gpuplan report {folder}` still shows what was measured")
    plan = build_plan(machine, args.targets, job, [machine, *others], rank_defaults=True)
    print(json.dumps(plan_to_json(plan), indent=1) if args.json
          else render_plan_text(plan, verbose=args.verbose, top=args.top, width=plan_width()))
    return EXIT_OK


def _add_plan(sub: Any) -> None:
    p = _add(sub, "plan", cmd_plan, "predict one machine's workloads on other GPUs and instances, recommend "
                                    "settings with their reasons, and rank instances for a job")
    p.add_argument("results_dir", type=Path, metavar="RESULTS_DIR",
                   help="one machine's results folder, or a trace folder (`gpuplan trace`: predicted, no GPU measured)")
    p.add_argument("--target", dest="targets", action="append", metavar="NAME",
                   help="a GPU (any alias: H200, h200-sxm, A100-80GB) or an instance (p5.48xlarge); repeatable "
                        "(default: the measured GPU, A100 80GB, H100, H200, L40S, B200)")
    p.add_argument("--job", metavar="SPEC",
                   help="rank every catalog instance for a job: 'resnet50 bf16 samples=128116700', "
                        "'gpt-small bf16 tokens=10B', 'resnet50 fp16 epochs=90 dataset=imagenet', 'resnet50 bf16 "
                        "dataset=coco-2017' (one epoch) or 'gpt-small fp8 dataset=openwebtext' (fp8 where the "
                        "measured GPU ran fp8 matmuls); a bf16 job runs fp16 (autocast + GradScaler) on a GPU "
                        "without bf16 (V100, T4), marked ‡")
    _add_with(p)
    p.add_argument("--json", action="store_true", help="print the plan document (docs/plan.md) instead of text")
    p.add_argument("--verbose", action="store_true",
                   help="after the answer, every reason and figure: each workload's basis and other targets, the "
                        "published check, capacity, the whole ranking, recommendations and presets")
    p.add_argument("--top", type=_positive_int, default=15, metavar="N",
                   help="with --verbose: the N cheapest instances in the ranking table (default 15); the rest are "
                        "counted")


def _add_with(p: argparse.ArgumentParser) -> None:
    p.add_argument("--with", dest="others", action="append", type=Path, metavar="DIR",
                   help="another machine folder, or a results root of several, whose measurements join the plan: "
                        "their measured accuracy sets the prediction ranges, their multi-GPU runs the scaling "
                        "(repeatable; default: the folder given alone, whatever sits beside it)")


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return int(text)


# ── accuracy ────────────────────────────────────────────────────────────────────────────────

def cmd_accuracy(args: argparse.Namespace) -> int:
    from gpuplan_schema.results import load_machine
    from planner.check.accuracy import build_accuracy, render_markdown
    from planner.render.accuracy_text import render_accuracy_text
    from planner.render.fit import plan_width, wrap

    first, second = (Path(p) for p in args.machines)
    if first.resolve() == second.resolve():
        raise UsageError(f"{first} is given twice: the accuracy check predicts one machine from another")
    a, b = (load_machine(p) for p in args.machines)
    if a.machine == b.machine:
        raise UsageError(f"{first} and {second} are the same machine ({a.machine}): the accuracy check predicts one "
                         "machine from another")
    for machine in (a, b):
        if problem := accuracy_problem(machine):
            raise UsageError(f"{machine.folder}: {problem}")
    tables = [build_accuracy(x, y) for x, y in ((a, b), (b, a))]
    if args.markdown:
        print("\n".join(render_markdown(t) for t in tables))
        return EXIT_OK
    width = plan_width()
    lines = [line for t in tables for line in [*render_accuracy_text(t, width), ""]]
    print("\n".join([*lines, *wrap("--markdown: every configuration and every max batch, as docs/accuracy.md "
                                    "quotes them", width)]))
    return EXIT_OK


def accuracy_problem(machine: Any) -> str:
    """Why a machine cannot take part in the accuracy check (planner.check.accuracy.comparable), or ''."""
    from planner.specs import match_gpu

    if machine.gpu_name is None:
        return "measured a CPU (no GPU): the accuracy check compares two GPUs"
    if match_gpu(machine.gpu_name) is None:
        return f"its GPU, {machine.gpu_name}, is not in the GPU catalog (gpuplan specs --gpus)"
    if machine.ceilings is None:
        return ("no ceilings.json: the check predicts from measured ceilings (a multi-GPU folder holds the "
                "collectives; give the one-GPU folder of that machine)")
    if not machine.workloads:
        return "no workload documents to compare"
    if any(w.scale != "reference" for w in machine.workloads):
        return "its workloads ran at reduced sizes (a CPU test run), not comparable with a GPU's"
    return ""


def _add_accuracy(sub: Any) -> None:
    p = _add(sub, "accuracy", cmd_accuracy, "predict each of two measured machines from the other: the errors per "
                                            "workload (--markdown: every prediction beside its measurement)")
    p.add_argument("machines", nargs=2, type=Path, metavar="MACHINE_DIR",
                   help="two machine folders with different GPUs, measured with the same profile")
    p.add_argument("--markdown", action="store_true",
                   help="every configuration and max batch as Markdown tables (default: per direction the headline "
                        "and one line per workload, fitting the terminal)")


# ── specs ───────────────────────────────────────────────────────────────────────────────────

def cmd_specs(args: argparse.Namespace) -> int:
    from planner.render.fit import plan_width
    from planner.render.specs_text import render_specs_text
    from planner.specs.listing import render_specs_json

    # Neither flag: both catalogs.
    gpus, instances = (args.gpus, args.instances) if args.gpus or args.instances else (True, True)
    sys.stdout.write(render_specs_json(gpus=gpus, instances=instances) if args.json
                     else render_specs_text(gpus=gpus, instances=instances, width=plan_width()))
    return EXIT_OK


# ── parser and entry point ──────────────────────────────────────────────────────────────────

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="GPU capacity planner: measure a GPU, then get the settings to run each workload "
                               "with and the instance to rent for a job (gpuplan plan), with the evidence in a "
                               "report and a site.",
        epilog=f"Run `{PROG} COMMAND --help` for the options of a command.")
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    collect = sub.add_parser("collect", help=COLLECT_HELP, add_help=False, prefix_chars="\0",
                             description=COLLECT_HELP[0].upper() + COLLECT_HELP[1:] + ".")
    collect.add_argument("collect_args", nargs=argparse.REMAINDER, help="see `gpuplan collect --help`")
    collect.set_defaults(func=cmd_collect)
    trace = sub.add_parser("trace", help=TRACE_HELP, add_help=False, prefix_chars="\0",
                           description=TRACE_HELP[0].upper() + TRACE_HELP[1:] + ".")
    trace.add_argument("trace_args", nargs=argparse.REMAINDER, help="see `gpuplan trace --help`")
    trace.set_defaults(func=cmd_trace)
    _add_validate(sub)
    _add_export(sub)
    _add_plan(sub)
    _add_accuracy(sub)
    _add_report_and_site(sub)
    _add_specs(sub)
    from planner.fleet.cli import add_fleet  # multinode: `gpuplan fleet slurm|k8s`

    add_fleet(sub)
    return parser


def _add(sub: Any, name: str, func: Callable[[argparse.Namespace], int], help: str) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".")
    p.set_defaults(func=func)
    return p


def _add_specs(sub: Any) -> None:
    p = _add(sub, "specs", cmd_specs, "list the spec catalogs: GPU datasheet figures (dense rates) and cloud "
                                      "instances (GPUs, host, on-demand price with its date)")
    p.add_argument("--gpus", action="store_true", help="the GPU catalog only (planner/specs/gpus.json)")
    p.add_argument("--instances", action="store_true",
                   help="the instance catalog only (planner/specs/instances.json), with its price notes")
    p.add_argument("--json", action="store_true", help="JSON in SI units with every source, instead of tables")


def _add_validate(sub: Any) -> None:
    p = _add(sub, "validate", cmd_validate,
             "check result documents (files, or folders searched for *.json) against the schema")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a document, a machine folder or a results root")


def _add_export(sub: Any) -> None:
    p = _add(sub, "export", cmd_export,
             "every measured figure as one tidy row (CSV, JSON or Parquet), for pandas and for comparing machines")
    p.add_argument("results_dir", type=Path, metavar="RESULTS_DIR",
                   help="a machine folder (results/<machine>/) or a results root holding several")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--csv", dest="format", action="store_const", const="csv", help="CSV (the default)")
    fmt.add_argument("--json", dest="format", action="store_const", const="json",
                     help="JSON: a list of objects, empty cells as null")
    fmt.add_argument("--parquet", dest="format", action="store_const", const="parquet",
                     help="Parquet, typed as planner.load_results' frame (needs pyarrow: the parquet extra; -o FILE)")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE (default: standard output)")
    p.set_defaults(format="csv")


def _add_report_and_site(sub: Any) -> None:
    p = _add(sub, "report", cmd_report, "render one machine's results as a self-contained HTML page and a PDF")
    p.add_argument("results_dir", type=Path, metavar="RESULTS_DIR", help="a machine folder (results/<machine>/)")
    p.add_argument("--out", type=Path, default=Path("reports"), help="output root (default: reports/)")
    p.add_argument("--paper", choices=("a4", "letter"), default="a4",
                   help="the PDF's paper size: A4 (210 × 297 mm, the default) or US Letter (8.5 × 11 in)")
    p.add_argument("--job", metavar="SPEC", help=f"the job the instance ranking is for (default: {DEFAULT_JOB_HELP}); "
                                                  "the same SPEC as `gpuplan plan --job`")
    _add_with(p)
    p.add_argument("--full", action="store_true",
                   help="put the appendix in the PDF too (every trial, sweep, per-operation table, recommendation and "
                        "prediction: about 200 pages for 15 workloads); the HTML always has it, collapsed")
    p = _add(sub, "site", cmd_site, "render every machine under a results root as a static site")
    p.add_argument("results_root", type=Path, metavar="RESULTS_ROOT", help="folder of machine folders (results/)")
    p.add_argument("--out", type=Path, default=Path("site/_build"), help="output folder (default: site/_build/)")
    p.add_argument("--paper", choices=("a4", "letter"), default="a4", help="the PDFs' paper size (default: a4)")
    p.add_argument("--no-pdf", dest="pdf", action="store_false",
                   help="no PDF per machine (a PDF takes seconds). By default a machine's PDF is rendered again only "
                        "when its results or gpuplan changed; its page likewise, from the cache (--cache)")
    p.add_argument("--cache", type=Path, metavar="DIR",
                   help="where a build keeps what the next one reuses, so that an unchanged root rebuilds in seconds "
                        "(default: OUT/.gpuplan-cache/; leave that out when publishing OUT, or give a folder outside "
                        "it; deleting it costs one full build: docs/report-and-site.md)")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as e:  # --help (0) or a usage error (2, already printed by argparse)
            return e.code if isinstance(e.code, int) else EXIT_BAD_INPUT
        return args.func(args)
    except (DocumentError, UsageError) as e:
        print(format_error(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `gpuplan plan … | head`: the reader has what it wanted; say nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return EXIT_OK
    except OSError as e:
        print(format_error(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
