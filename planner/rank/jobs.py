"""A training job as the user states it: `--job "resnet50 bf16 samples=128116700"`.

The spec is a workload name, a precision, then `key=value` words saying how much work there is:

    resnet50 bf16 samples=128116700          samples seen in the whole run
    resnet50 bf16 epochs=100 dataset=imagenet    epochs × dataset size (a number or a known name)
    gpt-small bf16 tokens=10B                tokens; samples = tokens / sequence length
    gpt-small bf16 tokens=10B seq=2048       … with another sequence length than the workload's
    resnet50 bf16 samples=1.28e8 min_batch=32    refuse instances that cannot hold 32 per GPU
    resnet50 bf16 dataset=coco-2017          one epoch of a named dataset (DATASETS: its size and source)
    gpt-small fp8 epochs=2 dataset=openwebtext    fp8 (where the measured GPU ran fp8 matmuls: the plan checks)

Numbers take `_` separators, exponents (`1.28e8`) and the decimal suffixes k, M, B (or G), T.
A bad spec raises JobError, whose one-line message names the spec and the offending word. So does a job
too small to rank (under one whole sample: every instance would finish it in 0 h for $0), and a token
count written without a suffix that is below PLAUSIBLE_TOKENS (`tokens=300` is most likely `tokens=300B`).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuplan_schema.schema import DocumentError

# The collectors' training precisions, and fp8: its step is estimated from bf16's with the matmuls at the
# measured fp8 rate (planner/plan/jobs.py checks the measured GPU ran fp8 matmuls).
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")
MAX_SAMPLES = 1e13   # beyond any training run (GPT-3's 300B tokens are 1.5e8 samples of 2048): a typo, not a job


@dataclass(frozen=True)
class Dataset:
    """One epoch of a dataset people name: `size` samples, or tokens where `unit` is 'tokens'."""

    name: str
    size: int
    unit: str      # 'samples' (images) or 'tokens'
    source: str


DATASET_LIST = (
    Dataset("imagenet-1k", 1_281_167, "samples", "ILSVRC-2012 train split (image-net.org; torchvision ImageNet)"),
    Dataset("cifar-10", 50_000, "samples", "CIFAR-10 train split (cs.toronto.edu/~kriz/cifar.html)"),
    Dataset("cifar-100", 50_000, "samples", "CIFAR-100 train split (cs.toronto.edu/~kriz/cifar.html)"),
    Dataset("mnist", 60_000, "samples", "MNIST train split (yann.lecun.com/exdb/mnist)"),
    Dataset("coco-2017", 118_287, "samples", "COCO 2017 train images (cocodataset.org)"),
    Dataset("openwebtext", 9_035_582_198, "tokens",
            "OpenWebText train split in GPT-2 BPE tokens (nanoGPT data/openwebtext/prepare.py)"),
)
ALIASES = {"imagenet": "imagenet-1k", "ilsvrc2012": "imagenet-1k", "cifar10": "cifar-10", "cifar100": "cifar-100",
           "coco": "coco-2017", "owt": "openwebtext"}
BY_NAME = {d.name: d for d in DATASET_LIST} | {a: next(d for d in DATASET_LIST if d.name == n)
                                                for a, n in ALIASES.items()}
DATASETS = {name: d.size for name, d in BY_NAME.items()}  # name or alias → size of one epoch
# Tokens per sample (sequence length) of the reference workloads that count tokens (DESIGN.md).
TOKENS_PER_SAMPLE = {"gpt-small": 1024}
KEYS = ("samples", "tokens", "epochs", "dataset", "seq", "min_batch")
SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
NUMBER = re.compile(r"^(\d[\d_]*(\.\d*)?|\.\d+)(e[+-]?\d+)?([kmbgt]?)$", re.IGNORECASE)
# A training run reads at least this many tokens; a bare number below it has most likely lost its suffix.
PLAUSIBLE_TOKENS = 1e6


class JobError(DocumentError):
    """A --job spec that cannot be read: `--job '<spec>': <word>: <problem>` (CLI exit 2)."""

    def __init__(self, spec: str, word: str, problem: str):
        super().__init__(f"--job {spec!r}", word, problem)


@dataclass(frozen=True)
class Job:
    """What to train and how much: `samples` is the whole run (sequences for token jobs)."""

    spec: str
    workload: str
    precision: str
    samples: float
    tokens: float | None = None           # as stated, for jobs given in tokens
    tokens_per_sample: int | None = None  # sequence length used to turn tokens into samples
    min_batch_per_gpu: int = 1            # an instance must hold at least this many samples per GPU

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "workload": self.workload, "precision": self.precision,
                "samples": self.samples, "tokens": self.tokens, "tokens_per_sample": self.tokens_per_sample,
                "min_batch_per_gpu": self.min_batch_per_gpu}


def parse_number(text: str) -> float | None:
    """'128116700', '128_116_700', '1.28e8', '10B' → float; None if it is not a positive number."""
    match = NUMBER.match(text.strip())
    if not match:
        return None
    value = float(match.group(1).replace("_", "") + (match.group(3) or "")) * SUFFIXES.get(match.group(4).lower(), 1)
    return value if math.isfinite(value) and value > 0 else None


def parse_job(spec: str, sequences: Mapping[str, int] | None = None) -> Job:
    """The Job a spec describes; JobError naming the word at fault otherwise. `sequences`: the tokens a sample of each
    workload the machine measured or traced (its documents' tokens_per_sample), so that tokens= needs no seq= for a
    user's language model whose file declared it."""
    words = spec.split()
    positional = [w for w in words if "=" not in w]
    if len(positional) != 2:
        raise JobError(spec, "workload precision", "must start with a workload and a precision, e.g. "
                             "'resnet50 bf16 samples=128116700'")
    workload, precision = positional
    if precision not in PRECISIONS:
        raise JobError(spec, precision, f"unknown precision; one of {', '.join(PRECISIONS)}")
    values = _key_values(spec, [w for w in words if "=" in w])
    tokens_per_sample = (_whole(spec, values, "seq") or (sequences or {}).get(workload)
                         or TOKENS_PER_SAMPLE.get(workload))
    samples, tokens = _amount(spec, workload, values, tokens_per_sample)
    _check_size(spec, values, samples, tokens)
    return Job(spec=spec, workload=workload, precision=precision, samples=samples, tokens=tokens,
               tokens_per_sample=tokens_per_sample if tokens is not None else None,
               min_batch_per_gpu=_whole(spec, values, "min_batch") or 1)


def _check_size(spec: str, values: dict[str, str], samples: float, tokens: float | None) -> None:
    """Refuse a unit-less token count too small to be meant, and a job of less than one sample."""
    stated = values.get("tokens", "")
    if tokens is not None and stated[-1:].isdigit() and "e" not in stated.lower() and tokens < PLAUSIBLE_TOKENS:
        # the suffix that makes it a plausible run: 300 → 300B, 300000 → 300M
        suffix = next((s for s, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)) if tokens * scale <= 1e13), "k")
        raise JobError(spec, f"tokens={stated}", f"{stated} tokens is less than a training run reads; "
                                                 f"did you mean tokens={stated}{suffix}? (suffixes k, M, B, T)")
    word = next((f"{k}={values[k]}" for k in ("tokens", "samples", "epochs", "dataset") if k in values), "amount")
    if samples > MAX_SAMPLES:
        raise JobError(spec, word, f"the job is {samples:.2g} samples, more than any training run ({MAX_SAMPLES:.0e} "
                                   "at most: 10 trillion); give the amount the job reads (suffixes k, M, B, T)")
    if samples < 1:
        raise JobError(spec, word, f"the job is {samples:.2g} samples, less than one: nothing to rank; "
                                   "give a larger amount (suffixes k, M, B, T)")


