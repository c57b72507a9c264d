"""Typed id classes: a ``UserId`` that a type checker tells apart from an ``OrderId``.

Each class names a document type and an id form; the form's separator joins them::

    from couchids import BASE36_V7, V7S, TypedId

    class UserId(TypedId, type="user"): ...  # user:<kuuid>
    class OrderId(TypedId, type="order", form=V7S): ...  # order:<v7s>
    class AccountId(TypedId, prefix="acct", form=BASE36_V7.with_separator("_")): ...  # acct_<…>

Instances are ``str`` subclasses holding the whole id, so every string API takes them and
``==``/``hash`` are the string's. With pydantic 2 (``couchids[pydantic]``) the classes
validate as model fields and give a JSON-schema ``pattern``.
"""

from __future__ import annotations

import builtins
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Self

from couchids.errors import InvalidIdError, InvalidTypeError
from couchids.idforms.constants import TYPE_SEPARATOR
from couchids.idforms.doctypes import check_type
from couchids.idforms.forms import KUUID, IdForm
from couchids.idforms.idform import NOT_READ
from couchids.idforms.times import TimeLike, to_datetime

if TYPE_CHECKING:
    from couchids.idforms.decode import DecodedId

__all__ = ["TypedId"]

_registry: dict[str, builtins.type[TypedId]] = {}
_registry_lock = threading.Lock()


