"""The I/O-free core: every couchids operation as a program that says which request to send
next and what an answer means (see :mod:`couchids.core.effects`). Nothing here opens a
connection, starts a thread or sleeps; ``couchids.drivers.blocking`` (blocking) and ``couchids.aio``
(asyncio) carry the programs out. tests/test_layout.py keeps it so.
"""