def _key_values(spec: str, words: list[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for word in words:
        key, _, value = word.partition("=")
        if key not in KEYS:
            raise JobError(spec, word, f"unknown key {key!r}; keys are {', '.join(KEYS)}")
        if key in values:
            raise JobError(spec, word, f"{key} is given twice")
        values[key] = value
    return values


def _number(spec: str, values: dict[str, str], key: str) -> float:
    value = parse_number(values[key])
    if value is None:
        raise JobError(spec, f"{key}={values[key]}", "not a positive number (e.g. 1281167, 1.28e8, 10B)")
    return value


def _whole(spec: str, values: dict[str, str], key: str) -> int | None:
    if key not in values:
        return None
    value = _number(spec, values, key)
    if not value.is_integer():
        raise JobError(spec, f"{key}={values[key]}", "must be a whole number")
    return int(value)


def _amount(spec: str, workload: str, values: dict[str, str],
            tokens_per_sample: int | None) -> tuple[float, float | None]:
    """(samples, tokens as stated or None) from exactly one of samples=, tokens=, epochs= with dataset=,
    or dataset= alone (one epoch)."""
    given = [k for k in ("samples", "tokens", "epochs") if k in values]
    if not given and "dataset" in values:
        given, values = ["epochs"], {**values, "epochs": "1"}
    if len(given) != 1:
        raise JobError(spec, " ".join(f"{k}=" for k in given) or "amount",
                       "give exactly one of samples=N, tokens=N, epochs=N with dataset=M, or dataset=M (one epoch)")
    if ("dataset" in values) != (given == ["epochs"]):
        raise JobError(spec, "dataset", "dataset=M goes with epochs=N (or alone, for one epoch), and only with it")
    if given == ["samples"]:
        return _number(spec, values, "samples"), None
    if given == ["epochs"]:
        return _epochs(spec, workload, values, tokens_per_sample)
    return _tokens(spec, workload, values, _number(spec, values, "tokens"), tokens_per_sample)


def _tokens(spec: str, workload: str, values: dict[str, str], tokens: float,
            tokens_per_sample: int | None) -> tuple[float, float]:
    if tokens_per_sample is None:
        word = f"tokens={values['tokens']}" if "tokens" in values else f"dataset={values['dataset']}"
        raise JobError(spec, word, f"the sequence length of {workload!r} is unknown; add seq=N (tokens per sample)")
    return tokens / tokens_per_sample, tokens


def _epochs(spec: str, workload: str, values: dict[str, str],
            tokens_per_sample: int | None) -> tuple[float, float | None]:
    epochs, word = _number(spec, values, "epochs"), f"dataset={values['dataset']}"
    count = parse_number(values["dataset"])
    if count is not None:
        return epochs * count, None
    dataset = lookup_dataset(spec, values["dataset"])
    if dataset.unit == "tokens":
        return _tokens(spec, workload, values, epochs * dataset.size, tokens_per_sample)
    if workload in TOKENS_PER_SAMPLE:
        raise JobError(spec, word, f"{dataset.name} counts images; {workload} trains on token sequences "
                                   "(a token dataset, tokens=N or samples=N)")
    return epochs * dataset.size, None


def lookup_dataset(spec: str, name: str) -> Dataset:
    """A named dataset; JobError listing the closest names (or all of them) otherwise."""
    key = name.lower()
    if key in BY_NAME:
        return BY_NAME[key]
    close = [n for n in BY_NAME if n.startswith(key) or key.startswith(n.split("-")[0])]
    close += [n for n in difflib.get_close_matches(key, list(BY_NAME), n=3, cutoff=0.5) if n not in close]
    names = list(dict.fromkeys(BY_NAME[n].name for n in close)) or [d.name for d in DATASET_LIST]
    raise JobError(spec, f"dataset={name}", f"not a sample count nor a known dataset; "
                                            f"{'closest' if close else 'known'}: {', '.join(names)}")
