"""What the ``couchids`` subcommands share: the flags (each defined once, with the name and
default of the library's parameter it feeds: ``--batch-size`` is ``batch_size``), how they are
read, and how a command speaks on stderr. It loads no server machinery: ``new`` and ``decode``
build their parsers with it alone.
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn, cast

from couchids.core.defaults import DEFAULT_PARALLEL, DEFAULT_TIMEOUT, MAX_TIMEOUT, REMOTE_PARALLEL
from couchids.errors import (
    InvalidArgumentError,
    InvalidInputError,
    InvalidTimeError,
    RateLimitedError,
)
from couchids.idforms.constants import DEFAULT_BLOCKS, SEPARATORS, SHORT_BLOCKS, TYPE_SEPARATOR
from couchids.idforms.doctypes import ALL_TYPES, AllTypes, scope_prefix
from couchids.idforms.forms import NAMED_FORMS, V7, V7S, IdForm, KuuidForm, form_named
from couchids.idforms.times import iso_ms, now_ms, span_ms, to_datetime, to_ms

EXIT_OK = 0
#: The server failed (unreachable, credentials, no such database, rate limited), or the
#: output could not be written.
EXIT_SERVER = 1
#: Bad usage or input, no server configured, a file named by a flag that cannot be opened,
#: or output characters the output's encoding lacks.
EXIT_BAD_INPUT = 2
#: 128 + SIGINT, the conventional status of a program stopped by Ctrl-C.
EXIT_INTERRUPTED = 130

TIME_HELP = (
    "an ISO-8601 date or time (2024-05-01, 2024-05-01T12:30:00Z; no offset means local time),\n"
    "'now', or a time ago: a whole number of ms, s, m (minutes), h, d or w, such as 90m, 24h,\n"
    "7d (no plain numbers: an epoch number's unit would be a guess)"
)


class UsageError(Exception):
    """A command line couchids cannot run: the message is the one line shown."""


class Parser(argparse.ArgumentParser):
    """The parser of the command and of each subcommand, whose epilogs are laid out by hand."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.help_of = self.prog  # whose --help an error points to
        # Two optional arguments by position (import's DB and FILE) are read wherever they
        # stand: argparse alone takes them only from the words before the first flag.
        self.intermixed = False

    def parse_known_args(  # type: ignore[override]
        self, args: Any = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self.intermixed:
            # parse_known_intermixed_args comes back here for each of its two passes.
            self.intermixed = False
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self.intermixed = True
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            # Arguments no parser knows: the innermost subcommand's --help lists its flags.
            if not hasattr(parsed, "help_of"):
                parsed.help_of = self.prog
            self.help_of = parsed.help_of
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: the --help of the command has the rest.
        if message.startswith("unrecognized arguments:") and re.search(
            r" (-v+|--verbose)\b", message
        ):
            message += "; -v goes before the command: couchids -v COMMAND ..."
        raise UsageError(f"{message} (see '{self.help_of} --help')")


def fail(message: str, status: int) -> int:
    """Say ``message`` on stderr as one line, every credential masked; return ``status``."""
    # Masking reads the configuration (and loads the SDK): only when something failed.
    from couchids.drivers.config import scrub

    say(f"error: {' '.join(scrub(message).split())}")
    return status


def json_line(value: Any) -> str:
    """``value`` as one line of compact JSON."""
    import json

    return json.dumps(value, separators=(",", ":"))


def say(text: str) -> None:
    """``couchids: text`` on stderr, which leaves the exit status as it is."""
    print(f"couchids: {text}", file=sys.stderr)


def iso(moment: datetime | int) -> str:
    """``moment`` (aware UTC, or epoch milliseconds) in ISO 8601, ending in ``Z``, to the
    millisecond where it has one.

    >>> iso(1714566600250), iso(1714566600000)
    ('2024-05-01T12:30:00.250Z', '2024-05-01T12:30:00Z')
    """
    return iso_ms(moment if isinstance(moment, int) else to_ms(moment))


def progress(what: str, total: int | None = None, unit: str = "doc") -> Any:
    """A progress bar (tqdm) of ``what`` on stderr when it is a terminal, nothing elsewhere."""
    from tqdm import tqdm  # here: every command starts up without it

    return tqdm(total=total, desc=what, unit=unit, file=sys.stderr, disable=not sys.stderr.isatty())


def close(stream: object) -> None:
    """Stop ``stream`` (a generator) now, rather than when it is collected."""
    getattr(stream, "close", lambda: None)()


def parse_time(text: str, now: int) -> int:
    """Read a command-line TIME as epoch milliseconds, as the library reads a string
    (:func:`~couchids.idforms.times.to_ms`): ISO 8601 (no offset: local time), ``now``, or a
    time ago counted back from ``now``, such as ``24h``.

    Raises:
        InvalidTimeError: anything else, or a time before 1970 or after 9999.

    >>> parse_time("24h", now=to_ms("2024-05-02T00:00Z"))
    1714521600000
    >>> parse_time("2024-05-01T00:00Z", now=0)
    1714521600000
    """
    return to_ms(text, now=now)


def time_flag(text: str) -> str:
    """The type of a TIME flag: ``text`` if :func:`parse_time` reads it (read again, all the
    command's TIMEs from one reading of the clock, when the command runs), so that a bad one
    is one line naming its flag."""
    if text.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} is a plain number, whose unit (seconds? milliseconds?) would be a guess: "
            "give an ISO-8601 time, such as 2024-05-01T12:30:00Z, or a time ago, such as 24h"
        )
    try:
        parse_time(text, now_ms())
    except InvalidTimeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def duration(text: str) -> str:
    """The type of a duration flag of units (``--every``): ``text`` if it is a whole number
    above 0 and a unit, such as ``15m`` or ``1d``."""
    if not span_ms(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration above 0: give a whole number and a unit, ms, s, "
            "m (minutes), h, d or w, such as 15m, 1h, 1d, 1w"
        )
    return text


