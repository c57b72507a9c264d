"""A series on a server that caps its number of databases (IBM Cloudant since March 2025: 200
on Standard, 20 on Lite; the next ``PUT /{db}`` answers 403).

Also ``expire(purge=True)`` where there is no ``_purge`` (the Cloudant-rules server; a server
whose welcome says CouchDB and whose ``_purge`` answers 404): refused, nothing dropped or
deleted.

A daily series meets a cap of 10 databases on the Cloudant-rules server
(tests/cloudantproxy.py) in front of the server under test, through both APIs: ``prepare``
warns while there is room, the write that needs an 11th database is refused with a
:class:`~couchids.errors.DatabaseLimitError` saying what to do, nothing written is lost (a
refused ``create`` stores nothing, a refused ``bulk_create`` sends no document to any period),
and once ``expire`` drops old periods the same writes succeed. What tells the cap from a
refused permission, and Cloudant's own reading of its cap, are pinned with ``responses``.
"""

from __future__ import annotations

import asyncio
import re
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import responses
from cloudantproxy import CloudantProxy
from faultproxy import FaultProxy, all_docs, client_for
from ibm_cloud_sdk_core import ApiException
from ibm_cloud_sdk_core.authenticators import NoAuthAuthenticator
from ibmcloudant.cloudant_v1 import CloudantV1
from intercept import intercepted, path_of

import couchids
from couchids import UnauthorizedError, aio
from couchids.core.series import CAPACITY_PATH
from couchids.errors import DatabaseLimitError, DatabaseLimitWarning
from couchids.idforms.times import to_ms

DAY = 86_400_000
#: Days long past, so that none is the period of now (which ``prepare`` makes).
DAYS = [to_ms("2024-02-01") + n * DAY for n in range(8)]
#: The Cloudant-rules server's cap in the test: databases made through it.
CAP = 10


class Blocking:
    name = "blocking"

    def __init__(self, client: CloudantV1, prefix: str, **options: Any) -> None:
        self.series = couchids.Series(client, prefix, every="day", **options)

    def __call__(self, method: str, *args: Any, **options: Any) -> Any:
        return getattr(self.series, method)(*args, **options)


class Async:
    name = "aio"

    def __init__(self, client: CloudantV1, prefix: str, **options: Any) -> None:
        self.client, self.prefix, self.options = client, prefix, options

    def __call__(self, method: str, *args: Any, **options: Any) -> Any:
        async def main() -> Any:
            async with aio.AsyncClient(self.client) as ac:
                series = aio.AsyncSeries(ac, self.prefix, every="day", **self.options)
                return await getattr(series, method)(*args, **options)

        return asyncio.run(main())


@pytest.fixture(params=[Blocking, Async], ids=lambda api: api.name)
def api(request: pytest.FixtureRequest) -> type[Blocking] | type[Async]:
    kind: type[Blocking] | type[Async] = request.param
    return kind


@pytest.fixture
def prefix(client: CloudantV1) -> Iterator[str]:
    """A series prefix no other test uses; its databases are deleted afterwards."""
    name = f"cap{uuid.uuid4().hex[:10]}"
    yield name
    for db in client.get_all_dbs().get_result():
        if db.startswith(name + "-"):
            client.delete_database(db=db)


def stored_ids(client: CloudantV1, prefix: str) -> set[str]:
    """Every id stored in the series' databases, read straight from the server."""
    found: set[str] = set()
    for db in client.get_all_dbs().get_result():
        if db.startswith(prefix + "-"):
            found.update(all_docs(client, db))
    return found


