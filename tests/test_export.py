"""Tidy export of the real fixtures: one row per measured figure, stable columns, CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest
from paths import FIXTURES, RESULTS

from gpuplan_schema.payloads import PAYLOADS
from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import DocumentError
from planner.export.frame import load_frame, rows_frame, to_csv, to_json
from planner.export.rows import COLUMNS, EXPORTERS, KEY, TidyRow, variant_settings
from planner.export.tidy import iter_tidy_rows

H100 = FIXTURES / "h100-80gb"
CPU = FIXTURES / "cpu-test"
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")


def rows_by(rows: list[TidyRow], metric: str) -> dict[str | None, TidyRow]:
    return {r.precision: r for r in rows if r.metric == metric}


def test_columns_are_the_documented_ones_in_order():
    assert COLUMNS == ("machine", "gpu", "gpu_count", "nodes", "collector", "workload", "op", "precision", "batch",
                       "seq_len", "sweep", "compile", "layout", "cudnn_benchmark", "allocator", "capped", "workers",
                       "prefetch", "pin", "persistent", "epoch", "rank", "metric", "value", "unit", "spread", "n",
                       "status", "bound")
    assert KEY == tuple(c for c in COLUMNS if c not in ("gpu", "value", "unit", "spread", "n", "status"))


def test_every_document_kind_has_an_exporter():
    assert set(PAYLOADS) <= set(EXPORTERS)


def test_h100_matmul_rows_carry_the_document_figures():
    machine = load_machine(H100)
    rows = list(iter_tidy_rows(machine))
    matmul = rows_by(rows, "matmul_flops_per_s")
    assert tuple(matmul) == DTYPES
    for m in machine.ceilings.matmul:
        row = matmul[m.dtype]
        assert (row.value, row.spread, row.n) == (m.flops_per_s.median, m.flops_per_s.iqr, m.flops_per_s.n)
        assert (row.unit, row.status, row.machine) == ("FLOP/s", "ok", "h100-80gb")
        assert row.gpu == "NVIDIA H100 80GB HBM3" and row.collector == "ceilings"
    assert 700e12 < matmul["bf16"].value < 989e12  # the measured peak sits under the dense datasheet


def test_h100_bandwidth_and_latency_rows():
    machine = load_machine(H100)
    rows = {r.metric: r for r in iter_tidy_rows(machine) if r.precision is None}
    copy = next(b for b in machine.ceilings.memory if b.name == "copy")
    assert rows["memory_copy_bytes_per_s"].value == copy.bytes_per_s.median
    assert rows["memory_copy_bytes_per_s"].unit == "B/s"
    for name in ("memory_read", "memory_write", "h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable"):
        assert rows[f"{name}_bytes_per_s"].status == "ok"
    assert rows["launch_latency_s"].value == machine.ceilings.launch_latency_s.median
    assert rows["launch_latency_s"].unit == "s"


def test_cpu_fixture_marks_missing_dtypes_and_links_skipped():
    rows = list(iter_tidy_rows(load_machine(CPU)))
    matmul = rows_by(rows, "matmul_flops_per_s")
    for dtype in ("tf32", "fp8"):
        assert matmul[dtype].status == "skipped"
        assert (matmul[dtype].value, matmul[dtype].spread, matmul[dtype].n) == (None, None, None)
    assert matmul["fp32"].status == "ok" and matmul["fp32"].value > 1e9
    link_rows = [r for r in rows if r.metric.startswith(("h2d_", "d2h_"))]
    assert len(link_rows) == 4 and {r.status for r in link_rows} == {"skipped"}
    assert {r.gpu for r in rows} == {None}  # a CPU machine has no GPU cell


def test_environment_contributes_no_rows():
    assert set(load_frame([FIXTURES])["collector"]) == {"ceilings"}


def test_results_root_and_machine_folder():
    assert set(load_frame([FIXTURES])["machine"]) == {"h100-80gb", "cpu-test"}
    assert set(load_frame([H100])["machine"]) == {"h100-80gb"}


def test_csv_parses_back_exactly():
    rows = [row for m in ("cpu-test", "h100-80gb") for row in iter_tidy_rows(load_machine(FIXTURES / m))]
    parsed = list(csv.reader(io.StringIO(to_csv(load_frame([FIXTURES])))))
    assert tuple(parsed[0]) == COLUMNS
    assert len(parsed) == len(rows) + 1
    for row, cells in zip(rows, parsed[1:], strict=True):
        record = dict(zip(COLUMNS, cells, strict=True))
        assert record["metric"] == row.metric
        if row.value is None:
            assert record["value"] == "" and record["n"] == ""
        else:
            assert float(record["value"]) == row.value and int(record["n"]) == row.n
        assert record["workload"] == "" and record["batch"] == ""


def test_csv_guards_text_a_spreadsheet_would_run_and_leaves_numbers_alone():
    """Text cells starting with = + - @ tab or CR get OWASP's leading quote; numbers, even negative, do not."""
    formulas = ['=HYPERLINK("http://x","y")', "+cmd", "-2+3", "@SUM(1+1)", "\t=1+1", "\r=1+1"]
    rows = [TidyRow(machine=text, gpu=text, gpu_count=1, nodes=None, collector="ceilings", workload=text, op=text,
                    metric="step_s", value=-0.034, unit=text, spread=-1e-9, batch=-1, n=3) for text in formulas]
    rows.append(TidyRow(machine="a-b", gpu="H100 = fast", gpu_count=1, nodes=None, collector="ceilings",
                        metric="step_s", value=0.5))
    rows.append(TidyRow(machine="box\r=cmd", gpu="x\r\ny", gpu_count=1, nodes=None, collector="ceilings",
                        metric="step_s"))  # CR inside
    parsed = list(csv.DictReader(io.StringIO(to_csv(rows_frame(rows)), newline="")))
    assert len(parsed) == len(rows)  # the CR is quoted: it starts no row of its own (and so no bare =cmd cell)
    assert (parsed[-1]["machine"], parsed.pop()["gpu"]) == ("box\r=cmd", "x\r\ny")  # a CRLF in a cell is data
    for text, record in zip(formulas, parsed, strict=False):
        for column in ("machine", "gpu", "workload", "op", "unit"):
            assert record[column] == "'" + text  # read back as the guarded text, quotes and CR intact
        assert (record["value"], record["spread"], record["batch"], record["n"]) == ("-0.034", "-1e-09", "-1", "3")
        assert float(record["value"]) == -0.034
    assert (parsed[-1]["machine"], parsed[-1]["gpu"]) == ("a-b", "H100 = fast")  # not at the start: unchanged
    assert to_csv(load_frame([FIXTURES])).count("'") == 0  # plain names stay as they are


