"""The subcommands of the data lifecycle: ``expire``, ``export`` (of a series too), ``tail`` and
``rekey``. Long runs show a progress bar on a terminal's stderr (nothing elsewhere), and Ctrl-C
stops them with the resume point printed.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import re
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from couchids.cli.options import (
    EXIT_OK,
    TIME_HELP,
    add,
    add_form,
    checked,
    close,
    count_of,
    in_flags,
    json_line,
    moment,
    progress,
    say,
    seconds,
    some,
    time_flag,
)
from couchids.cli.options import window as time_window
from couchids.cli.sources import SERIES_READS, database, open_source, say_kept, source_args
from couchids.core.arguments import sequence
from couchids.core.expiry import DEFAULT_EXPIRE_BATCH
from couchids.core.rekeying import DEFAULT_REKEY_BATCH
from couchids.core.windows import DEFAULT_PAGE_SIZE
from couchids.errors import InvalidArgumentError
from couchids.idforms.times import now_ms

if TYPE_CHECKING:
    from couchids.core.scan import Checkpoint

#: How often ``tail --for`` asks for new changes. A long poll cannot be cut short at the end
#: of the time: PouchDB Server holds one open until a change comes, whatever its timeout.
TAIL_POLL_SECONDS = 1.0

EXPIRE_EPILOG = f"""\
Deletes the documents of --type whose ids were made before --before; without --yes it only
counts them. Safe to run again, also after Ctrl-C, which prints the --after ID to resume with.
A document changed meanwhile is kept and named on stderr, and the exit status is then 1. For a
series (a database per period), couchids series expire drops whole databases instead.

TIME is {TIME_HELP}.

examples:
  couchids expire shop --before 90d --type order           how many would go
  couchids expire shop --before 90d --type order --yes     delete them
"""

EXPORT_EPILOG = f"""\
Writes the documents made at a time t with SINCE <= t < UNTIL, oldest first, as JSON lines,
or with --csv FIELDS as CSV of those fields. Ctrl-C prints the --after ID to resume with.

{SERIES_READS}

TIME is {TIME_HELP}.

examples:
  couchids export shop --since 2024-05-01 --until 2024-06-01 --type order > may.jsonl
  couchids export shop --since 7d --type order --csv _id,total > week.csv
  couchids export shop --since 2024-05-01 --type order --after ID >> may.jsonl
  couchids export --series events --period month --since 2026-01-01 --type reading > 2026.jsonl
"""

TAIL_EPILOG = f"""\
Prints the documents of --type stored after the _changes sequence --since-seq (default: from
now on) as JSON lines, oldest first in each batch, and stops once caught up. -f keeps waiting
for more; --for DURATION (600 seconds, 10m) waits that long (asking every
{TAIL_POLL_SECONDS:g} s); --limit N stops after N documents. Ctrl-C prints the --since-seq to
continue with: it is the end of the last batch printed whole, so what was printed of the batch
under way comes again (at least once).

--since TIME prints the documents whose id holds that time or a later one, from the first
stored since then: CouchDB 3.6 starts _changes at the time; elsewhere those already stored are
read first, oldest first, then those that arrive. TIME is {TIME_HELP}.

examples:
  couchids tail shop --type order -f
  couchids tail shop --type order --since-seq 0 --limit 10
  couchids tail shop --type order --since 1h
  couchids tail shop --type order --for 10m > orders.jsonl
"""

REKEY_EPILOG = """\
Copies every document of SOURCE into TARGET (which must exist, or --create-target creates
it) under a new id of the form, made at the time in --time-field (or, without it, in a CouchDB
utc_random id) with a random part derived from the secret in --key-env: a second run makes the
same ids and copies nothing twice. Old and new ids are appended to the --mapping file, one JSON
line each: rekey-mapping.ndjson in the current directory unless --mapping names another.
Ctrl-C prints the --after ID.

examples:
  COUCHIDS_REKEY_KEY=... couchids rekey legacy shop --time-field created --type order
  COUCHIDS_REKEY_KEY=... couchids rekey legacy shop-new --create-target --mapping ids.ndjson
  COUCHIDS_REKEY_KEY=... couchids rekey legacy shop --type order --after ID
