"""The ``couchids`` command: its parser, built from one module per group of subcommands, and
its entry point :func:`main`, which turns every failure into one line on stderr (credentials
masked) and an exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Callable, Sequence

from couchids import __version__
from couchids.cli import ids
from couchids.cli.options import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SERVER,
    Parser,
    UsageError,
    fail,
    in_flags,
    parse_time,
    phrased,
)
from couchids.errors import (
    InvalidInputError,
    ReplicationFailed,
    ServerError,
    ServerTimeoutError,
)

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_SERVER", "main", "parse_time"]

#: The commands that need no server, whose parser is built with the one run alone.
OFFLINE_COMMANDS = ids.COMMANDS

_UsageError = UsageError
#: What a failure of status 0 says where the server did answer (as a ReplicationFailed means it
#: did): an answer not CouchDB's, or plain HTTP to a TLS handshake. No hint of CLOUDANT_URL then.
_ANSWERED = re.compile("not a CouchDB answer|speaks plain HTTP")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``couchids`` command with ``argv`` (default ``sys.argv[1:]``); return its status.

    >>> main(["new", "--at", "2018-01-01T00:00Z", "--type", "user"])  # doctest: +ELLIPSIS
    user:001eVnWK...
    0
    """
    options: dict[str, object] = {}  # for in_flags, once read
    try:
        offline = _offline_command(sys.argv[1:] if argv is None else argv)
        try:
            args = _parser(offline).parse_args(argv)
        except SystemExit as exc:  # --help and --version
            return exc.code if isinstance(exc.code, int) else EXIT_OK
        options = vars(args)
        command: Callable[[argparse.Namespace], int] = args.run
        with contextlib.ExitStack() as around:
            # The offline commands start without the drivers' machinery.
            if args.verbose or offline is None:
                from couchids.drivers.log import no_hints, shown

                around.enter_context(shown(args.verbose, sys.stderr))
                # The command notes why a read found nothing itself, in its flags' words.
                around.enter_context(no_hints())
            status = command(args)
        # Written out now, so that a failure to write is reported as the command's own.
        sys.stdout.flush()
        return status
    except _UsageError as exc:
        return fail(str(exc), EXIT_BAD_INPUT)
    except InvalidInputError as exc:
        return fail(in_flags(str(exc), options), EXIT_BAD_INPUT)
    except ServerError as exc:
        from couchids.drivers.blocking import TokenTimeout
        from couchids.drivers.config import safe_url

        hint = ""
        if isinstance(exc.__cause__, TokenTimeout):
            hint = "; check CLOUDANT_AUTH_URL and that the token service is up"
        elif (
            exc.status == 0
            and not isinstance(exc, ReplicationFailed)
            and not _ANSWERED.search(str(exc))
        ):
            hint = f"; check CLOUDANT_URL ({safe_url()}) and that the server is up"
            if isinstance(exc, ServerTimeoutError) and isinstance(options.get("timeout"), float):
                hint += f", or give it more time than --timeout {options['timeout']:g}"
        return fail(f"{phrased(str(exc), options)}{hint}", EXIT_SERVER)
    except BrokenPipeError:
        # The reader stopped early (`couchids window ... | head`): that is its choice, not an
        # error. Point stdout at /dev/null so the flush at exit does not fail a second time.
        _silence_stdout()
        return EXIT_OK
    except UnicodeEncodeError as exc:
        # Text to be written that the output's encoding (or any, for a lone surrogate) lacks.
        return fail(_unencodable(exc), EXIT_BAD_INPUT)
    except OSError as exc:
        # Writing the output failed (a full disk, /dev/full): what is still buffered cannot
        # be written either, and must not fail again at exit.
        _silence_stdout()
        return fail(f"could not write the output: {exc.strerror or exc}", EXIT_SERVER)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _unencodable(exc: UnicodeEncodeError) -> str:
    char = exc.object[exc.start]
    if "\ud800" <= char <= "\udfff":
        return f"the output holds a lone surrogate ({char!r}), which no encoding can write"
    return (
        f"the output's encoding ({exc.encoding}) has no {char!r} (U+{ord(char):04X}): set "
        "PYTHONIOENCODING=utf-8 (or use a UTF-8 locale)"
    )


def _silence_stdout() -> None:
    # Not a real file (tests capture stdout): nothing will be flushed to a closed pipe.
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


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
  {EXIT_INTERRUPTED}  stopped by Ctrl-C: what was written before is out, and expire, export,
       rekey and tail say where to resume

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
  couchids import orders orders.ndjson --time-field created --key-field number --type order
  couchids series prepare events --period month
  couchids window --series events --period month --since 90d --type reading
  couchids -v latest orders -n 5

Each command's --help has more examples.
"""


def _offline_command(argv: Sequence[str]) -> str | None:
    """The offline command ``argv`` runs, or ``None``; only ``-v``/``--verbose`` may come
    before a command."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in OFFLINE_COMMANDS else None
        if arg != "--verbose" and not re.fullmatch(r"-v+", arg):
            return None
    return None


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command's parser; with ``only`` (one of :data:`OFFLINE_COMMANDS`), of that
    subcommand alone."""
    parser = Parser(
        prog="couchids",
        description="Time-sortable CouchDB/Cloudant document ids, kuuid-compatible.\nnew and "
        "decode work offline; the other commands read (or write) a database on a server.",
        epilog=EPILOG,
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
    ids.add_commands(commands, only)
    if only is not None:
        return parser

    from couchids.cli import importing, lifecycle, reading, replicating, series

    for group in (reading, lifecycle, importing, replicating, series):
        group.add_commands(commands)
    return parser
