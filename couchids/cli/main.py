"""The ``couchids`` command: make and read ids, and export documents by the time in their ids.

``couchids new`` and ``couchids decode`` work offline; every other command (``latest``,
``window``, those of :mod:`couchids.cli.lifecycle`, ``replicate`` and those of
:mod:`couchids.cli.series`) talks to a database, or a series of them, through an
``ibmcloudant`` client configured the standard way (``CLOUDANT_URL``, ``CLOUDANT_AUTH_TYPE``,
...: :func:`couchids.connect`). Every failure is one line on stderr, with every credential of
the configuration (password, API key, the user:password of a URL) masked. An answer with
nothing in it is followed by a note on stderr when the database shows why
(:meth:`couchids.Database.explain_empty`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from couchids import __version__
from couchids.core.defaults import DEFAULT_PARALLEL, DEFAULT_TIMEOUT, MAX_TIMEOUT, REMOTE_PARALLEL
from couchids.errors import InvalidArgumentError, InvalidInputError, InvalidTimeError, ServerError
from couchids.idforms.constants import DEFAULT_BLOCKS, SEPARATORS, SHORT_BLOCKS
from couchids.idforms.doctypes import ALL_TYPES, AllTypes
from couchids.idforms.forms import NAMED_FORMS, V7, V7S, IdForm, KuuidForm, form_named
from couchids.idforms.times import now_ms, to_ms

# What talks to a server (the ibmcloudant SDK and the modules built on it) is loaded by the
# commands that need one, when they run: ``couchids new``, ``couchids decode`` and every
# ``--help`` load none of it. The subcommands of the other modules (and the period and key
# machinery they import) are loaded only when the command run is not an offline one.
if TYPE_CHECKING:
    from ibmcloudant.cloudant_v1 import CloudantV1

    from couchids.cli.lifecycle import Tools
    from couchids.idforms.decode import DecodedId

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_SERVER",
    "main",
    "parse_time",
]

EXIT_OK = 0
#: The server failed: unreachable, refused the credentials, no such database, rate limited;
#: or the output could not be written (a full disk, a device that fails).
EXIT_SERVER = 1
#: Bad usage or input (an id, time, type or flag), no server configured, a file named by a
#: flag that cannot be opened, or an output whose encoding lacks a character to be written.
EXIT_BAD_INPUT = 2
#: The conventional status of a program stopped by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130

#: ``window`` updates its progress line on a terminal every this many documents.
PROGRESS_EVERY = 1000
#: Rows per request of ``couchids window`` (the library's ``window`` reads 2000). Every
#: request costs the server work of its own, and a command's memory is its own: a 50,000
#: document window into a file (3 slices, medians of 7-9 interleaved runs against the same
#: server) took 0.91x the time of 2000-row pages on PouchDB Server and 0.96x on CouchDB
#: 3.4.3 (10,000 rows: 0.94x and 0.99x), peaking at 62-66 MB of memory against 52 MB, where
#: ``curl | jq -c '.rows[].doc'`` peaks at 112 MB.
WINDOW_PAGE_SIZE = 5000

_AGO = re.compile(r"(\d+)([smhdw])")
_UNITS = {
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}
TIME_HELP = (
    "an ISO-8601 date or time (2024-05-01, 2024-05-01T12:30:00Z; no offset means UTC),\n"
    "'now', or a time ago: a whole number of s, m (minutes), h, d or w, such as 90m, 24h, 7d, 2w"
)


def parse_time(text: str, now: int) -> int:
    """Read a command-line time as epoch milliseconds.

    Takes what :func:`~couchids.idforms.times.to_ms` reads from a string (ISO-8601), ``now``,
    or a time ago: a whole number and a unit, ``s``, ``m`` (minutes), ``h``, ``d`` or ``w``.

    Args:
        text: the time as typed.
        now: the current time in epoch milliseconds, which times ago count back from.

    Raises:
        InvalidTimeError: anything else, or a time before 1970.

    >>> parse_time("24h", now=to_ms("2024-05-02"))
    1714521600000
    >>> parse_time("2024-05-01", now=0)
    1714521600000
    """
    spoken = text.strip().lower()
    if spoken == "now":
        return now
    ago = _AGO.fullmatch(spoken)
    if ago is None:
        try:
            datetime.fromisoformat(text.strip())
        except ValueError:
            raise InvalidTimeError(
                f"{text!r} is not a time: give {' '.join(TIME_HELP.split())}"
            ) from None
        # to_ms reads it the same way, and refuses times before 1970 or after 9999.
        return to_ms(text)
    try:
        span = int(ago[1]) * _UNITS[ago[2]]
    except (OverflowError, ValueError):
        # More days than a timedelta holds (or digits than int() reads): long before 1970.
        span = timedelta.max
    ms = now - span // timedelta(milliseconds=1)
    if ms < 0:
        raise InvalidTimeError(f"{text!r} before now is before 1970; ids start at 1970")
    return ms


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``couchids`` command with ``argv`` (default ``sys.argv[1:]``); return its status.

    >>> main(["new", "--at", "2018-01-01", "--type", "user"])  # doctest: +ELLIPSIS
    user:001eVnWK...
    0
    """
    try:
        try:
            args = _parser(_offline_command(sys.argv[1:] if argv is None else argv)).parse_args(
                argv
            )
        except SystemExit as exc:  # --help and --version
            return exc.code if isinstance(exc.code, int) else EXIT_OK
        command: Callable[[argparse.Namespace], int] = args.run
        if args.verbose:
            from couchids.drivers.log import shown

            with shown(args.verbose, sys.stderr):
                status = command(args)
        else:  # the offline commands start without the drivers' machinery
            status = command(args)
        # Written out now, so that a failure to write is reported as the command's own.
        sys.stdout.flush()
        return status
    except _UsageError as exc:
        return _fail(str(exc), EXIT_BAD_INPUT)
    except InvalidInputError as exc:
        return _fail(str(exc), EXIT_BAD_INPUT)
    except ServerError as exc:
        from couchids.drivers.blocking import TokenTimeout
        from couchids.drivers.config import safe_url

        hint = ""
        if isinstance(exc.__cause__, TokenTimeout):
            hint = "; check CLOUDANT_AUTH_URL and that the token service is up"
        elif exc.status == 0 and not _answered(exc):
            hint = f"; check CLOUDANT_URL ({safe_url()}) and that the server is up"
        return _fail(f"{exc}{hint}", EXIT_SERVER)
    except BrokenPipeError:
        # The reader stopped early (`couchids window ... | head`): that is its choice, not an
        # error. Point stdout at /dev/null so the flush at exit does not fail a second time.
        _silence_stdout()
        return EXIT_OK
    except UnicodeEncodeError as exc:
        # Text to be written that the output's encoding (or any, for a lone surrogate) lacks.
        return _fail(_unencodable(exc), EXIT_BAD_INPUT)
    except OSError as exc:
        # Writing the output failed (a full disk, /dev/full): what is still buffered cannot
        # be written either, and must not fail again at exit.
        _silence_stdout()
        return _fail(f"could not write the output: {exc.strerror or exc}", EXIT_SERVER)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _answered(exc: ServerError) -> bool:
    """Whether the server answered, although ``exc.status`` is 0: an answer that is not
    CouchDB's, a replication the server's replicator cannot run (PouchDB Server), or plain
    HTTP to a TLS handshake (``https://`` on an ``http://`` port; the error says which)."""
    from couchids.errors import ReplicationFailed

    text = str(exc)
    return isinstance(exc, ReplicationFailed) or any(
        said in text for said in ("not a CouchDB answer", "speaks plain HTTP")
    )


