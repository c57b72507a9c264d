"""Seeing, and changing, the requests couchids sends through a client's ``send``.

Every couchids request goes through ``CloudantV1.send`` (couchids.drivers.blocking); a test
wraps it to count requests, act between them, or answer one itself.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import requests
from ibm_cloud_sdk_core import DetailedResponse
from ibmcloudant.cloudant_v1 import CloudantV1

#: ``hook(request, send)``: ``request`` is the SDK's prepared request (a dict with ``method``,
#: ``url``, ``params``, ``data``); ``send()`` sends it and returns the SDK's answer.
Hook = Callable[[dict[str, Any], Callable[[], Any]], Any]


def hook(client: CloudantV1, through: Hook) -> Callable[..., Any]:
    """Route the requests of ``client`` through ``through`` from now on; return the real send."""
    real = client.send

    def send(request: dict[str, Any], **kwargs: Any) -> Any:
        return through(request, lambda: real(request, **kwargs))

    client.send = send  # type: ignore[method-assign]
    return real


@contextmanager
def intercepted(client: CloudantV1, through: Hook) -> Iterator[None]:
    """Route the requests of ``client`` through ``through`` while inside."""
    real = hook(client, through)
    try:
        yield
    finally:
        client.send = real  # type: ignore[method-assign]


def path_of(request: dict[str, Any]) -> str:
    return urlsplit(str(request["url"])).path


def body_of(request: dict[str, Any]) -> Any:
    """The JSON body of a prepared request (the SDK may have gzipped it)."""
    data = request.get("data")
    if data is None:
        return None
    if hasattr(data, "read"):
        data = data.read()
    if request["headers"].get("content-encoding") == "gzip":
        data = gzip.decompress(data)
    return json.loads(data)


def answer(status: int, body: Any) -> DetailedResponse:
    """An answer as ``CloudantV1.send(..., stream=True)`` gives it."""
    response = requests.Response()
    response.status_code = status
    response._content = json.dumps(body).encode()
    response._content_consumed = True  # read, as requests leaves an answer it has read
    response.headers["Content-Type"] = "application/json"
    return DetailedResponse(response=response, headers=response.headers, status_code=status)