"""


def add_commands(commands: Any) -> None:
    """Add ``expire``, ``export``, ``tail`` and ``rekey`` to ``commands``."""
    p = commands.add_parser(
        "expire",
        help="delete the documents of a type made before a time",
        description="Dry run unless --yes.",
        epilog=EXPIRE_EPILOG,
    )
    add(p, "db", "after", "purge", before="delete what is older", yes="delete (default: a dry run)")
    add(p, type={"required": True, "help": "the document type"}, batch_size="documents deleted")
    add_form(p, "of the ids in DB")
    add(p, timeout="a request (a page, a batch's delete)")
    p.set_defaults(run=_expire, batch_size=DEFAULT_EXPIRE_BATCH)

    p = commands.add_parser(
        "export",
        help="export a window as NDJSON or CSV, resumably",
        description="Oldest first; --after ID resumes.",
        epilog=EXPORT_EPILOG,
    )
    source_args(p)
    add(p, "since", "type", until="default now")
    add_form(p, "of the ids in DB or the series")
    p.add_argument(
        "--csv",
        type=checked(_fields),
        metavar="FIELDS",
        help="CSV of these comma-separated fields, such as _id,total",
    )
    add(p, "after", "parallel", batch_size="rows", timeout="a request (one page)")
    p.set_defaults(run=_export, batch_size=DEFAULT_PAGE_SIZE)

    p = commands.add_parser(
        "tail",
        help="print new documents of a type as they arrive",
        description="JSON lines from _changes.",
        epilog=TAIL_EPILOG,
    )
    add(p, "db", type="only ids T:<id> (default: untyped)")
    p.add_argument("-f", "--follow", action="store_true", help="keep waiting for more")
    p.add_argument(
        "--for",
        dest="duration",
        type=functools.partial(seconds, most=math.inf),
        metavar="DURATION",
        help="keep waiting this long, then stop: seconds or units, such as 30, 2s, 10m, 1h "
        "(implies -f)",
    )
    p.add_argument("--limit", type=count_of(1), metavar="N", help="stop after N documents")
    p.add_argument(
        "--since",
        type=time_flag,
        metavar="TIME",
        help="only documents whose id holds this time or a later one (instead of --since-seq)",
    )
    p.add_argument(
        "--since-seq",
        type=checked(functools.partial(sequence, "since_seq")),
        default="now",
        metavar="SEQ",
        help="the _changes sequence to start after: a sequence, 0, or now (default)",
    )
    add_form(p, "of the ids in DB")
    add(p, timeout="a request (beyond a long poll's own wait)")
    p.set_defaults(run=_tail)
    _add_rekey(commands)


def _add_rekey(commands: Any) -> None:
    p = commands.add_parser(
        "rekey",
        help="copy a database to time-sortable ids",
        description="Resumable, idempotent; the source is only read.",
        epilog=REKEY_EPILOG,
    )
    p.add_argument("source", metavar="SOURCE", help="database to read")
    p.add_argument("target", metavar="TARGET", help="database to write (see --create-target)")
    add(p, create_target="create TARGET if it does not exist (default: it must exist)")
    p.add_argument(
        "--time-field",
        type=checked(some("field name")),
        metavar="F",
        help="field with the time (default: utc_random id)",
    )
    add(p, type="type of the new ids")
    p.add_argument(
        "--key-env",
        type=checked(_variable),
        default="COUCHIDS_REKEY_KEY",
        metavar="VAR",
        help="environment variable holding the secret (default COUCHIDS_REKEY_KEY)",
    )
    p.add_argument(
        "--mapping",
        type=_file_name,
        default="rekey-mapping.ndjson",
        metavar="FILE",
        help="old-to-new ids are appended here (default: rekey-mapping.ndjson in the current "
        "directory)",
    )
    add(p, after="resume after this source id", batch_size="documents copied")
    add_form(p, "of the new ids")
    add(p, timeout="a request (a page read, a batch's write)")
    p.set_defaults(run=_rekey, batch_size=DEFAULT_REKEY_BATCH, create_target=False)


def _expire(args: argparse.Namespace) -> int:
    from couchids.core.counting import count
    from couchids.core.scan import Checkpoint
    from couchids.drivers.blocking import known_facts, run

    before = moment(args.before, now_ms())
    db = database(args, args.db)
    mark = Checkpoint(last_id=args.after)
    # Counted from the index for the progress bar's total (a scan would read every id twice);
    # a failure names the command run.
    try:
        total = count(
            known_facts(db.client),
            db.name,
            0,
            before,
            type=args.type,
            form=db.form,
            index_only=True,
            options=db.options,
            operation="expire",
        )
    except KeyboardInterrupt:
        say("stopped while counting, before anything was deleted")
        raise
    with _Bar("deleting" if args.yes else "checking", mark, run(db.client, total)) as bar:
        report = db.expire(
            before,
            type=args.type,
            dry_run=not args.yes,
            purge=args.purge,
            checkpoint=mark,
            on_progress=bar,
        )
    if report.dry_run:
        print(f"would delete {report.matched} documents (dry run; --yes deletes them)")
    else:
        print(f"deleted {report.deleted}, already gone {report.gone}, purged {report.purged}")
    return 1 if say_kept(report) else EXIT_OK


def _export(args: argparse.Namespace) -> int:
    from couchids.core.scan import Checkpoint

    start, end = time_window(args)
    fields = None if args.csv is None else _fields(args.csv)
    source = open_source(args)
    mark = Checkpoint(last_id=args.after)
    with _Bar("exporting", mark) as bar:
        source.handle.export(
            start, end, out=sys.stdout, type=args.type, csv=fields, checkpoint=mark, on_progress=bar
        )
    if not mark.done and args.after is None:
        source.note_empty((start, end))
    return EXIT_OK


def _tail(args: argparse.Namespace) -> int:
    from couchids.core.scan import Checkpoint

    db = database(args, args.db)
    since = None if args.since is None else moment(args.since, now_ms())
    if since is not None and args.since_seq != "now":
        raise InvalidArgumentError("give --since TIME or --since-seq SEQ, not both")
    mark = Checkpoint()  # from --since-seq (or --since) at the first call, then onwards
    deadline = None if args.duration is None else time.monotonic() + args.duration
    left: int | None = args.limit
    changes = functools.partial(
        db.follow, type=args.type, checkpoint=mark, since=since, since_seq=args.since_seq
    )
    try:
        if deadline is None:
            _write_docs(changes(wait=args.follow), left, None)
            return EXIT_OK
        # --for: rounds that each read what is new and return, until the time is up.
        while True:
            written = _write_docs(changes(wait=False), left, deadline)
            if left is not None:
                left -= written
            remaining = deadline - time.monotonic()
            if left == 0 or remaining <= 0:
                return EXIT_OK
            time.sleep(min(TAIL_POLL_SECONDS, remaining))
    except KeyboardInterrupt:
        again = "the same command" if mark.since_seq is None else f"--since-seq {mark.since_seq}"
        say(f"stopped; continue with {again}")
        raise


def _rekey(args: argparse.Namespace) -> int:
    from couchids.core.scan import Checkpoint

    secret = os.environ.get(args.key_env)
    if not secret:
        raise InvalidArgumentError(
            f"set {args.key_env} to the secret of the new ids' random part (keep it to re-run)"
        )
    source = database(args, args.source)
    mark = Checkpoint(last_id=args.after)
    made = not os.path.exists(args.mapping)
    mapping = _open_mapping(args.mapping)
    try:
        with mapping, _Bar("copying", mark) as bar:
            report = source.rekey(
                args.target,
                secret=secret,
                time_field=args.time_field,
                type=args.type,
                mapping=mapping,
                checkpoint=mark,
                on_progress=bar,
                create_target=args.create_target,
            )
    finally:
        # A run that wrote no line (a missing database, nothing to copy) leaves no file
        # of its own making behind.
        if made and os.path.isfile(args.mapping) and not os.path.getsize(args.mapping):
            os.remove(args.mapping)
    print(
        f"copied {report.copied}, already there {report.duplicates}, "
        f"skipped {len(report.skipped)}, refused {len(report.failed)}"
    )
    if os.path.isfile(args.mapping) and os.path.getsize(args.mapping):
        say(f"old and new ids appended to {args.mapping}")
    for doc_id, reason in report.skipped + report.failed:
        say(f"not copied: {doc_id}: {in_flags(reason, vars(args))}")
    return 1 if report.failed else EXIT_OK


def _write_docs(docs: Iterator[dict[str, Any]], limit: int | None, deadline: float | None) -> int:
    """Write ``docs`` as JSON lines, each flushed as it comes, until ``limit`` of them are out
    or ``deadline`` (``time.monotonic()``) has passed; stop the stream; return how many."""
    written = 0
    try:
        if limit == 0:
            return 0
        for doc in docs:
            sys.stdout.write(json_line(doc) + "\n")
            sys.stdout.flush()
            written += 1
            if written == limit or (deadline is not None and time.monotonic() >= deadline):
                break
    finally:
        close(docs)
    return written


def _fields(text: str) -> list[str]:
    """The field names of ``--csv``, none empty (``''``, ``a,,b``)."""
    fields = [name.strip() for name in text.split(",")]
    if not all(fields):
        raise InvalidArgumentError(
            f"{text!r:.80}: give the fields of the CSV separated by commas, such as "
            "--csv _id,total (no empty names)"
        )
    return fields


#: An environment variable's name, as a shell writes one.
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _variable(text: str) -> None:
    if not _VARIABLE.fullmatch(text):
        raise InvalidArgumentError(
            f"{text!r:.80} is no environment variable's name: letters, digits and _, not "
            "starting with a digit"
        )


def _file_name(text: str) -> str:
    """The type of ``--mapping``: any file name (one in another encoding too) but ``''``."""
    if not text:
        raise argparse.ArgumentTypeError("'' is no file name")
    return text


def _open_mapping(path: str) -> TextIO:
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as exc:
        raise InvalidArgumentError(
            f"--mapping {path!r}: cannot append the old-to-new ids to it ({exc.strerror}); "
            "name a file in an existing directory"
        ) from None


class _Bar:
    """A progress bar (tqdm) of the documents ``mark`` has done, on a terminal's stderr; as
    ``on_progress``, it moves to them. Ctrl-C in its ``with`` block says where to resume."""

    def __init__(self, what: str, mark: Checkpoint, total: int | None = None) -> None:
        self.mark = mark
        self.tqdm = progress(what, total)

    def __call__(self, _: object) -> None:
        self.tqdm.update(self.mark.done - self.tqdm.n)

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.tqdm.close()
        if kind is KeyboardInterrupt:
            sys.stdout.flush()  # what was exported goes out before the exit
            where = f"--after {self.mark.last_id}" if self.mark.last_id else "the same command"
            say(f"stopped after {self.mark.done} documents; resume with {where}")