def _unencodable(exc: UnicodeEncodeError) -> str:
    char = exc.object[exc.start]
    if "\ud800" <= char <= "\udfff":
        return f"the output holds a lone surrogate ({char!r}), which no encoding can write"
    return (
        f"the output's encoding ({exc.encoding}) has no {char!r} (U+{ord(char):04X}): set "
        "PYTHONIOENCODING=utf-8 (or use a UTF-8 locale)"
    )


# -- commands ---------------------------------------------------------------------------------


def _new(args: argparse.Namespace) -> int:
    form = _form(args)
    at = None if args.at is None else parse_time(args.at, now_ms())
    out = sys.stdout
    for _ in range(args.n):
        out.write(form.new(at, type=args.type) + "\n")
    return EXIT_OK


def _decode(args: argparse.Namespace) -> int:
    from couchids.idforms.decode import decode

    if not args.ids and sys.stdin.isatty():
        # Waiting for ids to be typed looks like a hang: say what the command wants instead.
        raise _UsageError(
            "give ids as arguments, or one per line on stdin (see 'couchids decode --help')"
        )
    form = _named_form(args)
    ids: Iterable[str] = args.ids or (line.strip() for line in sys.stdin if line.strip())
    out, status = sys.stdout, EXIT_OK
    for doc_id in ids:
        try:
            decoded = (
                decode(doc_id, reverse=args.reverse, millisecond=args.ms)
                if form is None
                else decode(doc_id, form=form)
            )
        except InvalidInputError as exc:
            # Report this id and go on: one bad line must not hide the others' answers.
            out.flush()
            _fail(str(exc), EXIT_BAD_INPUT)
            status = EXIT_BAD_INPUT
            continue
        out.write(_json(_decoded(decoded)) + "\n")
    return status


