"""Sphinx configuration: the API reference, built from couchids' docstrings.

Built by tests/test_docs.py with ``-n -W`` (nitpicky, warnings are errors), so a reference to
a name that does not exist fails the test suite.
"""

from __future__ import annotations

project = "couchids"
author = "couchids contributors"
copyright = "couchids contributors"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
exclude_patterns = ["_build"]
html_theme = "alabaster"
# Names from outside couchids, which the build has no inventory for (it never reaches the
# network): the ibmcloudant client, the standard library's abstract types, type aliases.
nitpick_ignore_regex = [
    ("py:class", r"(ibmcloudant|ibm_cloud_sdk_core|httpx)\..*|CloudantV1|couchids\.seq\.SeqForm"),
    ("py:class", r"(collections\.abc|typing|datetime|re)\..*|timedelta|Format|list\[tuple\[str"),
    # Internal plumbing named in signatures (a deadline passed between couchids' own modules).
    ("py:class", r"couchids\.server\..*"),
]
