"""What `--db` and PLANWEAVE_DB may name, and what is said of it: a PostgreSQL URL's password
never shown however malformed the URL, another URL scheme refused, a database someone else
prepared refused with a JournalError (review findings 5, 6 and 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_process import invoke_cli
from planweave.errors import JournalError, UserError
from planweave.redaction import mask_userinfo, redact_url
from planweave.store import Journal
from planweave.store.postgres import is_url
from postgres_server import PostgresServer


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://alice:Hunter2Secret@[::1/db",  # urlsplit refuses it
        "postgresql://alice:Hunter2/Secret@127.0.0.1:1/db",  # libpq reads `alice` as the host
        "postgresql://alice:Hunter2?Secret@127.0.0.1:1/db",
        "postgresql://alice:Hunter2#Secret@127.0.0.1:1/db",
        "postgresql://alice:Hunter2Secret@127.0.0.1:1/db?sslmode=bogus",
        "postgresql://[::1/db?password=Hunter2Secret",
    ],
)
def test_a_malformed_postgresql_url_never_shows_its_password(url: str) -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(JournalError) as failed:
        Journal(url)
    assert "Hunter2" not in str(failed.value), str(failed.value)
    assert "Hunter2" not in (failed.value.path or "")
    assert "Secret" not in str(failed.value)


def test_a_password_urlsplit_refuses_is_masked_on_a_journal_that_opens(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.database()
    # The server trusts its socket, so any password connects; libpq takes `[` in one.
    journal = Journal(url.replace("postgres@", "postgres:Hunter2[Secret@"))
    assert journal.path == url.replace("postgres@", "[redacted]@")
    journal.close()
    postgres_server.drop(url)


def test_the_userinfo_is_masked_up_to_the_last_at() -> None:
    assert mask_userinfo("postgresql://a:b/c@d@host/db") == "postgresql://[redacted]@host/db"
    assert mask_userinfo("postgresql:///db?host=/tmp") == "postgresql:///db?host=/tmp"
    assert mask_userinfo("no url at all") == "no url at all"
    shown = redact_url("http://u:Hunter2[x@[::1/v1?api_key=Hunter2Key&model=m")
    assert "Hunter2" not in shown
    assert shown.endswith("?api_key=[redacted]&model=m")


@pytest.mark.parametrize(
    "scheme", ["PostgreSQL://", "POSTGRES://", "postgresql+psycopg://", "Postgres+psycopg2://"]
)
def test_a_postgresql_url_in_any_case_or_with_a_driver_opens_postgresql(
    scheme: str,
    postgres_server: PostgresServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    url = postgres_server.database()
    assert is_url(scheme + url.partition("://")[2])
    journal = Journal(scheme + url.partition("://")[2].replace("postgres@", "postgres:pw@"))
    journal.create_run("r1", "q", "compiled", {})
    assert Journal(url).find("r1") == "r1"  # the same database
    assert journal.path == url.replace("postgres@", "[redacted]@")
    assert list(tmp_path.iterdir()) == []  # no file made of the URL
    journal.close()
    postgres_server.drop(url)


@pytest.mark.parametrize(
    "url",
    [
        "mysql://alice:Hunter2Secret@db.example/runs",
        "sqlite:///tmp/alice:Hunter2Secret@x/runs.db",
        "http://alice:Hunter2Secret@db.example/runs",
        "postgresq1://alice:Hunter2Secret@db.example/runs",
    ],
)
def test_a_url_of_another_scheme_is_refused_without_its_credentials(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=r"postgresql://\.\.\. or postgres://\.\.\.") as failed:
        Journal(url)
    assert "Hunter2" not in str(failed.value)
    assert url.partition("://")[0] + "://" in str(failed.value)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("PLANWEAVE_DB", url)
    with pytest.raises(UserError):
        Journal()
    done = invoke_cli("runs", "list", "--db", url)
    assert done.returncode == 2
    assert "cannot be a" in done.stdout + done.stderr
    assert "Hunter2" not in done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_path_or_a_windows_drive_is_no_url() -> None:
    assert not is_url("runs.db")
    assert not is_url("C://journals/runs.db")
    assert not is_url(Path("mysql://x"))


@pytest.mark.parametrize(
    ("made", "said"),
    [
        (["CREATE TABLE planweave_schema (version BIGINT)"], "its version is None"),
        (
            [
                "CREATE TABLE planweave_schema (version TEXT)",
                "INSERT INTO planweave_schema VALUES ('x')",
            ],
            "its version is 'x'",
        ),
        (
            [
                "CREATE TABLE planweave_schema (version BIGINT)",
                "INSERT INTO planweave_schema VALUES (1)",
            ],
            "its version is 1,",
        ),
        (
            [
                "CREATE TABLE planweave_schema (version BIGINT)",
                "INSERT INTO planweave_schema VALUES (-5)",
            ],
            "its version is -5,",
        ),
        (
            [
                "CREATE TABLE planweave_schema (version NUMERIC)",
                "INSERT INTO planweave_schema VALUES (9.5)",
            ],
            "its version is Decimal('9.5')",
        ),
    ],
)
def test_a_planweave_schema_table_no_planweave_wrote_is_refused_untouched(
    made: list[str], said: str, postgres_server: PostgresServer
) -> None:
    import psycopg

    url = postgres_server.database()
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in made:
            conn.execute(statement)
    for read_only in (False, True):
        with pytest.raises(JournalError, match="planweave_schema that no planweave wrote") as e:
            Journal(url, read_only=read_only)
        assert said in str(e.value)
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    assert tables == [("planweave_schema",)]
    postgres_server.drop(url)
