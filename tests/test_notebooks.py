"""The notebooks run unattended against the local server and make at least one figure."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import couchids

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert {p.name for p in NOTEBOOKS} >= {
        "lifecycle.ipynb",
        "quickstart.ipynb",
        "time-windows.ipynb",
    }


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path, couch_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDANT_URL", couch_url)
    monkeypatch.setenv("CLOUDANT_AUTH_TYPE", "noauth")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    if path.stem in ("time-windows", "lifecycle"):
        assert any("image/png" in out.get("data", {}) for out in outputs), "no figure"


@pytest.mark.parametrize(
    "path", [p for p in NOTEBOOKS if p.stem != "quickstart"], ids=lambda p: p.stem
)
def test_a_notebook_without_a_server_says_what_to_set(
    path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Opened with no server configured, a notebook's first cell fails with couchids'
    sentence naming CLOUDANT_URL (couchids.connect), not the SDK's about IAM profiles."""
    for name in list(os.environ):
        if name.startswith("CLOUDANT_") or name in ("VCAP_SERVICES", "IBM_CREDENTIALS_FILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    notebook = nbformat.read(path, as_version=4)
    first = next(cell.source for cell in notebook.cells if cell.cell_type == "code")
    with pytest.raises(couchids.InvalidArgumentError, match="set CLOUDANT_URL"):
        exec(first, {"__name__": "__main__"})  # the notebook's own code
