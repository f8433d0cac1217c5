"""A real PostgreSQL for the tests: Debian's server binaries, a cluster made in a temporary folder
and listening only on a Unix socket in it (no TCP port), trust authentication, gone at the end.

`postgres_server` is a session fixture (conftest imports it); `PostgresServer.database()` makes
a fresh empty database and gives its URL, so each test has its own.  `journal_db` runs a test
on both backends: its journal is a file in the test's folder, then a database on that server.

Without PostgreSQL installed the tests that need it skip, unless PLANWEAVE_REQUIRE_POSTGRES=1
(`.ci/run` sets it after installing it), where they fail.

We may be root, whom `initdb` refuses: the cluster then belongs to the `postgres` user.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

__all__ = ["PostgresServer", "find_bin", "journal_db", "postgres_server"]

REQUIRE_ENV = "PLANWEAVE_REQUIRE_POSTGRES"


def find_bin() -> Path | None:
    """The newest installed PostgreSQL's bin folder (Debian's layout), or None."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return found[-1].parent if found else None


class PostgresServer:
    """One cluster in `root`, its socket in `root` too."""

    def __init__(self, bin_dir: Path, root: Path) -> None:
        self.bin = bin_dir
        self.root = root
        self.data = root / "data"
        self._user = _server_user()
        self._names = itertools.count(1)

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, user=self._user, check=True, capture_output=True, text=True, timeout=60
        )

    def start(self) -> PostgresServer:
        if self._user is not None:
            shutil.chown(self.root, user=self._user)
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
            "--no-sync", "-E", "UTF8", "--locale=C",
        )  # fmt: skip
        options = (
            f"-c listen_addresses='' -c unix_socket_directories={self.root} "
            "-c fsync=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip
        return self

    def stop(self) -> None:
        subprocess.run(
            [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"],
            user=self._user,
            capture_output=True,
            timeout=60,
        )

    def url(self, database: str = "postgres") -> str:
        """The URL of `database` on this server, over its socket."""
        return f"postgresql://postgres@/{database}?host={quote(str(self.root), safe='')}"

    def database(self) -> str:
        """A new empty database's URL."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop(self, url: str) -> None:
        """Remove the database of `url` (each takes about 7 MB), its connections cut."""
        import psycopg

        name = url.rpartition("/")[2].partition("?")[0]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _server_user() -> str | None:
    """Whom the server runs as: `postgres` when we are root (initdb refuses root), else us."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("running as root, and there is no `postgres` user to run PostgreSQL as")
    return "postgres"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    bin_dir = find_bin()
    if bin_dir is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"PostgreSQL is not installed, and {REQUIRE_ENV}=1")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        if os.environ.get(REQUIRE_ENV) == "1":
            raise
        pytest.skip("psycopg is not installed (pip install 'planweave[postgres]')")
    # A short path: a Unix socket's path is limited to about 100 bytes.
    root = Path(tempfile.mkdtemp(prefix="pw-pg-"))
    server = PostgresServer(bin_dir, root)
    try:
        server.start()
    except subprocess.CalledProcessError as exc:
        log = root / "log"
        shown = log.read_text() if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"PostgreSQL did not start: {exc.stderr}{exc.stdout}{shown}")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgres"])
def journal_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the test's journal is (`--db`, `Journal(...)`): an SQLite file in its folder, or
    a new database on the test server, dropped after the test."""
    if request.param == "sqlite":
        yield str(tmp_path / "runs.db")
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.database()
    yield url
    server.drop(url)
