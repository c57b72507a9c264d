"""Sphinx configuration of couchids' documentation site.

Built by tests/test_docs.py with ``-n -W`` (nitpicky, warnings are errors), so a reference to
a name that does not exist fails the test suite. By hand, from the checkout::

    .venv/bin/sphinx-build -n -W docs out

The user guide (``docs/guide/*.md``), the FAQ and the development page are written here (the
README is a landing page that links them), the changelog includes CHANGELOG.md, and the
command-line and API references are written from the code by ``docs/_ext/couchids_docs.py``:
none of them is a copy that can drift.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "couchids"
author = "couchids contributors"
copyright = "couchids contributors"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_parser", "couchids_docs"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# couchids_docs reads Google-style docstrings itself, all but those of attributes and
# constants (see google_docstrings there); napoleon stays for its fields (Keyword Arguments).
napoleon_google_docstring = False
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
exclude_patterns = ["_build", "_ext"]
html_theme = "alabaster"
html_title = "couchids"
# Wide enough for the command's help and the pages' code lines (100 characters).
html_theme_options = {
    "description": "Time-sortable ids for CouchDB and Cloudant",
    "page_width": "1240px",
    "sidebar_width": "240px",
    "code_font_size": "0.8em",
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
# Anchors for headings down to ###, so that a page can link a section of another
# (guide/querying.md#every-type-at-once).
myst_heading_anchors = 3
# Names from outside couchids, which the build has no inventory for (it never reaches the
# network): the ibmcloudant client, the standard library's abstract types, type aliases.
nitpick_ignore_regex = [
    (
        "py:class",
        r"(ibmcloudant|ibm_cloud_sdk_core|httpx)\..*|CloudantV1|couchids\.idforms\.seq\.SeqForm",
    ),
    ("py:class", r"(collections\.abc|typing|datetime|re)\..*|timedelta|Format|list\[tuple\[str"),
    # The fields of the series' reports and routing (couchids.core.series) and of a
    # replication's status (couchids.core.replication), as autodoc splits their annotations.
    ("py:class", r"datetime|dict\[(int|str \| None|str)"),
    # Internal plumbing named in signatures (a deadline passed between couchids' own modules).
    ("py:class", r"couchids\.drivers\.(blocking|aio)\..*"),
    # The streaming answer of window (couchids.drivers: Rows, AsyncRows), named bare in the
    # handles' annotations.
    ("py:class", r"(Async)?Rows"),
    # IdForm.try_read names NOT_READ without its module, and IdForm is documented as
    # couchids.IdForm: the name is couchids.idforms.idform.NOT_READ, documented on the ids page.
    ("py:data", r"NOT_READ"),
]

# Which API page each public name goes on, by the module that defines it (the longest prefix
# wins). Exceptions go to "errors", couchids.aio's names to "aio", and a name of a module not
# listed here to "other" (the API index), so a new name is documented somewhere at once.
couchids_api_pages = {
    "ids": [
        "couchids.idforms.kuuid",
        "couchids.idforms.v7",
        "couchids.idforms.forms",
        "couchids.idforms.idform",
        "couchids.idforms.decode",
        "couchids.idforms.typed",
        "couchids.idforms.keyed",
        "couchids.idforms.tid62",
        "couchids.idforms.base36",
        "couchids.idforms.ulid",
        "couchids.idforms.couchid",
        "couchids.idforms.uuid464",
        "couchids.idforms.seq",
        "couchids.ids",
    ],
    "queries": [
        "couchids.drivers.connecting",
        "couchids.database",
        "couchids.core.options",
        "couchids.core.explaining",
        "couchids.idforms.doctypes",
        "couchids.errors",
        "couchids.core.writes",
        "couchids.core.windows",
        "couchids.core.pages",
    ],
    "lifecycle": [
        "couchids.core.counting",
        "couchids.core.expiry",
        "couchids.core.exporting",
        "couchids.core.following",
        "couchids.core.rekeying",
        "couchids.core.scan",
    ],
    "series": ["couchids.series", "couchids.core.series"],
    "replication": ["couchids.replication", "couchids.core.replication"],
}
