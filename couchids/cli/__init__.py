"""The ``couchids`` command (:mod:`couchids.cli.main`), a module per group of subcommands."""
