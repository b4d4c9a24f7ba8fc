"""`planner.load_results`: the tidy table as a typed pandas DataFrame, and the Parquet export written from it."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from paths import FIXTURES, FROZEN

from gpuplan_schema.results import load_machine
from gpuplan_schema.schema import DocumentError
from planner import load_results
from planner.cli import main
from planner.export.rows import COLUMNS
from planner.export.tidy import iter_tidy_rows

H100 = FIXTURES / "h100-80gb"


def test_columns_in_the_export_order_and_typed():
    df = load_results(FIXTURES)
    assert tuple(df.columns) == COLUMNS
    assert {c: str(df[c].dtype) for c in ("batch", "value", "spread", "n")} == \
        {"batch": "Int64", "value": "float64", "spread": "float64", "n": "Int64"}
    assert isinstance(df["status"].dtype, pd.CategoricalDtype)
    assert list(df["status"].cat.categories)[:4] == ["ok", "oom", "skipped", "error"]
    assert df["status"].notna().all()  # every status of the fixtures is a category (none turned into NaN)


def test_one_row_per_tidy_row_with_the_same_values():
    rows = list(iter_tidy_rows(load_machine(H100)))
    df = load_results(H100)
    assert len(df) == len(rows)
    for row, record in zip(rows, df.itertuples(index=False), strict=True):
        assert record.metric == row.metric and record.status == row.status
        assert (pd.isna(record.value) and row.value is None) or record.value == row.value
        assert (pd.isna(record.n) and row.n is None) or record.n == row.n
        assert record.gpu == row.gpu and record.precision == row.precision  # None stays None in text columns


def test_a_results_root_gives_every_machine_and_answers_the_readme_question():
    df = load_results(FROZEN)
    assert set(df["machine"]) == {p.name for p in FROZEN.iterdir() if p.is_dir() and any(p.glob("*.json"))}
    sizes = df.groupby(["gpu", "workload"]).size()
    assert sizes[("NVIDIA H100 80GB HBM3", "gpt-small")] > 0
    h100_bf16 = df.query("machine == 'h100-80gb' and metric == 'matmul_flops_per_s' and precision == 'bf16'")
    assert 500e12 < h100_bf16["value"].item() < 989e12  # measured under the dense datasheet figure


def test_a_bad_folder_raises_the_document_error(tmp_path):
    with pytest.raises(DocumentError, match="no such directory"):
        load_results(tmp_path / "nowhere")


def test_importing_planner_does_not_import_pandas():
    code = "import sys, planner, planner.plan.plan; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_parquet_round_trips_the_typed_frame(tmp_path, capsys):
    pytest.importorskip("pyarrow")  # `make setup` installs it (the parquet extra); a bare install may not
    out = tmp_path / "tidy.parquet"
    assert main(["export", str(FIXTURES), "--parquet", "-o", str(out)]) == 0
    back, frame = pd.read_parquet(out), load_results(FIXTURES)
    assert f"wrote {len(frame)} rows to {out}" in capsys.readouterr().out
    for column in ("batch", "value", "spread", "n"):
        pd.testing.assert_series_equal(back[column], frame[column])
    assert back["status"].astype(str).tolist() == frame["status"].astype(str).tolist()


def test_parquet_without_pyarrow_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError
    assert main(["export", str(FIXTURES), "--parquet", "-o", str(tmp_path / "t.parquet")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "gpuplan: error: --parquet needs pyarrow (pip install 'gpuplan[parquet]')\n"
    assert not (tmp_path / "t.parquet").exists()


def test_parquet_to_standard_output_is_refused(capsys):
    assert main(["export", str(FIXTURES), "--parquet"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
