"""Each measured boundary search replayed on the trace, probe by probe, at the memory the search had (issue 41).

    PYTHONPATH=$PWD python benchmarks/trace_boundary_search.py WORKLOAD [--machines h100-80gb h200]
        [--context-gib 0.73] [--precisions bf16 fp16]

A measured largest batch is the last probe that ran in one process's chain of probes (collectors/trace/chain.py
says why a probe's answer depends on those before it). Per default-allocator boundary of the committed collection
(results/<machine>/workload-<name>.json), its probes in the order they ran are traced on one model on the meta
device and replayed (collectors/trace/chain.py) in the card's memory as CUDA's out-of-memory message gives it, less
what other processes held (the median of the failed probes' messages, planner/trace/boundary.py) and less the
process's own context (`--context-gib`: 0.73 GiB, the H100 memory history's fp16 Transformer-XL case: in use
70.98 GiB, reserved 70.25). Beside each: whether the GPU's probe ran and whether the replay's did, and where the
batch traced alone (a job started on its own at it) runs: the largest of the search's probes that a one-probe
chain runs in. Prints one line a boundary.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from collectors.trace.chain import probe_chain, replay_chain  # noqa: E402
from collectors.trace.collect import load_on_meta  # noqa: E402
from gpuplan_schema.results import load_machine  # noqa: E402
from planner.trace.boundary import others_in  # noqa: E402
from planner.trace.references import REFERENCE_SPECS  # noqa: E402

GIB = 1 << 30


def card_bytes(reason: str | None) -> float | None:
    """The card's memory as CUDA's out-of-memory message gives it ("a total capacity of 79.18 GiB")."""
    import re
    found = re.search(r"total capacity of ([\d.]+) GiB", reason or "")
    return float(found.group(1)) * GIB if found else None


def searches(machine: str, workload: str) -> list[tuple[str, int, list, float | None, float]]:
    """(precision, measured largest batch, its probes in order, the card's bytes, other processes' bytes) of each
    default-allocator boundary found."""
    results = load_machine(ROOT / "results" / machine)
    payload = next(w for w in results.workloads if w.workload == workload)
    out = []
    for b in payload.default_boundaries:
        if b.status != "ok" or not b.max_batch or b.capped:
            continue
        probes = [p for p in payload.points if p.sweep == "probe" and p.precision == b.precision
                  and p.allocator == "default"]
        failed = [p.reason for p in probes if p.status == "oom"]
        card = next((c for r in failed if (c := card_bytes(r))), None)
        others = [o for r in failed if (o := others_in(r)) is not None]
        out.append((b.precision, b.max_batch, probes, card, statistics.median(others) if others else 0.0))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload")
    parser.add_argument("--machines", nargs="*", default=["h100-80gb", "h200"])
    parser.add_argument("--context-gib", type=float, default=0.73)
    parser.add_argument("--precisions", nargs="*")
    args = parser.parse_args(argv)
    spec = REFERENCE_SPECS.get(args.workload, args.workload)
    for machine in args.machines:
        for precision, largest, probes, card, others in searches(machine, args.workload):
            if args.precisions and precision not in args.precisions:
                continue
            if card is None:
                print(f"{machine} {args.workload} {precision}: no failed probe gives the card's memory")
                continue
            capacity = int(card - others - args.context_gib * GIB)
            batches = [p.batch for p in probes]
            memory, chain = probe_chain(load_on_meta(spec), precision, batches)
            ran = replay_chain(memory, chain, capacity)
            alone = []
            for batch in sorted(set(batches)):
                one, single = probe_chain(load_on_meta(spec), precision, [batch])
                if replay_chain(one, single, capacity)[0]:
                    alone.append(batch)
            agree = sum((p.status == "ok") == r for p, r in zip(probes, ran, strict=True))
            marks = " ".join(f"{p.batch}{'+' if p.status == 'ok' else '-'}"
                             + ("" if (p.status == "ok") == r else f"(replay {'+' if r else '-'})")
                             for p, r in zip(probes, ran, strict=True))
            print(f"{machine} {args.workload} {precision}: measured {largest}; {capacity / GIB:.2f} GiB; probes the "
                  f"replay agrees with {agree} of {len(probes)}: {marks}; alone, the largest probe that runs: "
                  f"{max(alone, default=None)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