#: The largest whole number a flag takes (unless it says less): JSON's largest exact integer,
#: past which a count or a size means nothing to a server (nor fits a float).
MOST_COUNT = 2**53 - 1


def count_of(least: int, most: int | None = None) -> Callable[[str], int]:
    """The type of a flag that takes a whole number from ``least`` (to ``most``, else to
    :data:`MOST_COUNT`)."""

    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # also more digits than int() reads
            value = least - 1
        top = MOST_COUNT if most is None else most
        if not least <= value <= top:
            bound = f">= {least}" if most is None and value < least else f"from {least} to {top}"
            raise argparse.ArgumentTypeError(f"{text!r:.80} is not a whole number {bound}")
        return value

    return read


#: A library message's opening ``name=``, which the flag's name replaces.
_NAMED = re.compile(r"^[a-z_]+=")


def checked(check: Callable[[str], object]) -> Callable[[str], str]:
    """The type of a flag whose text the library reads with ``check`` (which raises
    :class:`~couchids.errors.InvalidInputError`): the text, refused by the parser, before a
    server is asked, where ``check`` refuses it or where it is no UTF-8 text (an argument
    in another encoding)."""
    return functools.partial(_checked, check)


def _checked(check: Callable[[str], object], text: str) -> str:
    try:
        text.encode()
        check(text)
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            f"{text!r:.80} is not UTF-8 text (an argument in another encoding?)"
        ) from None
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(_NAMED.sub("", str(exc), count=1)) from None
    return text


def _scope(text: str) -> None:
    scope_prefix(text, TYPE_SEPARATOR)


def some(what: str) -> Callable[[str], None]:
    """A check that refuses an empty text, which ``what`` names."""
    return functools.partial(_some, what)


def _some(what: str, text: str) -> None:
    if not text:
        raise InvalidArgumentError(f"'' is no {what}")


def seconds(text: str, most: float = MAX_TIMEOUT) -> float:
    """The type of a flag that takes seconds, above 0 and at most ``most`` (``math.inf``: any
    finite number): a number of seconds, or a duration of units such as ``2s`` or ``10m``."""
    try:
        value = float(text)
    except ValueError:
        span = span_ms(text)
        value = -1.0 if span is None else span / 1000
    if not 0 < value <= most or value == math.inf:
        at_most = "" if most == math.inf else f" and at most {most:g} seconds"
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration above 0{at_most}: give seconds, such as 30 or 0.5, or "
            "a whole number and a unit, ms, s, m (minutes), h, d or w, such as 2s, 10m, 1h"
        )
    return value


