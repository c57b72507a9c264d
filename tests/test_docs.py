"""The API reference builds from the docstrings with Sphinx, nitpicky and warnings as errors:
a reference to a name that does not exist fails the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_api_reference_builds_without_a_warning(tmp_path: Path) -> None:
    build = subprocess.run(
        [
            *(sys.executable, "-m", "sphinx", "-q", "-n", "-W", "--keep-going", "-b", "html"),
            *("-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    page = (tmp_path / "html" / "api.html").read_text(encoding="utf-8")
    for name in ("couchids.create", "couchids.bulk_create_iter", "couchids.keyed_id"):
        assert f'id="{name}"' in page, f"{name} is documented"