def _latest(args: argparse.Namespace) -> int:
    from couchids.cli.series import note_empty, open_source

    form = _form(args)
    scope = _scope(args)
    client, source = open_source(args, form, _tools())
    docs = source.latest(args.n, type=scope, timeout=args.timeout)
    out = sys.stdout
    for doc in docs:
        out.write(_json(doc) + "\n")
    if not docs and args.n:
        note_empty(_tools(), client, source, scope, form, args.timeout)
    return EXIT_OK


def _window(args: argparse.Namespace) -> int:
    from couchids.cli.series import note_empty, open_source
    from couchids.core.protocol import dumps

    form = _form(args)
    now = now_ms()
    start = parse_time(args.since, now)
    end = now if args.until is None else parse_time(args.until, now)
    scope = _scope(args)
    client, source = open_source(args, form, _tools())
    out = _Blocks(sys.stdout)
    progress = _Progress(sys.stderr)
    pages = source.window(
        start,
        end,
        type=scope,
        newest_first=not args.oldest_first,
        include_docs=not args.ids_only,
        batch_size=args.page_size,
        timeout=args.timeout,
        parallel=args.parallel,
    ).pages()
    count = 0
    try:
        for page in pages:
            out.lines([row["id"].encode() for row in page] if args.ids_only else map(dumps, page))
            count += len(page)
            progress.update(count)
    finally:
        out.flush()
        progress.clear()
        _close(pages)
    if not count:
        note_empty(_tools(), client, source, scope, form, args.timeout, (start, end))
    return EXIT_OK


# -- the server -------------------------------------------------------------------------------


def _connect() -> CloudantV1:
    """A client from ibmcloudant's standard configuration, or one line saying what to set
    (naming the variables: the command has no flags for the arguments of couchids.connect)."""
    from couchids.drivers.connecting import cloudant_client

    return cloudant_client(arguments=False)


def _note_empty(
    client: CloudantV1, db: str, scope: str | AllTypes | None, form: IdForm, timeout: float
) -> None:
    """After an answer with nothing in it, a note on stderr saying why, when the database
    shows a reason (:meth:`couchids.Database.explain_empty`); the exit status stays 0."""
    if scope is ALL_TYPES:
        return
    from couchids.database import Database

    try:
        why = Database(client, db).explain_empty(
            type=scope, form=form, style="command", timeout=timeout
        )
    except ServerError:
        # The answer, nothing, stands: failing to find out why is not the command failing.
        return
    if why is not None:
        print(f"couchids: note: {why}", file=sys.stderr)


def _close(rows: Iterator[Any]) -> None:
    # Stop the query's prefetch thread now rather than when the generator is collected.
    close = getattr(rows, "close", None)
    if close is not None:
        close()


