"""``couchids replicate``: a replication of a time window on the server
(:meth:`couchids.Database.replicate`); ``couchids replication ID``: its state, or cancel it."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from couchids.cli.options import (
    EXIT_OK,
    TIME_HELP,
    add,
    add_form,
    checked,
    say,
    window,
)
from couchids.cli.options import scope as type_scope
from couchids.cli.sources import Source, connect, database
from couchids.core.urls import parse_url
from couchids.errors import ReplicationFailed

if TYPE_CHECKING:
    from couchids.core.replication import ReplicationStatus


def add_commands(commands: Any) -> None:
    """Add ``replicate`` and ``replication`` to ``commands``."""
    _add_replicate(commands)
    _add_replication(commands)


def _add_replicate(commands: Any) -> None:
    p = commands.add_parser(
        "replicate",
        help="replicate the documents made in a time window to another database",
        description="Start a replication, on the server, of the documents made in a window.",
        epilog=f"""\
The server's replicator copies from SOURCE to TARGET the documents of --type (untyped ids by
default; --all-types: every type present now) whose ids were made at a time t with
SINCE <= t < UNTIL (no --until: no end, so a --continuous replication keeps copying new
documents). TARGET is a database on the same server, or a URL (https://user:pass@host/db:
the user:pass goes to the replicator as credentials, never in a URL). The replication is a
document of the server's _replicator database, named couchids-<id>; it goes on if this
command stops, and deleting that document cancels it. A one-shot replication's document is
removed once it completed (its deletion keeps the counts, which couchids replication ID
shows). Needs Apache CouchDB 2+ or Cloudant.

Prints one JSON line: the replication's id, state and counts. One-shot replications are
waited for (--no-wait: print the first state and return); --continuous ones are not
(--wait: until they run). Exit status 1 when the replication failed or cannot run. When a
one-shot replication copied nothing, a note on stderr says why if SOURCE shows it (its ids
are typed and no --type was given, they are of another form, ...), as after an empty read.

TIME is {TIME_HELP}.

examples:
  couchids replicate events events-edge --since 90d --type reading
  couchids replicate shop https://bob:secret@backup.example.com/shop --since 2024-01-01 --all-types
  couchids replicate events events-live --since 1h --type click --continuous
""",
    )
    p.add_argument("source", metavar="SOURCE", help="database name")
    p.add_argument("target", metavar="TARGET", help="database name on this server, or URL")
    add(p, "since", until="default: no end")
    add(p.add_mutually_exclusive_group(), "type", all_types="every type present in SOURCE now")
    p.add_argument(
        "--continuous", action="store_true", help="keep copying new documents until cancelled"
    )
    p.add_argument(
        "--wait",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="wait until done (one-shot, the default) or running (--continuous)",
    )
    add(
        p,
        create_target="create TARGET if it does not exist (the default; --no-create-target: "
        "fail then)",
    )
    p.add_argument(
        "--server-url",
        type=checked(_server_url),
        metavar="URL",
        help="the URL the server reaches itself at, if not CLOUDANT_URL (a proxy, a port mapping)",
    )
    add(p, timeout="starting the replication")
    add_form(p, "of the ids in SOURCE")
    p.set_defaults(run=_replicate, create_target=True)


def _server_url(text: str) -> None:
    parse_url(text, "server_url", role="server")


def _add_replication(commands: Any) -> None:
    p = commands.add_parser(
        "replication",
        help="show or cancel a replication that couchids replicate started",
        description="Print the state and counts of a replication, or cancel it.",
        epilog="""\
ID is what couchids replicate printed (couchids-<id>, a document of the server's _replicator
database). Prints one JSON line: its state (initializing, running, pending, crashing, error,
failed, completed, or cancelled once its document is deleted) and counts; a completed one-shot
replication's document is removed when it is first seen completed, and it still shows as
completed with its counts. With --cancel, whether it was still there to cancel. Cancelling
twice is no error; an ID that no replication on the server ever had is (exit status 1), shown
or cancelled.

examples:
  couchids replication couchids-001xWdCU0WfykU1Ya0aA02TunP3bWVEA
  couchids replication couchids-001xWdCU0WfykU1Ya0aA02TunP3bWVEA --cancel
""",
    )
    p.add_argument("doc_id", metavar="ID", help="the replication's id")
    p.add_argument("--cancel", action="store_true", help="stop it (delete its document)")
    add(p, timeout="the command")
    p.set_defaults(run=_replication)


def _replicate(args: argparse.Namespace) -> int:
    start, end = window(args)
    scope = type_scope(args)
    db = database(args, args.source)
    job = db.replicate(
        args.target,
        start,
        None if args.until is None else end,
        type=scope,
        continuous=args.continuous,
        create_target=args.create_target,
        server_url=args.server_url,
    )
    wait = (not args.continuous) if args.wait is None else args.wait
    (doc_id,) = job.doc_ids
    if wait:
        try:
            now_status = job.wait()
        except KeyboardInterrupt:
            say(
                f"replication {doc_id} goes on on the server; cancel it with "
                f"couchids replication {doc_id} --cancel"
            )
            raise
        except ReplicationFailed as exc:  # what to do next, in the command's words
            cancel = f"cancel it with couchids replication {doc_id} --cancel"
            raise ReplicationFailed(str(exc).replace("cancel() it", cancel), exc.status) from exc
    else:
        now_status = job.status(timeout=args.timeout)
    print(_line(doc_id, now_status))
    if now_status.state == "completed" and not now_status.docs_written:
        # Nothing copied: the note a read prints after an empty answer.
        Source(db, scope, db.form).note_empty()
    if args.continuous:
        say(f"replication {doc_id} runs until cancelled: couchids replication {doc_id} --cancel")
    return EXIT_OK


def _replication(args: argparse.Namespace) -> int:
    from couchids.core import replication
    from couchids.core.policy import RetryPolicy
    from couchids.drivers.blocking import check_client, known_facts
    from couchids.drivers.blocking import run as run_program

    client = check_client(connect())
    operation = "cancel" if args.cancel else "status"
    policy = RetryPolicy.within(args.timeout, operation)
    known, ids = known_facts(client), [args.doc_id]
    if args.cancel:
        found = run_program(client, replication.cancel(known, ids, policy))
        print(json.dumps({"replication": args.doc_id, "cancelled": found}))
    else:
        print(_line(args.doc_id, run_program(client, replication.status(known, ids, policy))))
    return EXIT_OK


def _line(doc_id: str, status: ReplicationStatus) -> str:
    shown = ("state", "docs_read", "docs_written", "doc_write_failures")
    return json.dumps({"replication": doc_id, **{name: getattr(status, name) for name in shown}})
