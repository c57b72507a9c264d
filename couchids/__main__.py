"""``python -m couchids``: the ``couchids`` command."""

from couchids.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
