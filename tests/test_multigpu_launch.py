"""The multi-GPU path for real, on CPU processes: torchrun starts 2 ranks talking over gloo, which time
the collectives and train a tiny model with DDP; rank 0 alone writes; the launcher's environment
contract reaches every rank; a failing or hanging rank ends in one clear line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from paths import REPO as ROOT

from collectors.__main__ import main as collect_main
from collectors.distributed import busbw
from collectors.distributed.collectives import message_sizes
from collectors.distributed.launch import MULTICAST_OFF, LaunchError, launch
from collectors.distributed.rank import RankContext, save_from_root
from gpuplan_schema.payloads import CollectivesPayload, DdpPayload, GpuMatmul, LaunchInfo
from gpuplan_schema.schema import load_document
from gpuplan_schema.stats import Stat

USER_WORKLOAD = f"{ROOT / 'examples' / 'user_workload.py'}:build"
BATCH = 8


@pytest.fixture(scope="module")
def gloo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    """One real collection of both collectors on 2 gloo ranks, the caller asking for multicast."""
    out = tmp_path_factory.mktemp("gloo")
    saved = os.environ.get("NCCL_NVLS_ENABLE")
    os.environ["NCCL_NVLS_ENABLE"] = "1"  # the launcher must overrule this in every child
    try:
        code = collect_main(["--only", "collectives", "ddp", "--dist-backend", "gloo", "--gpus", "2",
                             "--workload", USER_WORKLOAD, "--batch", f"sensor-cnn={BATCH}",
                             "--out", str(out), "--machine", "gloo"])
    finally:
        if saved is None:
            os.environ.pop("NCCL_NVLS_ENABLE")
        else:
            os.environ["NCCL_NVLS_ENABLE"] = saved
    return code, out / "gloo"


def payloads(folder: Path) -> tuple[CollectivesPayload, DdpPayload]:
    return load_document(folder / "collectives.json").payload, load_document(folder / "ddp.json").payload


def test_rank_0_alone_writes_one_document_per_collector(gloo_run):
    code, folder = gloo_run
    assert code == 0
    assert sorted(p.name for p in folder.iterdir()) == ["collectives.json", "ddp.json"]  # no temp files either
    for name in ("collectives", "ddp"):
        doc = load_document(folder / f"{name}.json")
        assert (doc.kind, doc.collector.name, doc.machine) == (name, name, "gloo")


def test_every_rank_found_multicast_off_in_its_environment(gloo_run):
    for payload in payloads(gloo_run[1]):
        assert payload.launch.launcher == "torchrun" and payload.launch.world_size == 2
        assert payload.launch.multicast_env == [MULTICAST_OFF, MULTICAST_OFF]


def test_collectives_time_every_op_and_size_and_derive_bandwidth_as_nccl_tests(gloo_run):
    collectives, _ = payloads(gloo_run[1])
    assert (collectives.backend, collectives.device, collectives.world_size, collectives.scale) == \
        ("gloo", "cpu", 2, "tiny")
    sizes = message_sizes("quick", "cpu")
    assert [(p.op, p.size_bytes) for p in collectives.points] == [(op, s) for op in busbw.OPS for s in sizes]
    for p in collectives.points:
        assert p.status == "ok" and p.time_s.n == 5 and p.time_s.median > 0
        assert p.algbw_bytes_per_s.median == pytest.approx(p.size_bytes / p.time_s.median)
        assert p.busbw_bytes_per_s.median == pytest.approx(p.algbw_bytes_per_s.median * busbw.bus_factor(p.op, 2))
    assert collectives.topology is None and "CPU" in collectives.topology_absent_reason


def test_ddp_trains_on_1_and_2_ranks_and_measures_efficiency_against_1(gloo_run):
    _, ddp = payloads(gloo_run[1])
    (workload,) = ddp.workloads
    assert (workload.workload, workload.per_gpu_batch, workload.base_lr) == ("sensor-cnn", BATCH, 1e-4)
    assert workload.batch_bytes == BATCH * 3 * 256 * 4 + BATCH * 8  # float32 windows + int64 labels
    one, two = ddp.points
    assert (one.gpus, two.gpus) == (1, 2) and one.status == two.status == "ok"
    assert one.scaling_efficiency == 1.0
    assert two.throughput_per_s == pytest.approx(2 * BATCH / two.step_s.median)
    assert two.scaling_efficiency == pytest.approx(two.throughput_per_s / (2 * one.throughput_per_s))
    assert two.step_s.median == max(r.step_s.median for r in two.ranks)
    assert two.straggler_rank in (0, 1) and len(two.ranks) == 2
    assert [m.rank for m in ddp.matmul] == [0, 1] and all(m.flops_per_s.median > 0 for m in ddp.matmul)
    rates = [m.flops_per_s.median for m in ddp.matmul]
    assert ddp.matmul_spread == pytest.approx(max(rates) / min(rates) - 1)


def test_save_from_root_writes_on_rank_0_and_nowhere_else(tmp_path):
    stat = Stat(1.0, 1.0, 1.0, 1.0, 1.0, 1)
    payload = DdpPayload("gloo", "cpu", 2, "bf16", "quick", [], [], [GpuMatmul(0, "cpu", stat, [1, 1, 1])],
                         LaunchInfo("torchrun", "gloo", 2, [MULTICAST_OFF] * 2), 1.0)
    for rank in (1, 0):
        ctx = RankContext(rank, 2, rank, torch.device("cpu"), "gloo", None, dict(MULTICAST_OFF))
        path = save_from_root(ctx, "ddp", "ddp", "1", "m", payload, tmp_path / "ddp.json")
        assert list(tmp_path.iterdir()) == ([] if rank else [tmp_path / "ddp.json"])
        assert path == (None if rank else tmp_path / "ddp.json")


def test_a_failing_rank_is_one_line_naming_the_rank_and_its_error(tmp_path):
    (tmp_path / "failing_rank.py").write_text(
        "import os\nif os.environ['RANK'] == '1':\n    raise RuntimeError('rank 1 cannot go on')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    with open(os.devnull, "w") as quiet, pytest.raises(LaunchError) as caught:
        launch("failing_rank", 2, [], 120, env=env, stream=quiet)
    message = str(caught.value)
    assert "\n" not in message and "failed (exit 1" in message
    assert message.endswith("rank 1: RuntimeError: rank 1 cannot go on")


def test_a_hanging_rank_is_stopped_at_the_timeout_with_all_its_processes(tmp_path):
    (tmp_path / "hanging_rank.py").write_text(
        "import os, pathlib, sys, time\n"
        "pathlib.Path(sys.argv[1], 'pid-' + os.environ['RANK']).write_text(str(os.getpid()))\n"
        "time.sleep(600)\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    with open(os.devnull, "w") as quiet, pytest.raises(LaunchError, match=r"no result after 12 s on 2 ranks"):
        launch("hanging_rank", 2, [str(tmp_path)], 12, env=env, stream=quiet)
    pids = [int(p.read_text()) for p in tmp_path.glob("pid-*")]
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.skipif(torch.cuda.device_count() > 1, reason="this host has GPUs to run the collectors on")
def test_without_two_gpus_the_collectors_are_skipped_with_the_reason(tmp_path, capsys):
    assert collect_main(["--only", "collectives", "ddp", "--out", str(tmp_path), "--machine", "m"]) == 0
    err = capsys.readouterr().err
    assert "collectives: skipped: " in err and "ddp: skipped: " in err and "2 or more" in err
    assert not any((tmp_path / "m").glob("*.json"))


@pytest.mark.parametrize("args, problem", [(["--batch", "sensor-cnn"], "--batch sensor-cnn: expected NAME=N"),
                                           (["--gpus", "0"], "--gpus 0: expected a positive number")])
def test_bad_multi_gpu_options_stop_before_anything_runs(tmp_path, capsys, args, problem):
    assert collect_main(["--only", "environment", "ddp", *args, "--out", str(tmp_path), "--machine", "m"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and problem in lines[0]
    assert not (tmp_path / "m").exists()