#: The flags several subcommands take, by argparse dest (``flags``: other than ``--dest``),
#: which :func:`add` adds; a subcommand sets its own default with ``set_defaults``.
FLAGS: dict[str, dict[str, Any]] = {
    "db": {"flags": ["db"], "metavar": "DB", "help": "database name"},
    "type": {
        "type": checked(_scope),
        "metavar": "T",
        "help": "only ids T:<id> (default: untyped ids)",
    },
    "all_types": {"action": "store_true"},
    "since": {"required": True, "type": time_flag, "metavar": "TIME", "help": "start (inclusive)"},
    "until": {"type": time_flag, "metavar": "TIME", "help": "end (exclusive; {})"},
    "before": {"required": True, "type": time_flag, "metavar": "TIME"},
    "after": {
        "type": checked(some("id: give the last id a run printed")),
        "metavar": "ID",
        "help": "resume after this id",
    },
    "yes": {"action": "store_true"},
    "purge": {"action": "store_true", "help": "then purge (CouchDB only)"},
    "index_only": {
        "action": "store_true",
        "help": "count every id in the key range from the index (CouchDB, Cloudant): fewer "
        "requests, but child ids and other forms' ids in it count too",
    },
    "create_target": {"action": argparse.BooleanOptionalAction},
    "batch_size": {
        "type": count_of(1),
        "metavar": "N",
        "help": "{} per request (default %(default)s)",
    },
    "parallel": {
        "type": count_of(1),
        "default": DEFAULT_PARALLEL,
        "metavar": "K",
        "help": f"requests at a time (default %(default)s; {REMOTE_PARALLEL} suits a server tens "
        "of milliseconds away; 1: page after page)",
    },
    "timeout": {
        "type": seconds,
        "default": DEFAULT_TIMEOUT,
        "metavar": "SECONDS",
        "help": f"give up when {{}} takes longer (default {DEFAULT_TIMEOUT:g})",
    },
    "form": {
        "type": checked(form_named),
        "metavar": "NAME",
        "help": f"any form by name: {', '.join(NAMED_FORMS)}, utc_id:<suffix>",
    },
    "sep": {"choices": SEPARATORS, "help": "with --form: what joins type and id (default ':')"},
}


def add(parser: Any, *names: str, **given: Any) -> None:
    """Add the :data:`FLAGS` ``names`` and ``given`` to ``parser`` (or a group): a given string
    is the flag's help, or the words its help's ``{}`` takes; a dict, settings of its own."""
    for name in (*names, *given):
        settings, more = dict(FLAGS[name]), given.get(name)
        if isinstance(more, dict):
            settings.update(more)
        elif more is not None:
            template = settings.get("help", "")
            settings["help"] = template.format(more) if "{}" in template else more
        parser.add_argument(*settings.pop("flags", ["--" + name.replace("_", "-")]), **settings)


def add_form(parser: argparse.ArgumentParser, verb: str) -> None:
    """The flags of the id form, which :func:`form` reads."""
    group = parser.add_argument_group(f"id form ({verb}; default: forward kuuid ids in seconds)")
    group.add_argument("--reverse", action="store_true", help="reverse kuuid ids (newest first)")
    group.add_argument("--ms", action="store_true", help="kuuid ids with millisecond time")
    group.add_argument("--short", action="store_true", help="short kuuid ids (2 random blocks)")
    v7 = group.add_mutually_exclusive_group()
    v7.add_argument("--v7", action="store_true", help="UUIDv7 ids, 8-4-4-4-12 hex")
    v7.add_argument("--v7s", action="store_true", help="UUIDv7 ids, 32 hex characters")
    add(group, "form", "sep")


def window(args: argparse.Namespace) -> tuple[datetime, datetime]:
    """``(start, end)`` of ``--since``/``--until``, ending now by default."""
    now = now_ms()
    return moment(args.since, now), moment("now" if args.until is None else args.until, now)


def moment(text: str, now: int) -> datetime:
    """A TIME (:func:`parse_time`) as the aware UTC datetime the library is given: an
    instant, whatever its year (an int of a time before 1980 could read as seconds)."""
    return to_datetime(parse_time(text, now))


def scope(args: argparse.Namespace) -> str | AllTypes | None:
    """The ``type`` of ``--type``/``--all-types`` (which argparse refuses together)."""
    return ALL_TYPES if getattr(args, "all_types", False) else cast("str | None", args.type)


