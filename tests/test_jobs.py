"""planner/rank/jobs.py: --job specs become Jobs; a bad spec is one line naming the word at fault."""

from __future__ import annotations

import json

import pytest

from gpuplan_schema.schema import DocumentError
from planner.rank.jobs import DATASETS, Job, JobError, parse_job, parse_number


@pytest.mark.parametrize(("text", "value"), [
    ("128116700", 128116700), ("128_116_700", 128116700), ("1.28e8", 1.28e8), ("10B", 1e10),
    ("10b", 1e10), ("2.5M", 2.5e6), ("3k", 3000), ("1T", 1e12), ("1G", 1e9), (".5k", 500),
])
def test_numbers(text, value):
    assert parse_number(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "abc", "-5", "0", "1e400", "1,000", "5x", "nan", "inf"])
def test_not_numbers(text):
    assert parse_number(text) is None


def test_samples():
    job = parse_job("resnet50 bf16 samples=128116700")
    assert job == Job(spec="resnet50 bf16 samples=128116700", workload="resnet50", precision="bf16",
                      samples=128116700.0)


def test_epochs_of_a_named_or_counted_dataset_are_the_same_job():
    by_name = parse_job("resnet50 bf16 epochs=100 dataset=imagenet")
    by_count = parse_job("resnet50 bf16 epochs=100 dataset=1281167")
    assert by_name.samples == by_count.samples == 100 * DATASETS["imagenet"] == 128116700


def test_tokens_become_sequences_of_the_workload():
    job = parse_job("gpt-small bf16 tokens=10B")
    assert job.tokens == 1e10 and job.tokens_per_sample == 1024 and job.samples == pytest.approx(1e10 / 1024)
    longer = parse_job("gpt-small bf16 tokens=10B seq=2048")
    assert longer.samples == pytest.approx(job.samples / 2) and longer.tokens_per_sample == 2048


def test_a_user_workload_in_tokens_needs_its_sequence_length():
    assert parse_job("my-lm fp16 tokens=1e9 seq=512").samples == pytest.approx(1e9 / 512)
    assert parse_job("my-lm fp16 tokens=1e9", {"my-lm": 256}).samples == pytest.approx(1e9 / 256)   # its documents'
    with pytest.raises(JobError, match="sequence length of 'my-lm' is unknown"):
        parse_job("my-lm fp16 tokens=1e9", {"other-lm": 256})


def test_min_batch_and_to_dict():
    job = parse_job("resnet50 fp16 samples=1M min_batch=64")
    assert job.min_batch_per_gpu == 64
    assert job.to_dict() == {"spec": "resnet50 fp16 samples=1M min_batch=64", "workload": "resnet50",
                             "precision": "fp16", "samples": 1e6, "tokens": None, "tokens_per_sample": None,
                             "min_batch_per_gpu": 64}


