"""The drivers: what sends the requests of couchids' programs (:mod:`couchids.core`).

- :mod:`couchids.drivers.blocking`: the blocking driver, on the caller's ``ibmcloudant``
  ``CloudantV1`` client (and its ``requests`` session), with the mapping of its failures to
  couchids errors that both drivers use.
- :mod:`couchids.drivers.aio`: the asyncio driver, :class:`~couchids.aio.AsyncClient`, on
  ``httpx``, authenticated by ``ibmcloudant``'s authenticators.
- :mod:`couchids.drivers.config`, :mod:`couchids.drivers.redact`: credentials read from the
  configuration, and their masking in every message, log record and traceback.
- :mod:`couchids.drivers.connecting`: :func:`couchids.connect`.
- :mod:`couchids.drivers.log`: the log records of requests and retries.
"""