class TypedId(str):
    """Base class of typed ids; subclass it with a document type (and optionally a form).

    ``class UserId(TypedId, type="user", form=KUUID)`` registers ``UserId`` for ids
    ``user:<id>`` of the form (default :data:`couchids.KUUID`), joined by its separator.
    ``prefix=`` (the Identifiers article's word) is another name for ``type=``. A subclass
    without ``type`` is an abstract base that sets the form for its subclasses. Each type
    belongs to one class; redefining a class of the same module and name (re-running a
    notebook cell) replaces it.

    Raises (at class creation):
        InvalidTypeError: ``type`` breaks the type rule, or another class already has it.
        TypeError: a subclass of a concrete id class gives no ``type`` of its own.
        TypeError: both ``type`` and ``prefix`` are given.

    >>> from couchids import V7S
    >>> class AccountId(TypedId, type="account"): ...
    >>> class InvoiceId(TypedId, type="invoice", form=V7S): ...
    >>> a = AccountId.new("2024-05-01T12:00:00Z")
    >>> a.startswith("account:"), a.timestamp.isoformat()
    (True, '2024-05-01T12:00:00+00:00')
    >>> AccountId(str(a)) == a, type(TypedId.parse(str(a))).__name__
    (True, 'AccountId')
    >>> from couchids import BASE36_V7
    >>> class MemberId(TypedId, prefix="member", form=BASE36_V7.with_separator("_")): ...
    >>> MemberId.new("2024-05-01")[:7], MemberId.id_prefix
    ('member_', 'member_')
    """

    #: The document type of this class's ids; ``None`` on abstract bases.
    doc_type: ClassVar[str | None] = None
    #: The id form after the type and the form's separator.
    form: ClassVar[IdForm] = KUUID
    #: The text every id of this class starts with (the type and the form's separator).
    id_prefix: ClassVar[str] = ""

    def __init_subclass__(
        cls,
        *,
        type: str | None = None,
        prefix: str | None = None,
        form: IdForm | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if prefix is not None:
            if type is not None:
                raise TypeError(f"{cls.__name__}: give type= or prefix= (the same thing), not both")
            type = prefix
        if form is not None:
            if not isinstance(form, IdForm):
                raise TypeError(f"{cls.__name__}: form={form!r} is not a couchids IdForm")
            cls.form = form
        if type is None:
            if cls.doc_type is not None:
                raise TypeError(
                    f"{cls.__name__} subclasses {cls.doc_type!r} id class "
                    f"{_name(_registry[cls.doc_type])}: give it a type of its own"
                )
            return
        cls.doc_type = check_type(type)
        cls.id_prefix = cls.form.type_prefix(type)
        with _registry_lock:
            other = _registry.get(type)
            if other is not None and _name(other) != _name(cls):
                raise InvalidTypeError(
                    f"type {type!r} is already used by {_name(other)}; each document type "
                    f"belongs to one id class, so {_name(cls)} needs another"
                )
            _registry[type] = cls

    def __new__(cls, value: str) -> Self:
        """Wrap and check an existing id string (use :meth:`new` to make one).

        Raises:
            InvalidIdError: ``value`` is not ``<type>:<id of this class's form>``.
        """
        if cls.doc_type is None:
            raise TypeError(
                f"{cls.__name__} is an abstract id class (no type); use TypedId.parse(value) "
                "or a subclass with a type"
            )
        if not isinstance(value, str):
            raise InvalidIdError(f"{value!r} is not a {cls.__name__}: ids are strings")
        prefix = cls.id_prefix
        if not value.startswith(prefix):
            found = _type_of(value)
            what = f"type {found!r}" if found is not None else "no type"
            raise InvalidIdError(
                f"{value!r} is not a {cls.__name__}: it has {what}, a {cls.__name__} starts "
                f"with {prefix!r}"
            )
        try:
            cls.form.read(value[len(prefix) :])
        except InvalidIdError as exc:
            raise InvalidIdError(f"{value!r} is not a {cls.__name__}: {exc}") from None
        return super().__new__(cls, value)

    @classmethod
    def new(cls, timestamp: TimeLike = None) -> Self:
        """Make a new id of this class for ``timestamp`` (default now).

        >>> class CartId(TypedId, type="cart"): ...
        >>> CartId.new("2024-01-01").decoded.timestamp.year
        2024
        """
        if cls.doc_type is None:
            raise TypeError(f"{cls.__name__} is an abstract id class (no type): it makes no ids")
        return str.__new__(cls, cls.form.new(timestamp, type=cls.doc_type))

    @classmethod
    def parse(cls, value: str) -> Self:
        """Wrap ``value`` in the class registered for its type (on a subclass, only its own):
        the class whose whole prefix the id starts with (``ses_`` never takes ``session_…``)
        and whose form the rest fits.

        Raises:
            InvalidIdError: no type, an unknown type (the message lists the known ones), a
                body not of the class's form, or a class other than the one called on.

        >>> class ShipmentId(TypedId, type="shipment"): ...
        >>> sid = TypedId.parse(str(ShipmentId.new()))
        >>> isinstance(sid, ShipmentId)
        True
        """
        if not isinstance(value, str):
            raise InvalidIdError(f"{value!r} is not an id: ids are strings")
        with _registry_lock:
            known = dict(_registry)
        candidates = [c for c in known.values() if value.startswith(c.id_prefix)]
        if not candidates:
            found = _type_of(value)
            what = f"unknown type {found!r}" if found is not None else "no type"
            raise InvalidIdError(
                f"{value!r} has {what}; known id types: {', '.join(sorted(known)) or 'none'}"
            )
        fits = [c for c in candidates if c.form.try_read(value[len(c.id_prefix) :]) is not NOT_READ]
        if len(fits) > 1:
            names = ", ".join(sorted(c.__name__ for c in fits))
            raise InvalidIdError(f"{value!r} is an id of several classes ({names})")
        # None fits: the class of the longest prefix says what is wrong with the rest.
        target = fits[0] if fits else max(candidates, key=lambda c: len(c.id_prefix))
        if not issubclass(target, cls):
            raise InvalidIdError(f"{value!r} is an id of {target.__name__}, not of {cls.__name__}")
        return target(value)

    @property
    def timestamp(self) -> datetime:
        """When the id was made, aware UTC, at the precision of the form."""
        return to_datetime(self.form.parse(self._body()))

    @property
    def decoded(self) -> DecodedId:
        """The id's type, time and form, as :func:`couchids.decode` gives them."""
        from couchids.idforms.decode import DecodedId

        return DecodedId(id=str(self), type=self.doc_type, timestamp=self.timestamp, form=self.form)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def _body(self) -> str:
        return self[len(self.id_prefix) :]

    @classmethod
    def json_pattern(cls) -> str:
        """A regex of this class's ids for JSON Schema (ECMA-262 syntax, anchored).

        >>> class SkuId(TypedId, type="sku"): ...
        >>> SkuId.json_pattern()[:5]
        '^sku:'
        """
        if cls.doc_type is None:
            raise TypeError(f"{cls.__name__} is an abstract id class (no type): it has no pattern")
        # Types and separators hold no regex metacharacters outside a character class.
        return "^" + cls.id_prefix + cls.form.body_pattern().replace(r"\Z", "$") + "$"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        def validate(value: str) -> TypedId:
            return cls(value) if cls.doc_type is not None else cls.parse(value)

        return core_schema.no_info_after_validator_function(
            validate,
            core_schema.str_schema(),
            serialization=core_schema.to_string_ser_schema(),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> Any:
        json_schema = handler(schema)
        if cls.doc_type is not None:
            json_schema["pattern"] = cls.json_pattern()
        return json_schema


def _type_of(value: str) -> str | None:
    """The type an id seems to name, for messages: the text before its first ``:``, or else
    before its first ``_``, or else before its first ``-``."""
    for separator in (TYPE_SEPARATOR, "_", "-"):
        found, sep, _ = value.partition(separator)
        if sep and found:
            return found
    return None


def _name(cls: builtins.type[Any]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
