"""Where the schedule's rows live: SQLite (one host, the default) or PostgreSQL (a fleet), behind one SQL.

One SQL that both databases accept, not SQLAlchemy Core: the store is a dozen short statements that SQLite and
PostgreSQL both run as written (`ON CONFLICT` upserts, `?` placeholders that this module turns into psycopg's
`%s`), and the three places where they truly differ are small enough to say plainly here: the DDL of an
auto-numbered id and of a float, how a claim locks (BEGIN IMMEDIATE takes SQLite's one write lock; PostgreSQL
takes row locks with SELECT ... FOR UPDATE [SKIP LOCKED]), and the database's own clock, which judges every
lease so that no host's clock does. SQLAlchemy would add a dependency and a layer without removing one statement.

A database is named by a URL: a path or ``sqlite:///path`` (SQLite, stdlib sqlite3, WAL) or
``postgresql://user@host:port/db?sslmode=require`` (psycopg 3). A URL's password is registered with the one
redactor (engine.core.redact) the moment it is read, and every description of a database (`where`) leaves it out.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from engine.core.errors import ScheduleError, ScheduleUnreachable
from engine.core.redact import add_secret, redact_text

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000
"""How long a write waits for another writer (SQLite's busy timeout, PostgreSQL's lock_timeout)."""
CONNECT_TIMEOUT_S = 10
URL_FORM = "the form is postgresql://USER@HOST:PORT/DB?sslmode=require, its password after USER and a colon"
STATEMENT_TIMEOUT_MS = 15000


def is_postgres(url: str | Path) -> bool:
    return str(url).startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


def read_url_file(path: str | Path) -> str:
    """The database URL kept in `path` (its first line). A file that its group or others may read is refused: it
    holds a password."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScheduleError(f"cannot read the database URL file {path}: {getattr(exc, 'strerror', None) or exc}",
                            path=str(path)) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ScheduleError(f"the database URL file {path} can be read by others (mode {stat.S_IMODE(mode):o}): "
                            f"it holds a password; `chmod 600 {path}`", path=str(path))
    url = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not url:
        raise ScheduleError(f"the database URL file {path} is empty", path=str(path))
    return url


ENV_URL = "ENGINE_DB_URL"
ENV_URL_FILE = "ENGINE_DB_URL_FILE"
ENV_PATH = "ENGINE_SCHEDULE_DB"


def default_path() -> Path:
    from engine.core.paths import agent_home

    return agent_home() / "schedule.sqlite3"


def database_url(db: str | Path | None = None, db_file: str | Path | None = None) -> str:
    """The schedule's database: `db` (--db), else the URL in `db_file` (--db-file), else $ENGINE_DB_URL, else the
    URL in the file $ENGINE_DB_URL_FILE, else $ENGINE_SCHEDULE_DB, else $ENGINE_HOME/schedule.sqlite3."""
    if db:
        return str(db)
    if db_file:
        return read_url_file(db_file)
    if os.environ.get(ENV_URL):
        return os.environ[ENV_URL]
    if os.environ.get(ENV_URL_FILE):
        return read_url_file(os.environ[ENV_URL_FILE])
    return os.environ.get(ENV_PATH) or str(default_path())


def database_exists(url: str | Path) -> bool:
    """Whether there is a schedule to share: a SQLite file that exists, or a PostgreSQL database that holds its
    tables (ScheduleUnreachable when its server does not answer)."""
    backend = open_backend(url)
    try:
        return backend.exists()
    finally:
        backend.close_all()


def open_backend(url: str | Path) -> SqliteBackend | PostgresBackend:
    text = str(url)
    if is_postgres(text):
        return PostgresBackend(text)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///"):]  # sqlite:///relative/path, sqlite:////absolute/path (as SQLAlchemy)
    elif "://" in text:
        raise ScheduleError(f"not a schedule database: {redact_text(text)[:120]!r} (a file path, sqlite:///PATH or "
                            "postgresql://USER@HOST/DB)")
    return SqliteBackend(Path(text))


