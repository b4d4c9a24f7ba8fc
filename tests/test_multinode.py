"""Several nodes for real on the CPU: two torchrun launchers (node 0 and node 1, one gloo rank each) meet at
a static rendezvous on localhost; node 0's rank 0 writes documents that record 2 nodes and gloo's TCP
transport. Then the emulation's validation (tests the model against a one-node run) and the parts that
need no processes: NCCL's transport lines, the node options, the torchrun arguments."""

from __future__ import annotations

import math
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from paths import FROZEN, REPO

from collectors.__main__ import main as collect_main
from collectors.distributed.nodes import node_options
from collectors.distributed.transport import parse_connections, transport_from_env
from gpuplan_schema.schema import load_document
from planner.scaling.transfer import validate_transfer

WORKLOAD = f"{REPO / 'examples' / 'user_workload.py'}:build"
COMMON = ["--only", "collectives", "ddp", "--dist-backend", "gloo", "--workload", WORKLOAD, "--batch", "sensor-cnn=8"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_together(commands: list[list[str]], logs: Path, timeout_s: float) -> list[subprocess.CompletedProcess]:
    """Start every launcher at once, each writing to its own log file, and wait for all. Pipes would deadlock:
    waiting on one launcher while the other fills its pipe stalls the pair at their first collective (seen in
    CI: both still running after 170 s)."""
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    paths = [logs / f"launcher{i}.log" for i in range(len(commands))]
    files = [path.open("w", encoding="utf-8") for path in paths]
    try:
        procs = [subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, text=True)
                 for cmd, f in zip(commands, files, strict=True)]
        deadline = time.monotonic() + timeout_s
        try:
            codes = [p.wait(timeout=max(1.0, deadline - time.monotonic())) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    finally:
        for f in files:
            f.close()
    return [subprocess.CompletedProcess(cmd, code, path.read_text(encoding="utf-8"), None)
            for cmd, code, path in zip(commands, codes, paths, strict=True)]


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[subprocess.CompletedProcess]]:
    """Both launchers as separate processes, started together, as two hosts would run them."""
    root = tmp_path_factory.mktemp("nodes")
    endpoint = f"127.0.0.1:{_port()}"
    done = run_together([[sys.executable, "-m", "collectors", *COMMON, "--gpus", "1", "--nnodes", "2",
                          "--node-rank", str(r), "--rdzv-endpoint", endpoint, "--out", str(root / f"node{r}"),
                          "--machine", "two"] for r in (1, 0)], root / "logs", 170)
    return root / "node0" / "two", root / "node1" / "two", done


def test_two_launchers_meet_and_node_0_records_both_nodes_and_their_transport(two_nodes):
    node0, node1, done = two_nodes
    assert [d.returncode for d in done] == [0, 0], [d.stdout[-2000:] for d in done]
    for name in ("collectives", "ddp"):
        launch = load_document(node0 / f"{name}.json").payload.launch
        assert launch.world_size == 2 and launch.node_count == 2
        layout = launch.nodes
        assert (layout.nodes, layout.gpus_per_node, layout.rendezvous) == (2, 1, "static")
        assert (layout.transport, layout.transport_source, layout.intra_node_transport) == \
            ("gloo/tcp", "backend", None)
        assert layout.hostnames == [socket.gethostname()] * 2
    assert not (node1 / "collectives.json").exists()  # rank 0 is on node 0: node 1 writes nothing
    assert "rank 0 ran on another node" in done[0].stdout
    assert "on 2 nodes × 1 via gloo/tcp" in done[1].stdout


@pytest.mark.slow
def test_cpu_emulation_predicts_the_two_node_step_from_one_node_and_the_loopback_bandwidth(two_nodes, tmp_path):
    """Run A: one node, 2 ranks; run B: the two nodes above. B's DDP step from A's per-step cost F and compute
    step plus B's measured loopback all-reduce, bucket by bucket (planner/scaling/transfer.py). The errors are
    printed (docs/multinode.md quotes none: on a shared 2-core CPU the compute step drifts between runs), so the
    prediction is checked for sense and its parts by hand."""
    from planner.scaling.overlap import exposed_s

    assert collect_main([*COMMON, "--gpus", "2", "--out", str(tmp_path), "--machine", "one"]) == 0
    a, b = tmp_path / "one", two_nodes[0]
    docs = [load_document(f / f"{n}.json").payload for f in (a, b) for n in ("ddp", "collectives")]
    (check,) = validate_transfer(*docs)
    print(f"\nCPU emulation: predicted {check.predicted_step_s * 1e3:.2f} ms, measured "
          f"{check.measured_step_s * 1e3:.2f} ms, error {check.error:+.1%}; from B's own compute step "
          f"{check.error_own_compute:+.1%}; F {check.fixed_s * 1e3:.2f} ms, T on B {check.b.sync_s * 1e3:.2f} ms; "
          f"one exposed fraction k {check.exposed_fraction:.2f} gave {check.k_error:+.1%}")
    assert check.workload == "sensor-cnn" and check.fixed_s >= 0 and check.busbw_b > 0 and check.b.sync_s > 0
    assert check.predicted_step_s == pytest.approx(
        check.a.compute_s + exposed_s(check.b.sync_s, check.a.compute_s, check.fixed_s))
    assert math.isfinite(check.error) and math.isfinite(check.error_own_compute)


