"""What padding gpt-small's vocabulary to a multiple of 64 gains.

gpt-small's 50257-wide output layer is not a multiple of 8, so its three output GEMMs run on Turing-era
CUTLASS kernels for unaligned shapes (`cutlass_75_…_align1`; their share of the step:
benchmarks/compile_kernels.py). This times the step with the vocabulary
as it is and padded to 50304 (the tokens stay below 50257), eager and compiled, and sums each one's kernel time
by family. Each configuration is timed in two separate passes (A B A B …), so that the spread between
passes shows how much of a difference is noise. Runs on the GPU host with torch and the standard library:

    python3 benchmarks/vocab_padding.py [--batch 32] [--precision bf16] [--out vocab-padding.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.compile_kernels import kernel_time  # noqa: E402
from collectors.core.timing import TimingPlan, time_callable  # noqa: E402
from collectors.workloads import workload_from_dict
from collectors.workloads.models import builtin  # noqa: E402
from collectors.workloads.training import Variant, build_step, precision_mode, prepare_model  # noqa: E402

VOCABS = (builtin.GPT_VOCAB, 50304)
PASSES = 2
PLAN = TimingPlan(warmup_s=1.0, sample_s=0.15, min_samples=10, max_samples=20, budget_s=4.0, target_rel_iqr=0.01)


def build(vocab: int, compiled: bool, precision: str, batch: int, device: torch.device):  # noqa: ANN201
    variant = Variant(compile=compiled)
    with device:
        workload = workload_from_dict(builtin.gpt_small(vocab=vocab), "built-in")
    with precision_mode(precision, device, variant):
        return build_step(workload, prepare_model(workload, device, variant), precision, batch, device, variant)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--out", type=Path, default=Path("vocab-padding.json"))
    args = parser.parse_args()
    device = torch.device("cuda")
    configs = [(v, c) for c in (False, True) for v in VOCABS]
    steps = {cfg: build(*cfg, args.precision, args.batch, device) for cfg in configs}
    times: dict[tuple, list] = {cfg: [] for cfg in configs}
    for _ in range(PASSES):
        for cfg in configs:  # passes interleave the configurations: a drifting GPU or host moves all alike
            with precision_mode(args.precision, device, Variant(compile=cfg[1])):
                times[cfg].append(time_callable(steps[cfg].run, device, PLAN))
    rows = []
    for (vocab, compiled), stats in times.items():
        with precision_mode(args.precision, device, Variant(compile=compiled)):
            kernels = kernel_time(steps[(vocab, compiled)].run, device)
        rows.append({"vocab": vocab, "variant": "compile" if compiled else "default",
                     "step_s": [asdict(s) for s in stats], "kernels": kernels})
        print(f"vocab {vocab} {'compile' if compiled else 'eager  '}: step "
              + " / ".join(f"{s.median * 1e3:.2f} ms (IQR {s.rel_iqr:.1%})" for s in stats)
              + f"; kernels {kernels['total_ms']:.1f} ms, matmul {kernels['ms_by_family'].get('matmul', 0):.1f} ms",
              flush=True)
    args.out.write_text(json.dumps({"gpu": torch.cuda.get_device_name(device), "torch": torch.__version__,
                                    "workload": "gpt-small", "batch": args.batch, "precision": args.precision,
                                    "passes": PASSES, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
