"""The offline subcommands, ``new`` (make ids) and ``decode`` (read their type, time and form),
which load no server machinery, nor the other subcommands' modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from couchids.cli.options import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    TIME_HELP,
    UsageError,
    add,
    add_form,
    count_of,
    fail,
    in_flags,
    json_line,
    moment,
    named_form,
    time_flag,
)
from couchids.cli.options import form as id_form
from couchids.errors import InvalidInputError
from couchids.idforms.times import now_ms

if TYPE_CHECKING:
    from couchids.idforms.decode import DecodedId

COMMANDS = ("new", "decode")

NEW_EPILOG = f"""\
examples:
  couchids new                                 one kuuid id made now
  couchids new --type user -n 3                three ids user:<id>
  couchids new --at 2018-01-01T00:00Z -n 3     three ids of 2018-01-01T00:00:00Z (001eVnWK...)
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


def add_commands(commands: Any, only: str | None = None) -> None:
    """Add ``new`` and ``decode`` (or ``only`` the one named) to ``commands``."""
    if only in (None, "new"):
        p = commands.add_parser(
            "new",
            help="make ids (offline)",
            description="Make ids, one per line.",
            epilog=NEW_EPILOG,
        )
        add(p, type="document type: ids T:<id>")
        p.add_argument("-n", type=count_of(0), default=1, metavar="N", help="how many (default 1)")
        p.add_argument(
            "--at", type=time_flag, metavar="TIME", help="the time in the ids (default now)"
        )
        add_form(p, "of the ids made")
        p.set_defaults(run=_new)
    if only in (None, "decode"):
        p = commands.add_parser(
            "decode",
            help="read the type, time and form of ids (offline)",
            description="Read ids given as arguments, or one per line on stdin.",
            epilog=DECODE_EPILOG,
        )
        p.add_argument("ids", nargs="*", metavar="ID", help="ids (default: read stdin)")
        direction = p.add_mutually_exclusive_group()
        direction.add_argument(
            "--reverse", action="store_const", const=True, help="only reverse kuuid readings"
        )
        direction.add_argument(
            "--forward",
            dest="reverse",
            action="store_const",
            const=False,
            help="only forward readings",
        )
        precision = p.add_mutually_exclusive_group()
        precision.add_argument(
            "--ms", action="store_const", const=True, help="only millisecond readings"
        )
        precision.add_argument(
            "--seconds", dest="ms", action="store_const", const=False, help="only second readings"
        )
        add(p.add_argument_group("id form (instead of guessing it)"), "form", "sep")
        p.set_defaults(run=_decode)


def _new(args: argparse.Namespace) -> int:
    form = id_form(args)
    at = None if args.at is None else moment(args.at, now_ms())
    for _ in range(args.n):
        sys.stdout.write(form.new(at, type=args.type) + "\n")
    return EXIT_OK


def _decode(args: argparse.Namespace) -> int:
    from couchids.idforms.decode import decode

    if not args.ids and sys.stdin.isatty():
        # Waiting for ids to be typed looks like a hang: say what the command wants instead.
        raise UsageError(
            "give ids as arguments, or one per line on stdin (see 'couchids decode --help')"
        )
    form = named_form(args)
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
            fail(in_flags(str(exc), vars(args)), EXIT_BAD_INPUT)
            status = EXIT_BAD_INPUT
            continue
        out.write(json_line(_decoded(decoded)) + "\n")
    return status


def _decoded(decoded: DecodedId) -> dict[str, Any]:
    precision, when = decoded.form.precision_us, decoded.timestamp
    spec = (
        "microseconds" if precision < 1000 else "milliseconds" if precision < 10**6 else "seconds"
    )
    return {
        "id": decoded.id,
        "type": decoded.type,
        "timestamp": None if when is None else when.isoformat(timespec=spec).replace("+00:00", "Z"),
        "form": str(decoded.form),
        "kind": decoded.form.kind,
        "reverse": decoded.reverse,
        "millisecond": decoded.millisecond,
    }