# -- output -----------------------------------------------------------------------------------


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def _decoded(decoded: DecodedId) -> dict[str, Any]:
    precision = decoded.form.precision_us
    timespec = (
        "microseconds" if precision < 1000 else "milliseconds" if precision < 10**6 else "seconds"
    )
    when = decoded.timestamp
    return {
        "id": decoded.id,
        "type": decoded.type,
        "timestamp": None
        if when is None
        else when.isoformat(timespec=timespec).replace("+00:00", "Z"),
        "form": str(decoded.form),
        "kind": decoded.form.kind,
        "reverse": decoded.reverse,
        "millisecond": decoded.millisecond,
    }


class _Blocks:
    """Lines of bytes for a text stream, written in blocks of at least 64 KiB (or all that is
    left): a write per line would cost a system call each where Python's output is
    unbuffered (``PYTHONUNBUFFERED``), and a document in ``window``'s output is a line of
    UTF-8 JSON."""

    BLOCK = 1 << 16

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.parts: list[bytes] = []
        self.size = 0

    def lines(self, lines: Iterable[bytes]) -> None:
        """Each of ``lines`` (none empty) as a line."""
        data = b"\n".join(lines)
        if data:
            self.parts += (data, b"\n")
            self.size += len(data) + 1
        if self.size >= self.BLOCK:
            self.flush()

    def flush(self) -> None:
        block, self.parts, self.size = b"".join(self.parts), [], 0
        binary = getattr(self.stream, "buffer", None)
        if binary is None:  # a text-only stream, such as io.StringIO
            self.stream.write(block.decode())
            return
        self.stream.flush()  # what was written as text before goes first
        binary.write(block)
        binary.flush()


class _Progress:
    """A count of exported documents, in place on a terminal's stderr; nothing elsewhere."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.active = stream.isatty()
        self.shown = False
        self.count = 0

    def update(self, count: int) -> None:
        """``count`` documents are out: shown each time another PROGRESS_EVERY are."""
        if self.active and count // PROGRESS_EVERY > self.count // PROGRESS_EVERY:
            self.stream.write(f"\rcouchids: {count:,} documents")
            self.stream.flush()
            self.shown = True
        self.count = count

    def clear(self) -> None:
        if self.shown:
            # Carriage return, then erase to the end of the line.
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def _fail(message: str, status: int) -> int:
    # One line, whatever the message holds: a reason from a server may contain newlines.
    # Masking reads the configuration (and loads the SDK): only when something failed.
    from couchids.drivers.config import scrub

    line = " ".join(scrub(message).split())
    print(f"couchids: error: {line}", file=sys.stderr)
    return status


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        # Not a real file (tests capture stdout): nothing will be flushed to a closed pipe.
        pass


# -- arguments --------------------------------------------------------------------------------


class _UsageError(Exception):
    """A command line couchids cannot run: the message is the one line shown."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: the --help of the command has the rest.
        raise _UsageError(f"{message} (see '{self.prog} --help')")


def _count(least: int) -> Callable[[str], int]:
    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= {least}")
        return value

    return read


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds above 0 and at most {MAX_TIMEOUT:g}"
        )
    return value


def _timeout_flag(parser: argparse.ArgumentParser, each: str) -> None:
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up when {each} takes longer (default {DEFAULT_TIMEOUT:g})",
    )


def _parallel_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--parallel",
        type=_count(1),
        default=DEFAULT_PARALLEL,
        metavar="K",
        help=f"time slices read at a time (default {DEFAULT_PARALLEL}; "
        f"{REMOTE_PARALLEL} suits a server tens of milliseconds away; 1: page after page)",
    )


def _scope(args: argparse.Namespace) -> str | AllTypes | None:
    if args.all_types:
        if args.type is not None:
            raise _UsageError("--all-types and --type cannot be combined")
        return ALL_TYPES
    type_: str | None = args.type
    return type_


def _named_form(args: argparse.Namespace) -> IdForm | None:
    """The form of ``--form NAME`` (and ``--sep``), or ``None`` when neither is given."""
    name, sep = getattr(args, "form", None), getattr(args, "sep", None)
    if name is None:
        if sep is not None:
            raise _UsageError("--sep needs --form NAME")
        return None
    used = [
        flag
        for flag in ("reverse", "ms", "short", "v7", "v7s")
        if getattr(args, flag, None) not in (None, False)
    ]
    if used:
        raise _UsageError(
            f"--form cannot be combined with {', '.join('--' + f for f in used)}: the form "
            "name says it all (such as kuuid-ms-reverse)"
        )
    try:
        form = form_named(name)
        return form if sep is None else form.with_separator(sep)
    except InvalidArgumentError as exc:
        raise _UsageError(str(exc)) from None


