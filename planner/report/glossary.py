"""The report's glossary: the terms its figures and verdicts use, defined once, in plain words.

Each term gets an anchor (`#term-<slug>`) so that other sections can link to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.plan.bounds import BoundKind
from planner.report.sections import SectionBase


@dataclass(frozen=True)
class Term:
    term: str
    definition: str

    @property
    def anchor(self) -> str:
        return "term-" + re.sub(r"[^a-z0-9]+", "-", self.term.lower()).strip("-")


# The bounds, in the plan's one vocabulary (planner/plan/bounds.py): its label and what would help.
BOUND_TERMS = tuple(Term(kind.label[0].upper() + kind.label[1:], kind.hint[0].upper() + kind.hint[1:] + ".")
                    for kind in BoundKind)

TERMS: tuple[Term, ...] = BOUND_TERMS + (
    Term("Achieved fraction", "A workload step's rate divided by this machine's measured ceiling: FLOPs per second "
         "over the dense matmul peak of the same precision, or estimated bytes per second over the copy bandwidth."),
    Term("Algorithm bandwidth", "Message size divided by the time a collective operation (all-reduce, all-gather…) "
         "takes: what one GPU sees (algbw in nccl-tests)."),
    Term("Arithmetic intensity", "FLOPs done per byte moved to or from memory (FLOP/byte). An operation of low "
         "intensity waits on memory bandwidth; one of high intensity on the compute units."),
    Term("autocast", "torch.autocast runs matmuls and convolutions in a lower precision (fp16 or bf16) and keeps "
         "precision-sensitive operations (reductions, softmax, losses) in fp32; the weights stay in fp32."),
    Term("bf16", "bfloat16: a 16-bit float with fp32's exponent range and a 7-bit mantissa. Gradients do "
         "not underflow, so training in bf16 needs no loss scaling."),
    Term("Bus bandwidth", "Algorithm bandwidth times a factor of the collective (2(n−1)/n for all-reduce, (n−1)/n for "
         "all-gather and reduce-scatter, 1 for broadcast, with n GPUs), so that it compares with the speed of the "
         "links whatever the number of GPUs (busbw in nccl-tests)."),
    Term("channels_last", "The NHWC memory format of 4-D tensors: channels vary fastest, as tensor-core convolution "
         "kernels read them, so no layout transposes are needed around each convolution."),
    Term("Copy bandwidth", "Bytes read plus bytes written per second by a device-to-device copy of buffers far "
         "larger than the L2 cache: the slope of the roofline."),
    Term("cudnn.benchmark", "torch.backends.cudnn.benchmark = True makes cuDNN time several convolution algorithms "
         "for each new input shape and keep the fastest; the first step pays for the search."),
    Term("Dense and sparse TFLOPS", "Datasheets quote tensor-core rates for dense matrices and for 2:4 structured "
         "sparsity, the latter twice the former. Training multiplies dense matrices: gpuplan compares with the dense "
         "figures only."),
    Term("fp8", "8-bit floats (e4m3, e5m2) of Hopper and newer GPUs, measured here with torch._scaled_mm."),
    Term("GradScaler", "torch.amp.GradScaler multiplies the loss before the backward pass so that fp16 gradients do "
         "not underflow, divides the gradients back before the optimizer step and skips a step whose gradients "
         "overflowed. fp16 training needs it; bf16 does not."),
    Term("IQR", "Interquartile range: the third quartile minus the first of a figure's samples, the spread of the "
         "middle half. The report writes it after ±."),
    Term("Launch latency", "The time to queue and run one tiny kernel: the floor under any GPU operation, and what "
         "dominates a step made of many small operations."),
    Term("Median", "The middle one of a figure's samples. Unlike the mean, an outlier (a background process, a clock "
         "change) does not move it."),
    Term("OOM boundary", "The largest batch that runs without running out of GPU memory, found by doubling the batch "
         "until a step fails and then bisecting to within 2%."),
    Term("Peak and sustained", "Peak: short bursts after an idle pause, at the clock a GPU holds for its first moments "
         "of full load (what datasheets quote). Sustained: the best shape run for about a second, after power "
         "capping has lowered the clock (what a long training run sees)."),
    Term("Pinned memory", "Page-locked host memory. The GPU copies from it directly, so host-to-device copies are "
         "faster and can overlap computation (pin_memory=True in a DataLoader)."),
    Term("Ridge point", "The arithmetic intensity where the memory slope meets a compute roof: peak FLOP/s divided "
         "by bandwidth. Below it an operation is bound by memory, above it by compute."),
    Term("Roofline", "Attainable throughput against arithmetic intensity: the lower of the compute roof (peak FLOP/s) "
         "and the memory slope (bandwidth × intensity), both axes logarithmic."),
    Term("Scaling efficiency", "Throughput on n GPUs divided by n times the throughput on one: 100% is perfect "
         "data-parallel scaling."),
    Term("Step time", "The time of one whole training step (forward, backward and optimizer update) or of one "
         "inference step."),
    Term("TF32", "TensorFloat-32: a tensor-core mode of Ampere and newer GPUs that multiplies fp32 inputs rounded "
         "to 10 bits of mantissa and accumulates in fp32. PyTorch leaves it off for matmuls unless asked "
         "(torch.set_float32_matmul_precision(\"high\")); gpuplan's fp32 runs have it off everywhere."),
    Term("Throughput", "Samples per second: the batch divided by the step time (tokens per second for language "
         "models: samples times the sequence length)."),
    Term("Throughput knee", "The smallest batch whose throughput is within 5% of the best measured: larger batches "
         "cost memory for little more speed."),
    Term("torch.compile", "Compiles the model into fused kernels (TorchInductor): fewer launches and less memory "
         "traffic, for a compile time paid in the first steps."),
    Term("Traffic model", "gpuplan's estimate of the bytes a step moves: parameters, gradients, optimizer state and "
         "saved activations, each written once and read once. The intermediates of un-fused operations add "
         "traffic it does not count: read it as a floor."),
)


@dataclass(frozen=True)
class GlossarySection(SectionBase, kind="glossary", title="Glossary"):
    terms: tuple[Term, ...]


def build_glossary_section() -> GlossarySection:
    return GlossarySection(tuple(sorted(TERMS, key=lambda t: t.term.lower())))


def term_anchor(term: str) -> str | None:
    """The glossary anchor of `term` (any case), or None when the glossary does not define it."""
    return next((t.anchor for t in TERMS if t.term.lower() == term.lower()), None)
