"""Every width, alphabet and limit couchids uses, named once."""

from typing import Final

#: kuuid's base62 alphabet. It is in byte order, so base62 strings of one width sort like their
#: numbers in ``_all_docs`` (which compares ids as raw bytes).
ALPHABET: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
BASE: Final = len(ALPHABET)

#: Characters of time at the front of a kuuid id.
PREFIX_LEN: Final = 8
#: The largest time an 8-character prefix holds; reverse ids store ``MAX_PREFIX_VALUE - time``.
MAX_PREFIX_VALUE: Final = BASE**PREFIX_LEN - 1
#: The earliest time a key range of a millisecond kuuid form reaches, 1980-01-01 in ms: an id
#: of the second modes (made up to 9999) reads in the millisecond mode of its block count as a
#: time before 1978-01-12, so the ranges of millisecond times begin above every one of them.
KUUID_MS_RANGE_FROM_MS: Final = 315_532_800_000
#: Characters in one random block: one unsigned 32-bit integer, zero-padded.
BLOCK_LEN: Final = 6
BLOCK_BITS: Final = 32
#: The base62 form of ``2**32 - 1``: the largest valid block.
MAX_BLOCK: Final = "4gfFC3"
MIN_BLOCKS: Final = 1
MAX_BLOCKS: Final = 4
DEFAULT_BLOCKS: Final = 4
SHORT_BLOCKS: Final = 2

#: UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, version 7, the RFC variant, 74 other bits.
V7_HEX_LEN: Final = 32
V7_LEN: Final = 36
V7_TIME_BITS: Final = 48
V7_VERSION: Final = 7
V7_RANDOM_BITS: Final = 74

#: A document type: what goes before the colon in ``user:<id>``.
TYPE_SEPARATOR: Final = ":"
TYPE_MAX_LEN: Final = 64
TYPE_PATTERN: Final = r"[A-Za-z0-9-][A-Za-z0-9_-]{0,63}"
#: The characters of :data:`TYPE_PATTERN`.
TYPE_CHARS: Final = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-")

#: Short daily ids: ``YYMMDD-<nonce>``.
SHORT_ID_ALPHABET: Final = "bcdfghjkmnpqrstvwxyz"
SHORT_ID_DATE_FORMAT: Final = "%y%m%d"

MS_PER_SECOND: Final = 1000
US_PER_MS: Final = 1000

#: What may join a type and an id: ``user:<id>`` (kuuid's, and what Cloudant partitions need),
#: ``user-<id>`` (the SimpleDB id specification) and ``acct_<id>`` (typed base36 UUIDv7 ids).
SEPARATORS: Final = (":", "-", "_")

#: tid62: 4 bytes of seconds since 2020-01-01T00:00:00Z, then 8 random bytes, read as one
#: 96-bit number and written as 17 base62 characters.
TID62_LEN: Final = 17
TID62_EPOCH_S: Final = 1_577_836_800
TID62_TIME_BITS: Final = 32
TID62_RANDOM_BITS: Final = 64

#: ULID: 48 bits of Unix milliseconds and 80 random bits, 26 characters of Crockford base32.
ULID_ALPHABET: Final = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ULID_LEN: Final = 26
ULID_TIME_LEN: Final = 10
ULID_RANDOM_BITS: Final = 80

#: A UUID (128 bits) in lower-case base36, zero-padded: CouchDB's ``base_36`` uuid format.
BASE36_ALPHABET: Final = "0123456789abcdefghijklmnopqrstuvwxyz"
BASE36_UUID_LEN: Final = 25
UUID_BITS: Final = 128

#: CouchDB's ``utc_random``/``utc_id``: 14 hex digits of microseconds since 1970.
UTC_TIME_LEN: Final = 14
UTC_RANDOM_LEN: Final = 18
#: The times a ``utc_random`` id holds, 2000-01-01 (inclusive) to 2100-01-01, in ms since
#: 1970. Any 32 hex digits read as some time up to 4253: the runway keeps out v7s ids made
#: before 2087 (they read as 1983-2000) and most of CouchDB's ``random`` ids.
UTC_RANDOM_FROM_MS: Final = 946_684_800_000
UTC_RANDOM_UNTIL_MS: Final = 4_102_444_800_000
HEX_DIGITS: Final = "0123456789abcdef"
#: CouchDB's ``random`` and ``sequential`` uuids: 32 hex digits holding no time.
COUCH_HEX_LEN: Final = 32

#: uuid464: a UUID as 22 characters of unpadded base64url.
UUID464_LEN: Final = 22

#: seq10 / seq36: zero-padded ordinals, 10 decimal digits or 7 base36 characters.
SEQ10_LEN: Final = 10
SEQ36_LEN: Final = 7
