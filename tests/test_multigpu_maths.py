"""The multi-GPU collectors' arithmetic and decisions: nccl-tests' bus bandwidth, buffer sizes, message
sizes, world sizes, a DDP point from the ranks' times, how many ranks to launch, the children's environment."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors.distributed import busbw
from collectors.distributed.collect import DistributedOptionError, World, resolve_world
from collectors.distributed.collectives import message_sizes, ops_per_sample
from collectors.distributed.ddp_points import build_point, parse_batch_pairs, world_sizes
from collectors.distributed.launch import MULTICAST_OFF, ROOT, build_command, child_env
from gpuplan_schema.payloads import DdpWorkload
from gpuplan_schema.payloads.topology import GpuLinks, GpuPair, NvLink, Topology, describe_topology
from gpuplan_schema.stats import summarize

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


def test_bus_factors_are_nccl_tests_definitions():
    assert busbw.bus_factor("all_reduce", 4) == pytest.approx(1.5)
    assert busbw.bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert busbw.bus_factor("all_gather", 4) == pytest.approx(0.75)
    assert busbw.bus_factor("reduce_scatter", 2) == pytest.approx(0.5)
    assert busbw.bus_factor("broadcast", 8) == 1.0
    assert busbw.bus_factor("all_reduce", 1) == 0.0  # one rank moves nothing between ranks
    with pytest.raises(ValueError, match="all_to_all"):
        busbw.bus_factor("all_to_all", 4)


def test_a_1_gib_all_reduce_in_5_ms_on_8_ranks():
    # nccl-tests prints algbw 214.75 GB/s and busbw 375.81 GB/s for this case (1 GiB = 1073741824 B).
    assert busbw.algbw(GIB, 5e-3) / 1e9 == pytest.approx(214.748, abs=1e-3)
    assert busbw.busbw("all_reduce", 8, GIB, 5e-3) / 1e9 == pytest.approx(375.809, abs=1e-3)


@given(op=st.sampled_from(busbw.OPS), ranks=st.integers(1, 16), size=st.integers(4, 1 << 32))
def test_shards_fill_the_buffer_and_the_size_is_the_whole_buffer(op, ranks, size):
    n_in, n_out = busbw.shard_elements(op, size, ranks, 4)
    whole = busbw.message_bytes(op, n_in, n_out, 4)
    if op == "all_gather":
        assert n_out == n_in * ranks
    elif op == "reduce_scatter":
        assert n_in == n_out * ranks
    else:
        assert n_in == n_out
    assert whole <= max(size, 4 * ranks) and whole % 4 == 0
    assert whole > size - 4 * ranks  # rounded down by less than one element per rank


def test_message_sizes_span_8_kib_to_1_gib_and_more_in_the_full_profile():
    standard = message_sizes("standard", "cuda")
    assert standard[0] == 8 * KIB and standard[-1] == GIB and len(standard) == 18
    assert all(b == 2 * a for a, b in zip(standard, standard[1:], strict=False))
    quick = message_sizes("quick", "cuda")
    assert quick[0] == 8 * KIB and quick[-1] == GIB and len(quick) < len(standard) and set(quick) <= set(standard)
    assert message_sizes("full", "cuda")[-1] == 4 * GIB
    assert message_sizes("quick", "cpu")[-1] == MIB  # CPU ranks test the path with small buffers


def test_ops_per_sample_depends_only_on_the_size():
    assert ops_per_sample(8 * KIB) == 64 and ops_per_sample(GIB) == 1
    assert ops_per_sample(MIB) == 16 and ops_per_sample(8 * KIB, "cpu") == 8
    sizes = message_sizes("standard", "cuda")
    assert [ops_per_sample(s) for s in sizes] == sorted((ops_per_sample(s) for s in sizes), reverse=True)


def test_world_sizes_double_up_to_the_rank_count():
    assert world_sizes(1) == [1]
    assert world_sizes(2) == [1, 2]
    assert world_sizes(4) == [1, 2, 4]
    assert world_sizes(3) == [1, 2, 3]
    assert world_sizes(8) == [1, 2, 4, 8]


def info(tokens: int | None = None) -> DdpWorkload:
    return DdpWorkload("w", "samples", 1000, 32, 4096, 1e-4, tokens)


def test_ddp_point_counts_all_samples_over_the_slowest_rank_and_names_the_straggler():
    one = build_point("w", 1, 32, "bf16", [(None, summarize([0.09, 0.1, 0.11]), summarize([0.1, 0.1, 0.1]))],
                      None, info(1024))
    assert one.scaling_efficiency == 1.0 and one.throughput_per_s == pytest.approx(320)
    assert one.tokens_per_s == pytest.approx(320 * 1024)
    fast, slow = summarize([0.10, 0.10, 0.10]), summarize([0.12, 0.125, 0.13])
    two = build_point("w", 2, 32, "bf16", [(None, fast, summarize([0.2] * 3)), (None, slow, summarize([0.25] * 3))],
                      one, info())
    assert two.throughput_per_s == pytest.approx(64 / 0.25)
    assert two.scaling_efficiency == pytest.approx(256 / (2 * 320))
    assert two.straggler_rank == 1 and two.compute_step_s == slow and two.step_s.median == 0.25
    assert [r.rank for r in two.ranks] == [0, 1] and two.tokens_per_s is None


def test_ddp_point_of_a_failed_rank_carries_its_status_and_reason():
    point = build_point("w", 2, 32, "bf16", [(None, None, None), (("oom", "CUDA out of memory"), None, None)],
                        None, None)
    assert (point.status, point.reason, point.throughput_per_s) == ("oom", "CUDA out of memory", None)


def test_batch_options_parse_or_name_the_bad_one():
    assert parse_batch_pairs(["gpt-small=64", "resnet50=128"]) == {"gpt-small": 64, "resnet50": 128}
    for bad in ("gpt-small", "gpt-small=0", "=4", "gpt-small=x"):
        with pytest.raises(ValueError, match=f"--batch {bad}"):
            parse_batch_pairs([bad])


def test_ranks_default_to_every_visible_gpu_and_too_few_are_skipped_with_a_reason():
    assert resolve_world(None, None, 4) == (World(4, "nccl"), None)
    assert resolve_world(2, None, 4) == (World(2, "nccl"), None)
    world, reason = resolve_world(None, None, 1)
    assert world is None and "1 GPU visible" in reason and "2 or more" in reason
    world, reason = resolve_world(None, None, 0)
    assert world is None and "no GPU visible" in reason and "gloo" in reason
    with pytest.raises(DistributedOptionError, match="--gpus 8: only 4 GPU"):
        resolve_world(8, None, 4)
    with pytest.raises(DistributedOptionError, match="--gpus 0"):
        resolve_world(0, None, 4)


def test_gloo_runs_cpu_ranks_without_gpus():
    assert resolve_world(None, "gloo", 0) == (World(2, "gloo"), None)
    assert resolve_world(3, "gloo", 0) == (World(3, "gloo"), None)
    assert resolve_world(1, "gloo", 0)[0] is None


def test_children_get_multicast_off_whatever_the_caller_set():
    env = child_env({"NCCL_NVLS_ENABLE": "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "0", "PYTHONPATH": "/x", "A": "b"})
    for name, value in MULTICAST_OFF.items():
        assert env[name] == value
    assert env["PYTHONPATH"].split(":") == [str(ROOT), "/x"] and env["A"] == "b"
    assert env["GLOO_SOCKET_IFNAME"] == "lo"  # one host: gloo over loopback, unless the caller chose
    assert child_env({"GLOO_SOCKET_IFNAME": "eth0"})["GLOO_SOCKET_IFNAME"] == "eth0"
    assert set(MULTICAST_OFF) == {"NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"}


def test_the_launch_is_pytorchs_own_launcher():
    assert build_command("collectors.distributed.ddp", 4, ["--profile", "quick"]) == [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=4",
        "-m", "collectors.distributed.ddp", "--profile", "quick"]


def test_topology_line_of_an_nvswitch_board_and_of_a_pcie_pair():
    switch = [NvLink(i, True, 4, "nvswitch") for i in range(18)]
    pairs = [GpuPair(a, b, 0, "ok", "ok", "SYS (across CPU sockets)") for a in range(4) for b in range(a + 1, 4)]
    hgx = Topology([GpuLinks(i, "NVIDIA H200", switch) for i in range(4)], pairs)
    line = describe_topology(hgx)
    assert line.startswith("4× NVIDIA H200, 18 active NVLinks each (to NVSwitches)")
    assert "P2P over NVLink ok on 6/6 pairs" in line
    pcie = Topology([GpuLinks(0, "L4", []), GpuLinks(1, "L4", [])],
                    [GpuPair(0, 1, 0, "not supported", "ok", "PHB (PCIe host bridge)")])
    assert describe_topology(pcie) == ("2× L4, no active NVLink; P2P over NVLink ok on 0/1 pairs; "
                                       "PCIe path PHB (PCIe host bridge)")
    assert describe_topology(None) == "topology not recorded"