def test_csv_records_end_in_a_line_feed():
    text = to_csv(load_frame([FIXTURES]))
    assert "\r" not in text and text.endswith("\n")
    assert text.count("\n") == len(load_frame([FIXTURES])) + 1


def test_json_uses_numbers_and_nulls():
    frame = load_frame([CPU])
    records = json.loads(to_json(frame))
    assert [list(r) for r in records] == [list(COLUMNS)] * len(frame)
    tf32 = next(r for r in records if r["metric"] == "matmul_flops_per_s" and r["precision"] == "tf32")
    assert tf32["value"] is None and tf32["gpu"] is None and tf32["status"] == "skipped"
    fp32 = next(r for r in records if r["metric"] == "matmul_flops_per_s" and r["precision"] == "fp32")
    assert isinstance(fp32["value"], float) and isinstance(fp32["n"], int)


def test_a_bad_document_fails_the_whole_export(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "results")
    (tmp_path / "results" / "cpu-test" / "ceilings.json").write_text("{", encoding="utf-8")
    with pytest.raises(DocumentError, match="cpu-test"):
        load_frame([tmp_path / "results"])


# ── the key: typed settings, one row per key ─────────────────────────────────────────────────

QUICK = FIXTURES.parent / "results-quick"
MULTIGPU = FIXTURES.parent / "multigpu"
COMMITTED = sorted(p for p in RESULTS.iterdir() if p.is_dir() and any(p.glob("*.json")))


