"""A throwaway PostgreSQL cluster for the tests: Debian's server binaries (scripts/install-system-deps.sh installs
the `postgresql` package), initdb in a temporary folder, bound to 127.0.0.1 on a free port with its unix socket in
the same folder, a password for its one role (so redaction is tested against a real login), stopped and removed
at the end. initdb and postgres refuse to run as root: when the tests run as root, the cluster runs as the
`postgres` system user that Debian's package creates, and its folder is owned by that user."""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from tests.ports import free_port

USER = "engine"


def binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


class Cluster:
    def __init__(self) -> None:
        bin_dir = binaries()
        if bin_dir is None:
            raise RuntimeError("no PostgreSQL server here: run scripts/install-system-deps.sh")
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="engine-pg-"))
        self.data, self.log = self.root / "data", self.root / "server.log"
        self.password = "pw-" + secrets.token_hex(12)
        self.port = free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        os.chmod(self.root, 0o700)
        pwfile = self.root / "pw"
        pwfile.write_text(self.password)
        if self.as_user:
            os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)
        self._run([str(self.bin / "initdb"), "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}",
                   "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"])
        pwfile.unlink()
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o",
                   f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.root} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300",
                   "start"])

    def _run(self, command: list[str]) -> None:
        done = subprocess.run([*self.as_user, *command], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed: {done.stderr or done.stdout}")

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        return f"postgresql://{USER}:{password or self.password}@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            cur = conn.execute(sql)
            return cur.fetchall() if cur.description else []

    def new_database(self) -> str:
        name = "t_" + secrets.token_hex(6)
        self.admin(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self, mode: str = "fast") -> None:
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"])

    def start(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                           "-o", f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories="
                           f"{self.root} -c fsync=off -c max_connections=300", "start"])
                return
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def close(self) -> None:
        try:
            self.stop("immediate")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.root, ignore_errors=True)
