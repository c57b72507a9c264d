"""The module-level operations of couchids 0.1, kept for one release over the handles.

``couchids.latest(client, db, ...)`` is now ``couchids.Database(client, db).latest(...)``, and
so for every operation; ``couchids.aio.latest(client, db, ...)`` is
``couchids.aio.AsyncDatabase(client, db).latest(...)``. Each function here warns with a
:class:`DeprecationWarning` and calls the method, so it answers as the method does. The
parameters renamed for one vocabulary are still taken under their old names here:
``page_size`` (now ``batch_size``), ``workers`` (``parallel``), ``now`` (``timestamp``) and
``since`` (``since_seq``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["OPERATIONS", "RENAMED", "operations"]

#: Old parameter names, by operation: ``{old: new}``.
RENAMED: Final[Mapping[str, Mapping[str, str]]] = {
    "window": {"page_size": "batch_size"},
    "export": {"page_size": "batch_size"},
    "archive": {"page_size": "batch_size"},
    "histogram": {"workers": "parallel"},
    "create_short": {"now": "timestamp"},
    "follow": {"since": "since_seq"},
}
#: The operations of 0.1's ``couchids`` and ``couchids.aio`` modules.
OPERATIONS: Final = (
    "latest",
    "window",
    "create",
    "bulk_create",
    "bulk_create_iter",
    "create_short",
    "count",
    "histogram",
    "expire",
    "export",
    "archive",
    "follow",
    "rekey",
)


def operations(handle: Callable[..., Any], module: str, names: tuple[str, ...]) -> dict[str, Any]:
    """The deprecated functions ``names`` of ``module``, each calling the method of the same
    name on ``handle(client, db)``."""
    return {name: _shim(handle, module, name) for name in names}


def _shim(handle: Callable[..., Any], module: str, name: str) -> Callable[..., Any]:
    renamed = RENAMED.get(name, {})
    kind = handle.__name__

    def operation(client: Any, db: str, /, *args: Any, **options: Any) -> Any:
        warnings.warn(
            f"{module}.{name}(client, db, ...) is deprecated: use "
            f"{module}.{kind}(client, db).{name}(...)",
            DeprecationWarning,
            stacklevel=2,
        )
        for old, new in renamed.items():
            if old in options:
                options[new] = options.pop(old)
        return getattr(handle(client, db), name)(*args, **options)

    operation.__name__ = operation.__qualname__ = name
    operation.__module__ = module
    operation.__doc__ = (
        f"Deprecated: ``{module}.{kind}(client, db).{name}(...)``, which see; old parameter "
        "names are taken (see :mod:`couchids.deprecated`)."
    )
    return operation