class _Db:
    """One transaction's cursor: `?` placeholders, rows as tuples, errors as the backend's."""

    def __init__(self, conn: Any, pg: bool) -> None:
        self.conn, self.pg = conn, pg

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.pg else sql

    def all(self, sql: str, args: Sequence = ()) -> list[tuple]:
        return list(self.conn.execute(self._sql(sql), tuple(args)).fetchall())

    def one(self, sql: str, args: Sequence = ()) -> tuple | None:
        return self.conn.execute(self._sql(sql), tuple(args)).fetchone()

    def run(self, sql: str, args: Sequence = ()) -> None:
        self.conn.execute(self._sql(sql), tuple(args))

    def many(self, sql: str, rows: Sequence[Sequence]) -> None:
        if rows:
            self.conn.cursor().executemany(self._sql(sql), [tuple(r) for r in rows])


class _Backend:
    kind = ""
    NOW = ""
    """The database's clock in epoch seconds, as an SQL expression: every lease is judged by it."""
    LOCK = ""
    """What a claim's SELECT of its rows ends with: a row lock where the database has them."""
    SKIP = ""
    """The same, skipping a row another transaction holds (a claim in progress elsewhere: not ours to wait for)."""
    BEGIN = "BEGIN"
    ERRORS: tuple[type[BaseException], ...] = ()
    STARTED = ""
    """When the database server started (epoch seconds, SQL), where it can be down while its hosts live."""

    def held(self, lease: str) -> str:
        """SQL: for how long the owner of `lease` (a column or aggregate) has been silent, on the database's clock;
        never counted from before the server started (NULL when there is no lease)."""
        if not self.STARTED:
            return f"({self.NOW} - {lease})"
        return f"({self.NOW} - CASE WHEN {lease} IS NULL THEN NULL ELSE GREATEST({lease}, {self.STARTED}) END)"

    def __init__(self) -> None:
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()

    def connect(self) -> Any:
        raise NotImplementedError

    def explain(self, exc: BaseException) -> ScheduleError:
        raise NotImplementedError

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.connect()
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _drop(self) -> None:
        """Forget this thread's connection (broken, or its database went away): the next call opens a new one."""
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._lock:
                if conn in self._all:
                    self._all.remove(conn)
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing a broken connection may fail; it is gone either way
                pass

    @contextmanager
    def tx(self) -> Iterator[_Db]:
        """One write transaction, committed or rolled back whole; a database error becomes a ScheduleError."""
        try:
            conn = self._conn()
            conn.execute(self.BEGIN)
        except self.ERRORS as exc:
            self._drop()
            raise self.explain(exc) from None
        try:
            yield _Db(conn, self.kind == "postgresql")
        except BaseException as exc:
            try:
                conn.execute("ROLLBACK")
            except self.ERRORS:
                self._drop()
            if isinstance(exc, self.ERRORS):
                raise self.explain(exc) from None
            raise
        try:
            conn.execute("COMMIT")
        except self.ERRORS as exc:
            try:
                conn.execute("ROLLBACK")
            except self.ERRORS:
                self._drop()
            raise self.explain(exc) from None

    def read(self, sql: str, args: Sequence = ()) -> list[dict[str, Any]]:
        """Rows as dicts, outside any transaction of ours."""
        try:
            cur = self._conn().execute(_Db(None, self.kind == "postgresql")._sql(sql), tuple(args))
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]
        except self.ERRORS as exc:
            self._drop()
            raise self.explain(exc) from None

    def close(self) -> None:
        """Close this thread's connection (each thread has its own)."""
        self._drop()

    def __del__(self) -> None:  # a store dropped without close() must not leave a server connection open
        self.close_all()

    def close_all(self) -> None:
        with getattr(self, "_lock", threading.Lock()):
            conns, self._all = getattr(self, "_all", []), []
        for conn in conns:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - another thread's connection may be mid-call; closing is best effort
                pass
        self._local = threading.local()