def duplicated_keys(frame):
    return frame[frame.duplicated(list(KEY), keep=False)]


@pytest.mark.parametrize("folder", [FIXTURES, QUICK, MULTIGPU], ids=lambda p: p.name)
def test_the_key_identifies_every_row_of_the_fixtures(folder):
    frame = load_frame([folder])
    assert len(frame) > 0 and duplicated_keys(frame).empty


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda p: p.name)
def test_committed_results_export_key_is_unique(folder):
    """Reads the committed results/: in every folder the key columns identify each row (no two share them)."""
    dups = duplicated_keys(load_frame([folder]))
    assert dups.empty, dups[list(KEY)].head().to_string()


def test_committed_results_pivot_over_the_key_never_averages_two_measurements():
    """Reads the committed results/: the issue's pivot (H100 resnet50 bf16 batch 256) once per setting."""
    df = load_frame([RESULTS])
    points = df.query("collector == 'workloads' and workload == 'resnet50' and precision == 'bf16' and batch == 256"
                      " and metric == 'throughput_per_s' and machine == 'h100-80gb'")
    index = ["sweep", "compile", "layout", "cudnn_benchmark", "allocator"]
    assert points.pivot_table(index=index, values="value", aggfunc="count")["value"].max() == 1
    by = points.set_index(index)["value"]
    eager = by[("variant", False, "default", True, "default")]
    compiled = by[("variant", True, "default", True, "default")]
    nchw = by[("variant", False, "contiguous", False, "default")]
    assert nchw < eager < compiled  # three measurements the old `variant` column let a pivot average


def test_committed_results_give_the_gpu_count_of_each_figure():
    """Reads the committed results/: a DDP run's rows say on how many GPUs, a single-GPU figure says 1."""
    df = load_frame([RESULTS])
    assert set(df.loc[df["machine"] == "h200-x2", "gpu_count"].dropna()) == {1, 2}
    assert set(df.loc[(df["machine"] == "h200-x4") & (df["collector"] == "ddp"), "gpu_count"].dropna()) >= {1, 4}
    assert df.loc[df["machine"] == "vm-cpu", "gpu_count"].isna().all()
    assert (df.loc[df["collector"] == "workloads", "gpu_count"] == 1).all()
    assert set(df["status"].astype(str)) <= {"ok", "oom", "skipped", "error"}


def test_variant_names_become_typed_settings():
    assert variant_settings("default") == dict(compile=False, layout="default", cudnn_benchmark=True,
                                               allocator="default")
    assert variant_settings("compile+contiguous+no_cudnn_benchmark") == dict(
        compile=True, layout="contiguous", cudnn_benchmark=False, allocator="default")
    assert variant_settings("no_cudnn_benchmark+expandable_segments")["allocator"] == "expandable_segments"
    with pytest.raises(ValueError, match="fp8_everything"):
        variant_settings("compile+fp8_everything")


def test_a_variant_the_export_does_not_know_is_one_document_error(tmp_path):
    folder = tmp_path / "h100-quick"
    shutil.copytree(QUICK / "h100-quick", folder)
    path = next(folder.glob("workload-*.json"))
    path.write_text(path.read_text(encoding="utf-8").replace('"variant": "default"', '"variant": "warp9"', 1),
                    encoding="utf-8")
    with pytest.raises(DocumentError, match=r"workload-.*\.json: variant: .*warp9"):
        load_frame([folder])


def test_settings_and_counts_are_typed_and_json_keeps_booleans():
    frame = load_frame([QUICK])
    assert {str(frame[c].dtype) for c in ("compile", "cudnn_benchmark", "pin", "capped")} == {"boolean"}
    assert {str(frame[c].dtype) for c in ("gpu_count", "seq_len", "workers", "rank")} == {"Int64"}
    records = json.loads(to_json(frame))
    step = next(r for r in records if r["metric"] == "step_s")
    assert step["compile"] is False and step["gpu_count"] == 1 and step["sweep"] == "variant"