def _form(args: argparse.Namespace) -> IdForm:
    named = _named_form(args)
    if named is not None:
        return named
    if args.v7 or args.v7s:
        used = [
            flag
            for flag, on in (
                ("--reverse", args.reverse),
                ("--ms", args.ms),
                ("--short", args.short),
            )
            if on
        ]
        if used:
            raise _UsageError(
                f"{'--v7' if args.v7 else '--v7s'} cannot be combined with {', '.join(used)}: "
                "UUIDv7 ids always sort oldest first, hold milliseconds and have no random "
                "blocks to choose"
            )
        return V7 if args.v7 else V7S
    return KuuidForm(
        random=SHORT_BLOCKS if args.short else DEFAULT_BLOCKS,
        reverse=args.reverse,
        millisecond=args.ms,
    )


def _form_flags(parser: argparse.ArgumentParser, verb: str) -> None:
    group = parser.add_argument_group(f"id form ({verb}; default: forward kuuid ids in seconds)")
    group.add_argument("--reverse", action="store_true", help="reverse kuuid ids (newest first)")
    group.add_argument("--ms", action="store_true", help="kuuid ids with millisecond time")
    group.add_argument("--short", action="store_true", help="short kuuid ids (2 random blocks)")
    v7 = group.add_mutually_exclusive_group()
    v7.add_argument("--v7", action="store_true", help="UUIDv7 ids, 8-4-4-4-12 hex")
    v7.add_argument("--v7s", action="store_true", help="UUIDv7 ids, 32 hex characters")
    _form_name_flags(group)


def _form_name_flags(group: Any) -> None:
    group.add_argument(
        "--form",
        metavar="NAME",
        help=f"any form by name: {', '.join(NAMED_FORMS)}, utc_id:<suffix>",
    )
    group.add_argument(
        "--sep", choices=SEPARATORS, help="with --form: what joins type and id (default ':')"
    )


EPILOG = f"""\
server (every command but new and decode): ibmcloudant's standard configuration, such as
  CLOUDANT_URL=http://127.0.0.1:5984 CLOUDANT_AUTH_TYPE=noauth
  CLOUDANT_URL=http://admin:pass@127.0.0.1:5984 (user:password@ means basic)
  CLOUDANT_AUTH_TYPE=basic (or couchdb_session) with CLOUDANT_USERNAME, CLOUDANT_PASSWORD
  CLOUDANT_AUTH_TYPE=iam with CLOUDANT_APIKEY
  CLOUDANT_ENABLE_RETRIES=true to retry 429 and 5xx answers

exit status:
  {EXIT_OK}  success (also when the reader of the output stops early, as `| head` does)
  {EXIT_SERVER}  the server failed: unreachable, wrong credentials, no such database, rate limited,
     no answer within --timeout, or an answer that is not CouchDB's; or the output could not
     be written (a full disk)
  {EXIT_BAD_INPUT}  bad usage or input (an id, time, type or flag), no server configured, a file
     named by a flag that cannot be opened (rekey --mapping), or output characters that
     stdout's encoding lacks (set PYTHONIOENCODING=utf-8)

An empty answer is followed by a note on stderr when the database shows why (its ids are
typed, or of another form), with the flags to use instead; the exit status stays 0.

-v (before the command) shows each request and retry on stderr, such as
  couchids: POST /orders/_all_docs 200 12 ms (attempt 1)
  couchids: retrying PUT /orders/order%3A0... after HTTP 503, in 0.05 s (attempt 2 of 5)

examples:
  couchids new --type user -n 3
  couchids decode user:001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn
  couchids latest orders -n 5 --type order
  couchids window orders --since 24h --type order > last-day.jsonl
  couchids histogram orders --since 7d --every 1d --type order
  couchids tail orders --type order -f
  couchids series prepare events --period month
  couchids window --series events --period month --since 90d --type reading
  couchids -v latest orders -n 5

Each command's --help has more examples.
"""