class SqliteBackend(_Backend):
    kind = "sqlite"
    NOW = "((julianday('now') - 2440587.5) * 86400.0)"
    BEGIN = "BEGIN IMMEDIATE"  # the file's write lock at once: two claims never interleave
    ERRORS = (sqlite3.Error,)
    SERIAL = "INTEGER PRIMARY KEY AUTOINCREMENT"

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.where = str(path)

    def exists(self) -> bool:
        return self.path.is_file()

    def connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=True)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                log.warning("schedule database %s: journal mode %s (WAL refused)", self.path, mode)
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    def peek(self, sql: str) -> list[tuple] | None:
        """Read an existing file without writing a byte (read-only, no WAL switch): None when there is no file."""
        if not self.path.is_file():
            return None
        uri = Path(os.path.abspath(self.path)).as_uri() + "?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as exc:
            raise self.explain(exc) from None
        try:
            return conn.execute(sql).fetchall()
        except sqlite3.Error as exc:
            raise self.explain(exc) from None
        finally:
            conn.close()

    def explain(self, exc: BaseException) -> ScheduleError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            why = (f"the schedule database {self.path} stayed locked for {BUSY_TIMEOUT_MS / 1000:.0f} s "
                   "(another process holds a write): try again, or stop the other process")
        elif "readonly" in text or "read-only" in text or "unable to open" in text:
            why = (f"the schedule database {self.path} cannot be written ({text}): its folder or file is "
                   "read-only; make it writable, or point ENGINE_HOME or --db at a writable place")
        else:
            why = (f"the schedule database {self.path} cannot be read ({text}); it is left as it is: move it aside "
                   "to start a new schedule, or restore a copy")
        return ScheduleError(why, path=str(self.path))


class PostgresBackend(_Backend):
    kind = "postgresql"
    NOW = "extract(epoch from clock_timestamp())::double precision"
    LOCK = " FOR UPDATE"
    SKIP = " FOR UPDATE SKIP LOCKED"
    SERIAL = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    STARTED = "extract(epoch from pg_postmaster_start_time())::double precision"

    def __init__(self, url: str) -> None:
        super().__init__()
        import psycopg

        self.ERRORS = (psycopg.Error,)
        userinfo = url.split("://", 1)[1].split("/", 1)[0].rpartition("@")[0]
        if ":" in userinfo:  # before anything parses the URL (and may fail on it): no message can carry it
            add_secret(userinfo.split(":", 1)[1])
            add_secret(unquote(userinfo.split(":", 1)[1]))
        try:
            parts = urlsplit(url.replace("postgresql+psycopg://", "postgresql://", 1))
            port = parts.port
        except ValueError as exc:  # a port that is no number, a broken [IPv6] host
            raise ScheduleError(f"not a database URL: {redact_text(url)[:160]!r} ({exc}); {URL_FORM}") from None
        self.url = urlunsplit(parts)
        host = parts.hostname or "localhost"
        netloc = f"{parts.username + '@' if parts.username else ''}{host}{f':{port}' if port else ''}"
        self.where = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
        self.path = None

    def exists(self) -> bool:
        """Whether the database holds a schedule (its tables): an empty one is no schedule yet, as a missing file
        is on SQLite. A server that does not answer raises ScheduleUnreachable."""
        return bool(self.read("SELECT to_regclass('meta') IS NOT NULL AS here")[0]["here"])

    def connect(self) -> Any:
        import psycopg

        return psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                               application_name="engine-schedule",
                               options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS} "
                                       f"-c lock_timeout={BUSY_TIMEOUT_MS} "
                                       "-c idle_in_transaction_session_timeout=60000")

    def explain(self, exc: BaseException) -> ScheduleError:
        import psycopg

        text = redact_text(" ".join(str(exc).split()))[:400]
        if isinstance(exc, (psycopg.errors.LockNotAvailable, psycopg.errors.TransactionRollback)):
            return ScheduleError(f"the schedule database {self.where}: another writer held a row past "
                                 f"{BUSY_TIMEOUT_MS / 1000:.0f} s or crossed this one; try again", path=self.where)
        if isinstance(exc, psycopg.ProgrammingError) and not getattr(exc, "sqlstate", None):
            return ScheduleError(f"the database URL of {self.where} is not usable: {text}; {URL_FORM}",
                                 path=self.where)
        if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, psycopg.errors.QueryCanceled):
            return ScheduleUnreachable(f"cannot reach the schedule database {self.where}: {text}", path=self.where)
        return ScheduleError(f"the schedule database {self.where} refused a statement: {text}", path=self.where)
