"""The ``couchids`` command: :mod:`couchids.cli.main` (the parser, the id subcommands and the
queries; its ``main`` is the entry point) and :mod:`couchids.cli.lifecycle` (count, histogram,
expire, export, tail, rekey)."""
