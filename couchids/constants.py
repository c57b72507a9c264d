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

#: Short daily ids: ``YYMMDD-<nonce>``.
SHORT_ID_ALPHABET: Final = "bcdfghjkmnpqrstvwxyz"
SHORT_ID_DATE_FORMAT: Final = "%y%m%d"

MS_PER_SECOND: Final = 1000
