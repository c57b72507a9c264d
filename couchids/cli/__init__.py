"""The ``couchids`` command: :mod:`couchids.cli.main` (the parser and the entry point ``main``),
the subcommands by group (:mod:`~couchids.cli.ids`: new, decode; :mod:`~couchids.cli.reading`:
latest, window, count, histogram; :mod:`~couchids.cli.lifecycle`: expire, export, tail, rekey;
:mod:`~couchids.cli.replicating`: replicate, replication; :mod:`~couchids.cli.series`: series),
the options they share (:mod:`~couchids.cli.options`) and what the server commands share
(:mod:`~couchids.cli.sources`)."""
