"""The ids: every id form (:mod:`couchids.idforms.forms` and the modules of each family),
their encodings, times, types, :func:`~couchids.decode`, typed and keyed ids. Pure: nothing
here sends a request, reads configuration or imports an HTTP library or the SDK."""
