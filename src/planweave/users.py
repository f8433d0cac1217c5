"""Users of a server: who holds which token, and which runs each may see.

A users file (TOML, `planweave users add` writes it) names each user, their role and the
hashes of their tokens; a server given one (`--users`, env PLANWEAVE_USERS) takes a request
only with one of those tokens, and the run it starts is that user's (`RunSettings.user`)::

    [[users]]
    name = "alice"
    role = "user"          # or "admin"
    tokens = ["sha256:9f86d0…"]

A user reads, follows, approves, rejects, resumes and cancels only their own runs; an admin
all of them.  Another user's run is no run at all to them (`RunNotFound`, a 404): they cannot
tell it exists.  The single token of a server without a users file (or no token, on
loopback) is the operator: an admin whose runs carry no user, as runs started with
`planweave run` do.

Tokens are made here (`new_token`: 256 random bits), so a hash need not be slow: SHA-256 of
such a token cannot be reversed or guessed, and checking it costs a request microseconds, not
the tens of milliseconds a password hash would (which a flood of requests would turn into a
denial of service).  A token is compared with every hash in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

from .errors import RunNotFound, UserError
from .store import Journal, views

__all__ = [
    "OPERATOR",
    "USERS_ENV",
    "Role",
    "User",
    "Users",
    "add_user",
    "find_run",
    "hash_token",
    "new_token",
    "read_users",
    "runs_of",
]

USERS_ENV = "PLANWEAVE_USERS"
Role = Literal["user", "admin"]
ROLES: tuple[Role, ...] = ("user", "admin")
HASH = re.compile(r"sha256:[0-9a-f]{64}")
# A user's name is the run's `RunSettings.user`: the same bounds.
MAX_NAME_CHARS = 200
# The page's name for the operator (whose runs carry no user): no user may take it.
RESERVED_NAME = "operator"


@dataclass(frozen=True, slots=True)
class User:
    """Who a request comes from: `name` (None: the operator, whose runs carry no user) and
    `role`."""

    name: str | None
    role: Role

    @property
    def admin(self) -> bool:
        return self.role == "admin"


# The one caller of a server without users: its token's holder, or (no token) anyone on
# loopback.  Its runs are started as `planweave run` starts them: with no user.
OPERATOR = User(None, "admin")


def new_token() -> str:
    """A new token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def hash_token(token: str | bytes) -> str:
    """What a users file keeps of `token`: `sha256:` and its SHA-256 in hex."""
    raw = token.encode() if isinstance(token, str) else token
    return "sha256:" + hashlib.sha256(raw).hexdigest()


class Users:
    """Who may call a server: each known token's hash and its user.  `token` (the single
    `--token`) stands for the operator."""

    def __init__(
        self, users: Iterable[tuple[User, Sequence[str]]] = (), *, token: str | None = None
    ) -> None:
        self._hashes: list[tuple[bytes, User]] = []
        self.names: dict[str, User] = {}
        for user, hashes in users:
            if user.name is not None:
                self.names[user.name] = user
            self._hashes += [(_digest(h), user) for h in hashes]
        if token is not None:
            self._hashes.append((hashlib.sha256(token.encode()).digest(), OPERATOR))

    @classmethod
    def load(cls, path: str | Path, *, token: str | None = None) -> Users:
        """The users of the file at `path` (and the operator's `token`); UserError naming the
        file and what is wrong with it."""
        users = read_users(path)
        if not users:
            raise UserError(
                f"the users file {path} names no user: add one with `planweave users add NAME "
                f"--file {path}`"
            )
        return cls(users, token=token)

    def with_operator(self, token: str | None) -> Users:
        """These users, and the operator's `token` besides (when given)."""
        if token is None:
            return self
        both = Users()
        both.names = dict(self.names)
        both._hashes = [*self._hashes, (hashlib.sha256(token.encode()).digest(), OPERATOR)]
        return both

    @property
    def required(self) -> bool:
        """Whether a request must carry a token (any is known)."""
        return bool(self._hashes)

    def authenticate(self, token: bytes) -> User | None:
        """The user `token` belongs to, or None; every hash is compared, in constant time."""
        digest = hashlib.sha256(token).digest()
        found: User | None = None
        for known, user in self._hashes:
            if hmac.compare_digest(digest, known) and found is None:
                found = user
        return found


def _digest(text: str) -> bytes:
    return bytes.fromhex(text.removeprefix("sha256:"))


