"""Tidy export of the real fixtures: one row per measured figure, stable columns, CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest
from paths import FIXTURES

from gpuplan_schema.payloads import PAYLOADS
from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import DocumentError
from planner.export.frame import load_frame, rows_frame, to_csv, to_json
from planner.export.rows import COLUMNS, EXPORTERS, TidyRow
from planner.export.tidy import iter_tidy_rows

H100 = FIXTURES / "h100-80gb"
CPU = FIXTURES / "cpu-test"
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")


def rows_by(rows: list[TidyRow], metric: str) -> dict[str | None, TidyRow]:
    return {r.precision: r for r in rows if r.metric == metric}


def test_columns_are_the_documented_ones_in_order():
    assert COLUMNS == ("machine", "gpu", "collector", "workload", "precision", "batch", "variant",
                       "metric", "value", "unit", "spread", "n", "status")


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
    rows = [TidyRow(machine=text, gpu=text, collector="ceilings", workload=text, variant=text, metric="step_s",
                    value=-0.034, unit=text, spread=-1e-9, batch=-1, n=3) for text in formulas]
    rows.append(TidyRow(machine="a-b", gpu="H100 = fast", collector="ceilings", metric="step_s", value=0.5))
    rows.append(TidyRow(machine="box\r=cmd", gpu="x\r\ny", collector="ceilings", metric="step_s"))  # CR inside
    parsed = list(csv.DictReader(io.StringIO(to_csv(rows_frame(rows)), newline="")))
    assert len(parsed) == len(rows)  # the CR is quoted: it starts no row of its own (and so no bare =cmd cell)
    assert (parsed[-1]["machine"], parsed.pop()["gpu"]) == ("box\r=cmd", "x\r\ny")  # a CRLF in a cell is data
    for text, record in zip(formulas, parsed, strict=False):
        for column in ("machine", "gpu", "workload", "variant", "unit"):
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