NEW_EPILOG = f"""\
examples:
  couchids new                                 one kuuid id made now
  couchids new --type user -n 3                three ids user:<id>
  couchids new --at 2018-01-01 -n 3            three ids of 2018-01-01T00:00:00Z (001eVnWK...)
  couchids new --reverse --ms --at 90m         a reverse millisecond id of 90 minutes ago
  couchids new --v7s --type order              order:<UUIDv7 as 32 hex characters>

TIME is {TIME_HELP}.
"""

DECODE_EPILOG = """\
Prints one JSON object per id: id, type, timestamp (ISO-8601 UTC), form (such as
kuuid-ms-reverse, kuuid-short, v7s), kind (kuuid, v7, v7s), reverse, millisecond (null for an
id without a time). Without --form, only a reading with a time in 2000-2100 is taken (a kuuid
id does not say which mode made it: that time says it); both of --reverse/--forward and
--ms/--seconds name a kuuid mode, read in any year; --form reads any form in any year. A
reading without a time (seq10, seq36, couch_random, a uuid464 that is not a UUIDv7) is taken
only with --form: abcdefg, a phone number or a random token is refused, naming the form it
would be. A bad id is reported on stderr and the others are still decoded; the exit status is
then 2.

examples:
  couchids decode user:001eVnWK1bu9mX3BsHnX0mhxvQ1ba2Xn
  couchids new -n 5 | couchids decode
  couchids decode --reverse --ms event:zVoTNH9x36r2uF3AKyIb2v3nRd4RAIm7
  couchids decode --form seq10 --sep - invoice-0000000042
"""

LATEST_EPILOG = """\
Prints the newest N documents as JSON lines, newest first. Only ids of the given form and type
count: other documents in the database are skipped.

A series (--series PREFIX --period PERIOD instead of DB) answers as one database holding all
its periods would: its newest database first, then the one before, until N are found.

examples:
  couchids latest orders
  couchids latest orders -n 3 --type order
  couchids latest events -n 20 --ms --reverse
  couchids latest --series events --period month -n 5 --type reading
"""

WINDOW_EPILOG = f"""\
Prints every document whose id was made at a time t with SINCE <= t < UNTIL, as JSON lines,
newest first (or with --ids-only just the ids). On a terminal a count on stderr shows the
progress of long exports. A series (--series PREFIX --period PERIOD instead of DB) answers as
one database holding all its periods would: each period's database in turn, in order.

TIME is {TIME_HELP}.

examples:
  couchids window orders --since 24h --type order > last-day.jsonl
  couchids window orders --since 2024-05-01 --until 2024-06-01 --oldest-first
  couchids window events --since 7d --ids-only --v7s | wc -l
  couchids window --series events --period month --since 90d --type reading
"""


#: The commands that need no server. When one of them is run, the parser is built with it
#: alone: the other subcommands' arguments, and the modules they come from, are not loaded.
OFFLINE_COMMANDS = ("new", "decode")