NCCL_LINES = [  # as NCCL 2.21+ prints them with NCCL_DEBUG=INFO (host:pid:tid prefixes kept)
    "h200:1234:1250 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0",
    "h200:1234:1250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0",
    "h200:1234:1250 [0] NCCL INFO Channel 01/0 : 0[0] -> 2[1] via P2P/CUMEM/read",
    "h200:1234:1250 [0] NCCL INFO Channel 02 : 0[0] -> 3[1] via SHM/direct/direct",
    "h200:1234:1250 [0] NCCL INFO Channel 03/0 : 0[0] -> 2[1] via P2P/CUMEM/read",
    "h200:1234:1250 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 16, bw 40.0/40.0, type NVL/PIX, sameChannels 1",
]


def test_nccl_lines_name_the_transport_between_nodes_and_within_one():
    node_of = {0: 0, 1: 1, 2: 0, 3: 0}
    assert parse_connections(NCCL_LINES, node_of) == ("NET/Socket", "P2P")
    ib = ["x [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA"]
    assert parse_connections(ib, {0: 0, 1: 1}) == ("NET/IB", None)
    assert transport_from_env({"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}) == "NET/Socket"
    assert transport_from_env({"NCCL_NET": "Socket"}) == "NET/Socket" and transport_from_env({}) is None


def test_node_options_become_torchrun_rendezvous_arguments():
    static = node_options(2, 1, None, "node0:29400")
    assert static.torchrun_args() == ["--nnodes", "2", "--node-rank", "1", "--rdzv-backend", "static",
                                      "--rdzv-endpoint", "node0:29400"]
    assert static.writes_here is False and not static.on_loopback
    elastic = node_options(4, None, "job7", "127.0.0.1:29400")
    assert elastic.torchrun_args()[-4:] == ["c10d", "--rdzv-endpoint", "127.0.0.1:29400", "--rdzv-id", "job7"][-4:]
    assert elastic.writes_here is None and elastic.on_loopback
    assert node_options(None, None, None, None) is None


@pytest.mark.parametrize("args, message", [
    (["--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "h:1"], "--node-rank 2: expected 0..1 for --nnodes 2"),
    (["--nnodes", "2", "--node-rank", "0"], "--rdzv-endpoint None: expected HOST:PORT, e.g. node0:29400"),
    (["--nnodes", "2", "--rdzv-endpoint", "h:1"], "--nnodes: give --node-rank R (static rendezvous) or --rdzv-id ID"),
    (["--node-rank", "0", "--rdzv-endpoint", "h:1"], "--nnodes None: expected 1..4096"),
    (["--nnodes", "2", "--node-rank", "0", "--rdzv-endpoint", "h:99999"], "--rdzv-endpoint h:99999: expected"),
])
def test_bad_node_options_are_one_line_and_exit_2(args, message, tmp_path, capsys):
    assert collect_main(["--only", "collectives", "--dist-backend", "gloo", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {message}") and "\n" not in err
    assert not any(tmp_path.iterdir())


def test_report_shows_the_nodes_and_their_transport(two_nodes):
    from gpuplan_schema.results import load_machine
    from planner.render.report import render_report_html
    from planner.report.frame import build_report

    page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", render_report_html(build_report(load_machine(two_nodes[0])))))
    assert (f"Nodes: 2 nodes × 1 rank (host {socket.gethostname()}; static rendezvous); between nodes gloo/tcp "
            "(from gloo pairs ranks over TCP).") in page


def test_a_gpu_run_across_nodes_reads_as_nodes_times_gpus_in_the_report_and_on_the_site():
    """results/h200-2x1-socket (tests/fixtures/two-node): collectives and ddp alone, two one-GPU nodes. The GPU
    comes from the ddp document's per-rank matmul; the label, the report's DDP table and the site's cells say
    2 nodes × 1 GPU, where a one-node run keeps its GPU count."""
    from gpuplan_schema.results import load_machine
    from planner.render.report import render_report_html
    from planner.report.frame import build_report
    from planner.site.index import build_site_index

    machine = load_machine(REPO / "tests" / "fixtures" / "two-node" / "h200-2x1-socket")
    assert machine.environment is None and machine.gpu_name == "NVIDIA H200" and machine.nodes == (2, 1)
    assert machine.device_label == "2 nodes × 1 NVIDIA H200"
    one_node = load_machine(FROZEN / "h200-x2")
    assert one_node.nodes is None and one_node.device_label == "2× NVIDIA H200"
    reports = [build_report(m) for m in (machine, one_node)]
    page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", render_report_html(reports[0])))
    assert "Nodes: 2 nodes × 1 GPU (host vm; static rendezvous); between nodes NET/Socket" in page
    assert " 2 2 nodes × 1 GPU 64 " in page   # the DDP table's GPUs cell at the world size
    rows = {row.machine: row for row in build_site_index([machine, one_node], reports).rows}
    notes = [c.note for c in rows["h200-2x1-socket"].cells if c.note]
    assert any(n.startswith("2 nodes × 1 GPU, bf16") for n in notes) and any("2 nodes × 1 GPU, " in n for n in notes)
    assert any(c.note and c.note.startswith("2 GPUs, bf16") for c in rows["h200-x2"].cells)


def test_documents_from_before_several_nodes_read_as_one_node():
    for name in ("collectives", "ddp"):
        launch = load_document(FROZEN / "h200-x2" / f"{name}.json").payload.launch
        assert launch.nodes is None and launch.node_count == 1


def test_elastic_c10d_rendezvous_numbers_the_nodes_itself_and_one_of_them_writes(tmp_path):
    """--rdzv-id instead of --node-rank: whichever node holds rank 0 writes; the other says so."""
    endpoint = f"127.0.0.1:{_port()}"
    done = run_together([[sys.executable, "-m", "collectors", "--only", "collectives", "--dist-backend", "gloo",
                          "--gpus", "1", "--nnodes", "2", "--rdzv-id", "ci", "--rdzv-endpoint", endpoint,
                          "--out", str(tmp_path / name), "--machine", "el"] for name in ("a", "b")],
                        tmp_path / "logs", 150)
    outputs = [d.stdout for d in done]
    assert [d.returncode for d in done] == [0, 0], [o[-1500:] for o in outputs]
    written = [f for f in (tmp_path / "a" / "el", tmp_path / "b" / "el") if (f / "collectives.json").exists()]
    assert len(written) == 1
    layout = load_document(written[0] / "collectives.json").payload.launch.nodes
    assert (layout.nodes, layout.rendezvous, layout.transport) == (2, "c10d", "gloo/tcp")
    assert sum("rank 0 ran on another node" in o for o in outputs) == 1


def test_rank_0_builds_the_layout_from_every_ranks_report():
    from collectors.distributed.layout import RankReport, build_layout

    reports = [RankReport(0, "a", 0, 2, NCCL_LINES), RankReport(1, "b", 1, 2, []), RankReport(2, "a", 0, 2, []),
               RankReport(3, "a", 0, 2, [])]
    layout = build_layout(reports, "nccl", {"GPUPLAN_RENDEZVOUS": "c10d"})
    assert (layout.nodes, layout.gpus_per_node, layout.hostnames, layout.rendezvous) == (2, 2, ["a", "b"], "c10d")
    # the GRAPH line says the node's ring runs over NVLink: P2P inside a node is NVLink
    assert (layout.transport, layout.transport_source, layout.intra_node_transport) == \
        ("NET/Socket", "nccl-debug", "P2P/NVLink")
    quiet = [RankReport(0, "a", 0, 1, []), RankReport(1, "b", 1, 1, [])]  # the caller chose NCCL_DEBUG=WARN
    forced = build_layout(quiet, "nccl", {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"})
    assert (forced.transport, forced.transport_source) == ("NET/Socket", "environment")
    assert build_layout(quiet, "nccl", {}).transport is None
    one = build_layout([RankReport(0, "a", 0, 2, NCCL_LINES[2:]), RankReport(1, "a", 0, 2, [])], "nccl", {})
    assert (one.nodes, one.transport, one.rendezvous) == (1, None, "standalone")
