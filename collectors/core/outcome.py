"""The end of a collection: what it saved, what failed, what is left to measure and the command that resumes; its
exit status."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from dataclasses import replace

from collectors.core.collection import Collector, Options, Outcome, Step, machine_folder, split_done
from collectors.core.interrupt import EXIT_INTERRUPTED

EXIT_FAILED = 1


def report_outcome(outcome: Outcome, command: str, budgeted: bool = False) -> int:
    """The end-of-run summary: what was saved or kept, what failed, what is left and how to resume (`budgeted`: the
    run had a --budget, which the command that finishes drops); the exit status."""
    print(f"\nCollected into {outcome.folder}:")
    print("\n".join(outcome.lines.values()) or "(nothing saved)")
    failed = outcome.all_failed
    if failed:
        print(f"\nFailed ({len(failed)}; everything else above is kept; --fresh measures a kept document again):",
              file=sys.stderr)
        print("\n".join(f"  {line}" for line in failed), file=sys.stderr)
    if outcome.left:
        print("\nLeft to measure (in this order; a plan from what is here names them as not timed):",
              file=sys.stderr)
        print("\n".join(f"  {line}" for line in outcome.left), file=sys.stderr)
    if outcome.interrupted:
        print(f"\nStopped by Ctrl-C; every finished point is saved. Resume with the same command: {command}",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    if outcome.left and budgeted:
        print(f"\nStopped at the time budget; every finished point is saved. The same command continues for as "
              f"long again: {command}\nOr every stage left, however long: {without_budget(command)} --budget none",
              file=sys.stderr)
    elif outcome.left:
        print(f"\nResume with the same command: {command}", file=sys.stderr)
    return EXIT_FAILED if failed else 0


def left_to_measure(options: Options, collectors: dict[str, Collector], order: list[Step], device: str,
                    applies: Callable[[str, Options], bool]) -> list[str]:
    """What a rerun would still measure, one line per document or collector, in the collection's order (a
    collector `applies` says has nothing to measure here left out)."""
    _, folder = machine_folder(options)
    lines: list[str] = []
    for name, phase in order:
        c = collectors[name]
        first_phase = phase and phase != c.phases[-1]  # said once, at the collector's last phase
        if name not in (options.only or collectors) or first_phase or not applies(name, options):
            continue
        todo, done = split_done(c, folder, replace(options, phase=None), device)
        if todo is None:
            continue
        if c.left:
            lines += c.left(folder, c.documents(options), done, options)
        else:
            stems = [stem for stem in c.documents(options) if stem not in done]
            lines.append(f"{name}: {', '.join(stems)} ({c.help.split(':')[0]})")
    return lines


def without_budget(command: str) -> str:
    """The command with its --budget dropped: the one that finishes the collection."""
    words = shlex.split(command)
    kept, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word == "--budget":
            skip = True
        elif not word.startswith("--budget="):
            kept.append(word)
    return shlex.join(kept)