def _offline_command(argv: Sequence[str]) -> str | None:
    """The offline command ``argv`` runs, or ``None`` (another command, or none: ``--help``).

    Only ``-v``/``--verbose`` (which take no value) may come before a command.
    """
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in OFFLINE_COMMANDS else None
        if arg != "--verbose" and not re.fullmatch(r"-v+", arg):
            return None
    return None


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command's parser; with ``only`` (one of :data:`OFFLINE_COMMANDS`), that subcommand
    alone, which parses its arguments exactly as the whole parser does."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="couchids",
        description="Time-sortable CouchDB/Cloudant document ids, kuuid-compatible.\nnew and "
        "decode work offline; the other commands read (or write) a database on a server.",
        epilog=EPILOG,
        formatter_class=raw,
    )
    parser.add_argument("--version", action="version", version=f"couchids {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="before the command: one line on stderr per request sent (method, path, status "
        "or failure, milliseconds, attempt) and per retry, credentials never shown; -vv adds "
        "the HTTP library's (urllib3's) debug lines",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    if only in (None, "new"):
        _new_command(commands)
    if only in (None, "decode"):
        _decode_command(commands)
    if only is not None:
        return parser

    from couchids.cli.lifecycle import add_commands
    from couchids.cli.replicating import add_replicate_command
    from couchids.cli.series import add_series_command, source_args

    lat = commands.add_parser(
        "latest",
        help="print the newest documents of a database",
        description="Print the newest documents of a database, as JSON lines.",
        epilog=LATEST_EPILOG,
        formatter_class=raw,
    )
    source_args(lat)
    lat.add_argument("-n", type=_count(0), default=10, metavar="N", help="how many (default 10)")
    lat.add_argument("--type", metavar="T", help="only ids T:<id> (default: untyped ids)")
    _timeout_flag(lat, "the server")
    lat.add_argument("--all-types", action="store_true", help="every type, merged by time")
    _form_flags(lat, "of the ids in DB or the series")
    lat.set_defaults(run=_latest)

    win = commands.add_parser(
        "window",
        help="export the documents made in a time window",
        description="Export the documents whose ids were made in a time window, as JSON lines.",
        epilog=WINDOW_EPILOG,
        formatter_class=raw,
    )
    source_args(win)
    win.add_argument("--since", required=True, metavar="TIME", help="start (inclusive)")
    win.add_argument("--until", metavar="TIME", help="end (exclusive; default now)")
    win.add_argument("--type", metavar="T", help="only ids T:<id> (default: untyped ids)")
    win.add_argument("--all-types", action="store_true", help="every type, merged by time")
    win.add_argument("--oldest-first", action="store_true", help="oldest first")
    win.add_argument("--ids-only", action="store_true", help="print ids, not documents")
    win.add_argument(
        "--page-size",
        type=_count(1),
        metavar="N",
        default=WINDOW_PAGE_SIZE,
        help=f"rows per request (default {WINDOW_PAGE_SIZE})",
    )
    _parallel_flag(win)
    _timeout_flag(win, "a request (one page)")
    _form_flags(win, "of the ids in DB or the series")
    win.set_defaults(run=_window)
    tools = _tools()
    add_commands(commands, tools)
    add_replicate_command(commands, tools)
    add_series_command(commands, tools)
    return parser


def _new_command(commands: Any) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    new = commands.add_parser(
        "new",
        help="make ids (offline)",
        description="Make ids, one per line.",
        epilog=NEW_EPILOG,
        formatter_class=raw,
    )
    new.add_argument("--type", metavar="T", help="document type: ids T:<id>")
    new.add_argument("-n", type=_count(0), default=1, metavar="N", help="how many (default 1)")
    new.add_argument("--at", metavar="TIME", help="the time in the ids (default now)")
    _form_flags(new, "of the ids made")
    new.set_defaults(run=_new)


def _decode_command(commands: Any) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    dec = commands.add_parser(
        "decode",
        help="read the type, time and form of ids (offline)",
        description="Read ids given as arguments, or one per line on stdin.",
        epilog=DECODE_EPILOG,
        formatter_class=raw,
    )
    dec.add_argument("ids", nargs="*", metavar="ID", help="ids (default: read stdin)")
    direction = dec.add_mutually_exclusive_group()
    direction.add_argument(
        "--reverse",
        dest="reverse",
        action="store_const",
        const=True,
        help="only reverse kuuid readings",
    )
    direction.add_argument(
        "--forward", dest="reverse", action="store_const", const=False, help="only forward readings"
    )
    precision = dec.add_mutually_exclusive_group()
    precision.add_argument(
        "--ms", dest="ms", action="store_const", const=True, help="only millisecond readings"
    )
    precision.add_argument(
        "--seconds", dest="ms", action="store_const", const=False, help="only second readings"
    )
    _form_name_flags(dec.add_argument_group("id form (instead of guessing it)"))
    dec.set_defaults(run=_decode)


def _tools() -> Tools:
    """What the subcommands of the other modules take from this one."""
    from couchids.cli.lifecycle import Tools

    return Tools(
        _connect,
        _form,
        _form_flags,
        parse_time,
        _timeout_flag,
        _parallel_flag,
        _note_empty,
        TIME_HELP,
    )