def recorded(call: Callable[[], Any]) -> tuple[Any, list[warnings.WarningMessage]]:
    """What ``call`` returns, and the DatabaseLimitWarnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answer = call()
    return answer, [w for w in caught if issubclass(w.category, DatabaseLimitWarning)]


def test_a_daily_series_meets_a_cap_of_ten_databases(
    client: CloudantV1,
    cloudant_proxy: Callable[..., CloudantProxy],
    api: type[Blocking] | type[Async],
    prefix: str,
) -> None:
    proxy = cloudant_proxy(plan=None, max_databases=CAP)
    through = client_for(proxy.url)
    # The cap counts the databases made through the proxy: the server's own are others'.
    others = len(client.get_all_dbs().get_result())
    series = api(through, prefix, max_databases=others + CAP)

    # Room for six more after the four of now and the next three days: no warning.
    made, warned = recorded(lambda: series("prepare", 3))
    assert len(made) == 4 and not warned
    for day in DAYS[:5]:
        series("create", {"n": day}, type="r", timestamp=day)
    assert len(proxy.databases) == 9
    # One more can be made: within ahead=3 a new day's database is refused, and it says so.
    made_again, warned = recorded(lambda: series("prepare", 3))
    assert made_again == made and len(warned) == 1
    text = str(warned[0].message)
    assert f"holds {others + 9} databases and allows {others + CAP}" in text
    assert "1 more can be created" in text and "the 5th day after this one" in text
    assert "Series.expire" in text and "every='week'" in text

    series("create", {"n": 5}, type="r", timestamp=DAYS[5])  # the tenth
    before = stored_ids(client, prefix)
    with pytest.raises(DatabaseLimitError) as refused:
        series("create", {"n": 6}, type="r", timestamp=DAYS[6])
    assert refused.value.stored is False and refused.value.status == 403
    assert refused.value.doc_id is not None and refused.value.doc_id.startswith("r:")
    message = str(refused.value)
    assert f"{prefix}-2024-02-07" in message and "its answer speaks of a limit" in message
    assert "nothing was written" in message and "Series.expire" in message
    assert "check them" not in message  # not sent to the credentials
    assert stored_ids(client, prefix) == before

    # A bulk write across a day whose database exists and one whose database is refused:
    # the whole call is refused, and not one document is sent, to either day.
    docs = [{"at": DAYS[0] + 1}, {"at": DAYS[6] + 1}, {"at": DAYS[0] + 2}]
    sent = len(proxy.requests("POST", r"/_bulk_docs"))
    with pytest.raises(DatabaseLimitError) as refused_bulk:
        series("bulk_create", docs, type="r", time_of=lambda doc: doc["at"])
    assert not refused_bulk.value.results
    assert len(proxy.requests("POST", r"/_bulk_docs")) == sent
    assert stored_ids(client, prefix) == before

    # Retention makes room: the same writes then go through, each document once.
    report = series("expire", DAYS[2], dry_run=False)
    assert report.dropped == [f"{prefix}-2024-02-01", f"{prefix}-2024-02-02"]
    results = series("bulk_create", docs[1:2], type="r", time_of=lambda doc: doc["at"])
    stored = series("create", {"n": 7}, type="r", timestamp=DAYS[7])
    after = stored_ids(client, prefix)
    assert {result.id for result in results} | {stored.id} <= after
    assert len(proxy.databases) == CAP


@pytest.mark.needs("couchdb")
def test_a_refused_write_of_a_dropped_period_keeps_the_results_of_the_others(
    client: CloudantV1, cloudant_proxy: Callable[..., CloudantProxy], prefix: str
) -> None:
    """The database of a period is dropped after bulk_create looked it up, and the cap
    refuses it again: the periods before it stay written and reported, and its documents are
    reported refused, none stored."""
    proxy = cloudant_proxy(plan=None, max_databases=2)
    through = client_for(proxy.url)
    series = couchids.Series(through, prefix, every="day")
    series.create({"n": 0}, timestamp=DAYS[0])
    series.create({"n": 1}, timestamp=DAYS[1])
    docs = [{"at": DAYS[0] + 5}, {"at": DAYS[1] + 5}]
    first, second, other = f"{prefix}-2024-02-01", f"{prefix}-2024-02-02", f"{prefix}x-other"

    def racing(request: dict[str, Any], send: Callable[[], Any]) -> Any:
        # As the first day's documents go, another process drops the second day's database
        # and makes one of its own: the cap is met again.
        if path_of(request) == f"/{first}/_bulk_docs" and other not in proxy.databases:
            client.delete_database(db=second)
            proxy.databases.discard(second)
            client_for(proxy.url).put_database(db=other)
        return send()

    try:
        with intercepted(through, racing), pytest.raises(DatabaseLimitError) as refused:
            series.bulk_create(docs, time_of=lambda doc: doc["at"])
    finally:
        if other in proxy.databases:
            client.delete_database(db=other)
    results = refused.value.results
    assert len(results) == 2
    assert results[0].ok and results[0].id in all_docs(client, f"{prefix}-2024-02-01")
    assert isinstance(results[1].error, DatabaseLimitError) and results[1].error.stored is False
    with pytest.raises(ApiException):
        client.get_database_information(db=second)


# -- what tells the cap from a permission (HTTP pinned) ----------------------------------------

URL = "http://cloudant.test"
COUCHDB = {"couchdb": "Welcome", "version": "3.4.3"}
CLOUDANT = {"couchdb": "Welcome", "version": "3.4.3", "vendor": {"name": "IBM Cloudant"}}


def pinned() -> CloudantV1:
    client = CloudantV1(authenticator=NoAuthAuthenticator())
    client.set_service_url(URL)
    return client


def forbidden(reason: str) -> dict[str, str]:
    return {"error": "forbidden", "reason": reason}


@responses.activate
def test_a_refused_permission_stays_a_refused_permission() -> None:
    responses.get(f"{URL}/", json=COUCHDB)
    missing_day()
    responses.put(f"{URL}/ev-2024-02-01", status=403, json=forbidden("You are not a server admin."))
    with pytest.raises(UnauthorizedError) as refused:
        _prepare_day(couchids.Series(pinned(), "ev", every="day"))
    assert not isinstance(refused.value, DatabaseLimitError)


@responses.activate
def test_the_count_against_max_databases_shows_the_cap() -> None:
    missing_day()
    responses.put(f"{URL}/ev-2024-02-01", status=403, json=forbidden("Forbidden"))
    responses.get(f"{URL}/_all_dbs", json=["_users", "a", "b"])
    series = couchids.Series(pinned(), "ev", every="day", max_databases=3)
    with pytest.raises(DatabaseLimitError, match="it holds 3 databases, and allows 3"):
        _prepare_day(series)
    # Under the cap, the same 403 is a permission.
    responses.replace(responses.GET, f"{URL}/_all_dbs", json=["_users", "a"])
    with pytest.raises(UnauthorizedError) as refused:
        _prepare_day(series)
    assert not isinstance(refused.value, DatabaseLimitError)


def _prepare_day(series: couchids.Series) -> None:
    """A write to DAYS[0], whose database is missing: it is created, as a write does."""
    series.create({"n": 1}, timestamp=DAYS[0])


def missing_day() -> None:
    """The database of DAYS[0] does not exist: a document written to it answers 404."""
    missing = {"error": "not_found", "reason": "Database does not exist."}
    responses.put(re.compile(f"{URL}/ev-2024-02-01/.+"), status=404, json=missing)


@responses.activate
def test_cloudant_reads_its_own_cap_and_prepare_warns() -> None:
    responses.get(f"{URL}/", json=CLOUDANT)
    responses.put(re.compile(URL + r"/ev-\d{4}-\d{2}"), status=201, json={"ok": True})
    responses.get(f"{URL}{CAPACITY_PATH}", json={"current": {"databases": {"total": 20}}})
    responses.get(f"{URL}/_all_dbs", json=[f"db{n}" for n in range(19)])
    series = couchids.Series(pinned(), "ev", every="month")
    _, warned = recorded(lambda: series.prepare(1))
    assert len(warned) == 1
    assert "holds 19 databases and allows 20 (/_api/v2/user/capacity/databases)" in str(
        warned[0].message
    )
    # Credentials that may not read the capacity (it needs the manager role): no warning,
    # no error.
    responses.replace(responses.GET, f"{URL}{CAPACITY_PATH}", status=403, json=forbidden("no"))
    _, warned = recorded(lambda: series.prepare(1))
    assert not warned


def test_max_databases_must_be_a_positive_int(client: CloudantV1) -> None:
    for bad in (0, -1, 1.5, True, "200"):
        with pytest.raises(couchids.InvalidArgumentError, match="max_databases"):
            couchids.Series(client, "ev", max_databases=bad)  # type: ignore[arg-type]


# -- expire(purge=True) on a server without _purge -----------------------------------------------


def check_purge_refused(client: CloudantV1, through: CloudantV1, api: Any, prefix: str) -> None:
    """Three days of a series, then expire(purge=True) in the middle day through ``through``,
    a server without ``_purge``: refused, naming purge=True, with no database dropped and no
    document deleted."""
    series = api(through, prefix)
    for day in DAYS[:3]:
        for hour in (1, 20):
            series("create", {"n": hour}, type="r", timestamp=day + hour * 3_600_000)
    before = {db: all_docs(client, db) for db in client.get_all_dbs().get_result()}
    # In the middle of a day, and where every database would be dropped whole.
    for cutoff in (DAYS[1] + 12 * 3_600_000, DAYS[3]):
        with pytest.raises(couchids.InvalidArgumentError, match=r"purge=True: .*no _purge") as no:
            series("expire", cutoff, dry_run=False, purge=True)
        assert "nothing was deleted" in str(no.value)
    after = {db: all_docs(client, db) for db in client.get_all_dbs().get_result()}
    assert {db: docs for db, docs in after.items() if db.startswith(prefix)} == {
        db: docs for db, docs in before.items() if db.startswith(prefix)
    }


def test_series_expire_purge_on_the_cloudant_rules_server_changes_nothing(
    client: CloudantV1,
    cloudant_proxy: Callable[..., CloudantProxy],
    api: type[Blocking] | type[Async],
    prefix: str,
) -> None:
    proxy = cloudant_proxy(plan=None)
    check_purge_refused(client, client_for(proxy.url), api, prefix)


@pytest.mark.needs("couchdb")
def test_series_expire_purge_behind_a_couchdb_welcome_without_purge_changes_nothing(
    couch_url: str, client: CloudantV1, api: type[Blocking] | type[Async], prefix: str
) -> None:
    with FaultProxy(couch_url) as proxy:
        proxy.fail("404-before", method="POST", path=r"/_purge$", times=50)
        check_purge_refused(client, client_for(proxy.url), api, prefix)
        assert not proxy.requests("DELETE") and not proxy.requests("POST", r"/_bulk_docs$")
