"""Every notebook runs top to bottom and shows at least one picture (skipped without a
Jupyter kernel). ``WCOJ_NOTEBOOK_SMALL=1`` makes the notebooks that measure run tiny sizes."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(path, as_version=4)
    if "shared/data" in path.read_text() and not (ROOT.parent / "shared" / "data").is_dir():
        pytest.skip("the notebook reads ../shared/data, which is absent")
    monkeypatch.setenv("WCOJ_NOTEBOOK_SMALL", "1")  # the kernel inherits the environment
    # run from the notebook's folder, as a reader would; outputs are not written back
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if {"image/png", "image/svg+xml"} & set(o.get("data", {}))]
    assert images, f"{path.name} showed no image"
