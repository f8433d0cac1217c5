"""What `--db` and PLANWEAVE_DB may name, and what is said of it: a PostgreSQL URL's password
never shown however malformed the URL, another URL scheme refused, a database someone else
prepared refused with a JournalError (review findings 5, 6 and 13)."""

from __future__ import annotations

import pytest

from planweave.errors import JournalError
from planweave.redaction import mask_userinfo, redact_url
from planweave.store import Journal
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