@pytest.mark.parametrize(("spec", "word", "problem"), [
    ("resnet50 samples=1", "workload precision", "must start with a workload and a precision"),
    ("resnet50 bf16 extra samples=1", "workload precision", "must start with a workload and a precision"),
    ("resnet50 bf8 samples=1", "bf8", "unknown precision; one of fp32, tf32, fp16, bf16, fp8"),
    ("resnet50 bf16", "amount", "exactly one of samples=N, tokens=N, epochs=N with dataset=M, or dataset=M"),
    ("resnet50 bf16 samples=1 tokens=2", "samples= tokens=", "exactly one of"),
    ("resnet50 bf16 samples=many", "samples=many", "not a positive number"),
    ("resnet50 bf16 samples=-3", "samples=-3", "not a positive number"),
    ("resnet50 bf16 epochs=90", "dataset", "dataset=M goes with epochs=N"),
    ("resnet50 bf16 samples=5 dataset=imagenet", "dataset", "dataset=M goes with epochs=N"),
    ("resnet50 bf16 epochs=90 dataset=cifar", "dataset=cifar", "nor a known dataset; closest: cifar-10, cifar-100"),
    ("resnet50 bf16 dataset=imagnet", "dataset=imagnet", "closest: imagenet-1k"),
    ("resnet50 bf16 dataset=xyz", "dataset=xyz", "known: imagenet-1k, cifar-10, cifar-100, mnist, coco-2017"),
    ("gpt-small bf16 dataset=imagenet", "dataset=imagenet", "imagenet-1k counts images; gpt-small trains on token"),
    ("my-lm bf16 dataset=openwebtext", "dataset=openwebtext", "sequence length of 'my-lm' is unknown"),
    ("resnet50 bf16 samples=1 sample=2", "sample=2", "unknown key 'sample'"),
    ("resnet50 bf16 samples=1 samples=2", "samples=2", "samples is given twice"),
    ("my-lm bf16 tokens=1e9", "tokens=1e9", "sequence length of 'my-lm' is unknown; add seq=N"),
    ("resnet50 bf16 samples=1 min_batch=1.5", "min_batch=1.5", "must be a whole number"),
])
def test_bad_specs_name_the_word(spec, word, problem):
    with pytest.raises(JobError) as caught:
        parse_job(spec)
    message = str(caught.value)
    assert message.startswith(f"--job {spec!r}: {word}: ") and problem in message
    assert "\n" not in message
    # The CLI's one-line error handler catches DocumentError (exit 2); JobError is one.
    assert isinstance(caught.value, DocumentError)


@pytest.mark.parametrize(("name", "size"), [("imagenet", 1_281_167), ("imagenet-1k", 1_281_167), ("cifar-10", 50_000),
                                            ("coco-2017", 118_287), ("COCO", 118_287)])
def test_a_named_dataset_alone_is_one_epoch_of_it(name, size):
    job = parse_job(f"resnet50 bf16 dataset={name}")
    assert job.samples == size == DATASETS[name.lower()]
    assert parse_job(f"resnet50 bf16 epochs=3 dataset={name}").samples == 3 * size


def test_a_token_dataset_becomes_sequences_of_the_workload():
    from planner.rank.jobs import BY_NAME

    job = parse_job("gpt-small bf16 epochs=2 dataset=openwebtext")
    assert BY_NAME["openwebtext"].unit == "tokens" and job.tokens == 2 * BY_NAME["openwebtext"].size
    assert job.samples == pytest.approx(job.tokens / 1024) and job.tokens_per_sample == 1024
    assert all(d.source for d in BY_NAME.values())


def test_samples_take_suffixes_and_fp8_is_a_precision():
    job = parse_job("resnet50 fp8 samples=1.28M")
    assert (job.precision, job.samples) == ("fp8", 1.28e6)


def test_a_language_model_traced_from_its_file_takes_its_own_sequence_length(tmp_path, capsys, monkeypatch):
    # its file declares tokens_per_sample: `--job 'NAME bf16 tokens=...'` needs no seq= for the plan or the report
    from paths import REPO

    from collectors.trace import __main__ as trace_cli
    from planner.cli import main

    monkeypatch.chdir(REPO)
    assert trace_cli.main(["examples/decoder_lm.py:build_tiny", "--out", str(tmp_path), "--machine", "laptop"]) == 0
    capsys.readouterr()
    folder = str(tmp_path / "laptop")
    assert main(["plan", folder, "--json", "--job", "decoder-lm-cpu bf16 tokens=1B"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["job"]["tokens_per_sample"] == 32                         # build_tiny's sequence
    assert plan["job"]["samples"] == pytest.approx(1e9 / 32)
    assert main(["plan", folder, "--job", "decoder-lm-cpu bf16 tokens=1B seq=64"]) == 0   # seq= still wins
    assert "15 625 000 samples" in capsys.readouterr().out.replace("\u2009", " ").replace("\u202f", " ")
