"""Code that must type-check under mypy --strict (pyproject's [tool.mypy] files lists it).

It shows what typed ids promise a type checker: each class is its own type, made and parsed
ids keep their class, and every typed id is still a ``str``. tests/test_typed.py runs it too,
and checks that mypy refuses an ``OrderId`` where a ``UserId`` is expected.
"""

from __future__ import annotations

import json
from typing import assert_type

from couchids import V7S, TypedId


class TcUserId(TypedId, type="tc-user"):
    """Ids ``tc-user:<kuuid>``."""


class TcOrderId(TypedId, type="tc-order", form=V7S):
    """Ids ``tc-order:<v7s>``."""


def owner_of(order: TcOrderId, users: dict[TcOrderId, TcUserId]) -> TcUserId:
    return users[order]


def shout(text: str) -> str:
    return text.upper()


def main() -> list[str]:
    user = TcUserId.new()
    order = TcOrderId.new("2024-05-01T12:00:00Z")
    assert_type(user, TcUserId)
    assert_type(order, TcOrderId)
    assert_type(TcUserId(str(user)), TcUserId)
    assert_type(TcUserId.parse(str(user)), TcUserId)

    users = {order: user}
    assert_type(owner_of(order, users), TcUserId)

    parsed = TypedId.parse(str(order))
    assert_type(parsed, TypedId)
    if isinstance(parsed, TcOrderId):
        assert_type(parsed, TcOrderId)
        owner_of(parsed, users)

    # Still strings, everywhere a str is expected.
    as_text: str = user
    assert_type(user.timestamp.year, int)
    assert_type(order.decoded.type, str | None)
    return [shout(user), as_text, json.dumps({"_id": order})]


if __name__ == "__main__":
    print(main())
