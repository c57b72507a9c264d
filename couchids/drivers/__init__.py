"""The drivers: the only code that sends couchids' requests (:mod:`couchids.drivers.blocking`
on the caller's ``ibmcloudant`` client, :mod:`couchids.drivers.aio` on ``httpx``), and what
both need: connecting, credentials and their masking, the TLS check, the log records.
"""