def read_users(path: str | Path) -> list[tuple[User, list[str]]]:
    """The users the file at `path` names, each with its token hashes (none: an empty list);
    UserError naming the file and what is wrong with it."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"the users file {path} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UserError(f"the users file {path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"the users file {path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise UserError(f"the users file {path} nests its tables or arrays too deeply") from None
    return _users(data, path)


def _users(data: dict[str, Any], path: Path) -> list[tuple[User, list[str]]]:
    """The users a parsed users file names; UserError for anything else in it."""

    def bad(where: str, problem: str) -> UserError:
        return UserError(f"the users file {path}: {where}: {problem}")

    extra = sorted(set(data) - {"users"})
    if extra:
        raise bad("top level", f"unknown keys {', '.join(extra)} (only [[users]] tables)")
    entries = data.get("users", [])
    if not isinstance(entries, list):
        raise bad("users", "must be an array of tables ([[users]])")
    found: list[tuple[User, list[str]]] = []
    names: set[str] = set()
    hashes: set[str] = set()
    for n, entry in enumerate(entries, 1):
        where = f"user {n}"
        if not isinstance(entry, dict):
            raise bad(where, "must be a table ([[users]])")
        extra = sorted(set(entry) - {"name", "role", "tokens"})
        if extra:
            raise bad(where, f"unknown keys {', '.join(extra)} (name, role, tokens)")
        name = entry.get("name")
        check_name(name, partial(bad, where))
        assert isinstance(name, str)
        where = f"user {name!r}"
        if name in names:
            raise bad(where, "named twice")
        role = entry.get("role", "user")
        if role not in ROLES:
            raise bad(where, f"role must be one of {', '.join(ROLES)}, not {role!r}")
        tokens = entry.get("tokens")
        if not isinstance(tokens, list) or not tokens:
            raise bad(where, "tokens must be a non-empty list of token hashes")
        for token in tokens:
            if not isinstance(token, str) or not HASH.fullmatch(token):
                shown = repr(token)[:40]
                raise bad(
                    where,
                    f"{shown} is no token hash (sha256: and 64 hex digits; `planweave users "
                    "add` writes them)",
                )
            if token in hashes:
                raise bad(where, "a token hash is given twice")
            hashes.add(token)
        names.add(name)
        found.append((User(name, role), list(tokens)))
    return found


def check_name(name: object, bad: Callable[[str], Exception]) -> None:
    """A user's name must be one a run's settings can hold: 1 to MAX_NAME_CHARS printable
    characters, not blank; and one the page cannot mistake for another: no space before or
    after it (`" alice"` would be a second alice), no parentheses (`alice (admin)`), and not
    `operator` in any case (the page's name for the operator).  `bad(problem)` is the error
    raised."""
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > MAX_NAME_CHARS
        or not name.isprintable()
    ):
        raise bad(f"name must be 1 to {MAX_NAME_CHARS} printable characters, not {name!r}")
    if name != name.strip():
        raise bad(f"name must not begin or end with a space, as {name!r} does")
    if "(" in name or ")" in name:
        raise bad(f"name must not hold parentheses, as {name!r} does")
    if name.casefold() == RESERVED_NAME:
        raise bad(f"name {name!r} is reserved: the operator (--token, or loopback) goes by it")


def add_user(path: str | Path, name: str, role: Role = "user") -> str:
    """Add user `name` to the users file at `path` (made, readable by its owner only, when
    there is none) with a new token; returns the token, which is kept nowhere (only its hash
    is written).  UserError for a name the file already has, or a file that does not read."""
    path = Path(path)
    check_name(name, lambda problem: UserError(f"the user's {problem}"))
    if role not in ROLES:
        raise UserError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError):
        before = "?"  # read_users says what is wrong with it
    known = {user.name for user, _ in read_users(path)} if before else set()
    if name in known:
        raise UserError(f"the users file {path} already has a user {name!r}")
    token = new_token()
    # Appended, so that what a person wrote in the file (comments) stays; TOML's basic strings
    # take JSON's escapes, and a printable name needs none but \" and \\.
    block = (
        f"[[users]]\nname = {json.dumps(name, ensure_ascii=False)}\nrole = {json.dumps(role)}\n"
        f"tokens = [{json.dumps(hash_token(token))}]\n"
    )
    lead = (
        "" if not before or before.endswith("\n\n") else "\n" if before.endswith("\n") else "\n\n"
    )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as file:
            file.write(lead + block)
    except OSError as exc:
        raise UserError(f"the users file {path} cannot be written: {exc.strerror or exc}") from None
    Users.load(path)  # what was written reads back
    return token


def find_run(journal: Journal, user: User, run_id: str) -> str:
    """The full id of the run `run_id` (or a unique prefix of it) names among those `user`
    sees; RunNotFound otherwise, whether or not another user's run has that id."""
    if user.admin:
        return journal.find(run_id)
    rows = journal.read(
        f"SELECT id FROM runs WHERE id >= ? AND id < ? AND {journal.dialect.user_of} = ? LIMIT 2",
        (run_id, run_id + "\uffff", user.name),
    )
    if len(rows) == 1:
        return str(rows[0]["id"])
    if rows:  # two of their own runs: the prefix is theirs to lengthen
        journal.find(run_id)
    raise RunNotFound(f"no run {run_id!r}", run_id=run_id)


def runs_of(
    journal: Journal, user: User, limit: int, *, before: str | None = None
) -> list[dict[str, Any]]:
    """The newest `limit` runs `user` sees, as `Journal.runs` gives them; `before` (a run they
    see) pages on."""
    if before is not None:
        before = find_run(journal, user, before)
    if user.admin:
        return journal.runs(limit, before=before)
    return views.runs(journal, limit, before=before, user=user.name)
