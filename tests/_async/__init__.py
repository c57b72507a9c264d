"""The operation tests, written once against the asyncio API; scripts/unasync.py generates their
blocking twins in tests/_sync."""