def named_form(args: argparse.Namespace) -> IdForm | None:
    """The form of ``--form NAME`` (and ``--sep``), or ``None`` when neither is given."""
    name, sep = getattr(args, "form", None), getattr(args, "sep", None)
    if name is None:
        if sep is not None:
            raise UsageError("--sep needs --form NAME")
        return None
    used = [
        f"--{flag}" for flag in ("reverse", "ms", "short", "v7", "v7s") if getattr(args, flag, 0)
    ]
    if used:
        raise UsageError(
            f"--form cannot be combined with {', '.join(used)}: the form "
            "name says it all (such as kuuid-ms-reverse)"
        )
    try:
        named = form_named(name)
        return named if sep is None else named.with_separator(sep)
    except InvalidArgumentError as exc:
        raise UsageError(str(exc)) from None


def form(args: argparse.Namespace) -> IdForm:
    """The id form of the flags :func:`add_form` adds."""
    named = named_form(args)
    if named is not None:
        return named
    if args.v7 or args.v7s:
        used = [f"--{flag}" for flag in ("reverse", "ms", "short") if getattr(args, flag)]
        if used:
            raise UsageError(
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


#: The library's parameters whose flag or argument has another name, the first the command has.
_FLAG_OF = {
    "start": ("since",),
    "end": ("until",),
    "millisecond": ("ms",),
    "name": ("source", "db"),  # a database handle's name
    "target_db": ("target",),
    "prefix": ("prefix", "series"),
    "time_of": ("time_field",),
    "key_of": ("key_field",),
}
#: The arguments given by position, as the usage lines write them.
_POSITIONAL = {"db": "DB", "source": "SOURCE", "target": "TARGET", "prefix": "PREFIX"}
#: The library's words for what a flag of the command gives, and the command's, where it has
#: the flag: a checkpoint given back is --after ID.
_PHRASES = (
    # In a server's failure, which is not read for parameters.
    ("after", "again from checkpoint last_id=", "again with --after "),
    ("after", "checkpoint last_id=", "after="),
    (
        "after",
        "a checkpoint resumes the operation that wrote it",
        "--after resumes the run that printed it",
    ),
    (
        "after",
        "pass checkpoint=None to start from the beginning",
        "leave out --after to start from the beginning",
    ),
    ("time_field", "give time_field", "give --time-field"),
    ("index_only", "count without index_only=True", "count without --index-only"),
    # tail is the library's follow: a failure names the command the user typed.
    ("since_seq", "follow on '", "tail on '"),
    # The command has no rate of its own to set: it learns the server's from its 429s.
    (
        "timeout",
        RateLimitedError.ADVICE,
        "give it a longer --timeout, run fewer commands against the server at once, or "
        "raise the instance's capacity",
    ),
)
#: ``name=`` and the character after it that a flag needs a space before (a value, not ``,;) ``).
_PARAMETER = re.compile(r"\b([a-z][a-z_]*)=(?=([^ ,;)]?))")


def in_flags(message: str, options: dict[str, object]) -> str:
    """A message of the library in the command's words: a parameter the command has a flag
    or an argument for (``every=``, ``start <= end``, a database's ``name=``) is named as the
    command's usage names it.

    >>> in_flags("every='0s': a bucket is at least one millisecond", {"every": "0s"})
    "--every '0s': a bucket is at least one millisecond"
    >>> in_flags("the window ends before it starts; pass start <= end", {"since": 1, "until": 0})
    'the window ends before it starts; pass --since <= --until'
    >>> in_flags("pass reverse= and millisecond= to say which", {"reverse": None, "ms": None})
    'pass --reverse and --ms to say which'
    >>> in_flags("name='Shop' is not a CouchDB database name", {"db": "Shop"})  # by position
    "DB 'Shop' is not a CouchDB database name"
    >>> in_flags("timeout=0: must be > 0", {"db": "shop"})  # no such flag: left as it is
    'timeout=0: must be > 0'
    """
    text = _PARAMETER.sub(
        lambda match: _flag(match[1], options, match[2]) or match[0], phrased(message, options)
    )
    start, end = _flag("start", options), _flag("end", options)
    return text.replace("start <= end", f"{start} <= {end}") if start and end else text


def phrased(message: str, options: dict[str, object]) -> str:
    """``message`` with the library's words for what a flag of the command gives in the
    command's (a server's failure too: ``count without index_only=True`` is ``count without
    --index-only``)."""
    for dest, words, flag_words in _PHRASES:
        if dest in options:
            message = message.replace(words, flag_words)
    return message


def _flag(name: str, options: dict[str, object], follows: str = "") -> str | None:
    dest = next((dest for dest in _FLAG_OF.get(name, (name,)) if dest in options), None)
    if dest is None:
        return None
    return _POSITIONAL.get(dest, "--" + dest.replace("_", "-")) + (follows and " ")
