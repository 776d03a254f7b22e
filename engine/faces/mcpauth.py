"""Who may reach the MCP face over HTTP: the bearer token, the bind check and the Host/Origin names.

Beyond loopback anyone who reaches the port could tap, swipe, run tasks and read the screen, so:

- a bind that is not loopback needs a token (``--token-file FILE`` or ``ENGINE_MCP_TOKEN``), else ``check_bind``
  refuses before anything starts (ConfigError: exit 2);
- with a token, every request to the MCP endpoint needs ``Authorization: Bearer <token>`` on any address: the SDK's
  own auth (``BearerAuthBackend`` + ``RequireAuthMiddleware``, switched on by ``AuthSettings`` and a
  ``TokenVerifier``) answers 401 otherwise, and ``BearerToken`` compares in constant time. The token is registered
  with engine.core.redact, so no log line, transcript or result can carry it;
- the SDK's DNS-rebinding check (``TransportSecuritySettings``: a foreign Host gets 421, a foreign Origin 403) is
  always on: loopback names on a loopback bind, the bound address (every address of the machine for a wildcard
  bind) otherwise, and the names ``--allowed-host`` adds in both cases.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import os
import re
import socket
import ssl
from collections.abc import Callable, Iterable, Mapping

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings

from engine.core.errors import ConfigError
from engine.core.redact import REDACTED, add_secret

TOKEN_ENV = "ENGINE_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
"""Shorter tokens are refused: a guessable token is no lock. ``secrets.token_urlsafe(32)`` gives 43 characters."""
MAX_TOKEN_FILE_BYTES = 4096
"""A token file is read this far and no further (a token is a line, not a file's worth)."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_TOKEN_CHARS = re.compile(r"^[\x21-\x7e]+$")
"""Visible ASCII without spaces: what an HTTP header carries unchanged."""
_NAME = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_]([A-Za-z0-9_.\-]*[A-Za-z0-9_])?)$")
"""A host name or IP address as it appears in a Host header, without a port (IPv6 in brackets)."""
MAKE_TOKEN = "python -c \"import secrets; print(secrets.token_urlsafe(32))\" > token.txt"


class BearerToken:
    """The SDK's ``TokenVerifier`` for one shared secret: a request's token is accepted when it equals the
    configured one (compared in constant time, so the time to refuse says nothing about how much was right)."""

    def __init__(self, token: str) -> None:
        self._expected = token.encode()

    def __repr__(self) -> str:
        return f"BearerToken({REDACTED})"

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(token.encode("utf-8", "replace"), self._expected):
            return None
        # The request state keeps the access record: it holds a marker, not the secret.
        return AccessToken(token=REDACTED, client_id="bearer-token", scopes=[])


def auth_settings() -> AuthSettings:
    """What switches the SDK's bearer check on. There is no authorization server: the token is a shared secret,
    and without a ``resource_server_url`` the SDK serves no OAuth metadata and never uses the issuer."""
    return AuthSettings(issuer_url="http://localhost", resource_server_url=None)  # type: ignore[arg-type]


def read_token(token_file: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The token to require, from `token_file` (first line's worth, surrounding blanks dropped) or else
    ``ENGINE_MCP_TOKEN``; None when neither is given. Registered as a secret with engine.core.redact.

    Raises:
        ConfigError: the file cannot be read, or the token is empty, short or not header-safe. The message never
            holds the token.
    """
    if token_file is not None:
        where = f"the token file {token_file}"
        try:
            with open(token_file, "rb") as handle:
                raw = handle.read(MAX_TOKEN_FILE_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"cannot read {where}: {exc.strerror or exc}") from None
        if len(raw) > MAX_TOKEN_FILE_BYTES:
            raise ConfigError(f"{where} is over {MAX_TOKEN_FILE_BYTES} bytes: it should hold one token")
        token = raw.decode("utf-8", "replace").strip()
    elif environ.get(TOKEN_ENV) is not None:
        where, token = TOKEN_ENV, environ[TOKEN_ENV].strip()
    else:
        return None
    add_secret(token)  # before any message could name it
    if not token:
        raise ConfigError(f"{where} is empty; make a token with: {MAKE_TOKEN}")
    if not _TOKEN_CHARS.match(token):
        raise ConfigError(f"the token in {where} must be printable ASCII without spaces (it travels in an "
                          "HTTP header)")
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"the token in {where} has {len(token)} characters; at least {MIN_TOKEN_CHARS} are "
                          f"needed (make one with: {MAKE_TOKEN})")
    return token


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the port on this machine: ``localhost`` or a loopback IP address. Any other
    name counts as reachable from outside (it may resolve anywhere)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse (ConfigError, exit 2) to serve on a non-loopback `host` without a token."""
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"refusing to serve MCP on {host} without a token: anyone who can reach the port could drive the device. "
            f"Give --token-file FILE or set {TOKEN_ENV} (make a token with: {MAKE_TOKEN}), or serve on 127.0.0.1")


def allowed_host(text: str) -> str:
    """An argparse type for ``--allowed-host``: a host name or IP address (IPv6 in brackets or bare), no scheme,
    port or path; lower-cased."""
    name = text.strip().lower()
    try:
        name = f"[{ipaddress.IPv6Address(name)}]"
    except ValueError:
        pass
    if not _NAME.match(name):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a host name: give the name alone (e.g. engine.example.org), without scheme, port or "
            "path; every port of an allowed name is accepted")
    return name


def header_name(address: str) -> str:
    """An address or name as a Host header writes it (IPv6 in brackets)."""
    try:
        return f"[{ipaddress.IPv6Address(address.strip('[]').split('%')[0])}]"
    except ValueError:
        return address.lower()


def machine_addresses() -> set[str]:
    """The addresses a wildcard bind (0.0.0.0, ::) serves on, as far as the standard library can tell: loopback,
    every address the machine's name resolves to, and the source address of its default routes (found by a UDP
    ``connect``, which sends nothing). Other interfaces' names come in with ``--allowed-host``."""
    found = {"127.0.0.1", "::1"}
    for name in {socket.gethostname(), socket.getfqdn()}:
        try:
            found |= {info[4][0] for info in socket.getaddrinfo(name, None)}
        except OSError:
            pass
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):  # documentation ranges
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as sock:
                sock.connect((probe, 9))
                found.add(sock.getsockname()[0])
        except OSError:
            pass
    return found


def bound_names(host: str, addresses: Callable[[], set[str]] = machine_addresses) -> list[str]:
    """The Host names a bind on `host` answers to without ``--allowed-host``: the loopback names on loopback; a
    wildcard's every machine address (loopback included); otherwise the address itself, or a name and what it
    resolves to."""
    if is_loopback(host):
        found = {*LOOPBACK_NAMES, header_name(host)}
    else:
        try:
            wildcard = ipaddress.ip_address(host.strip("[]")).is_unspecified
        except ValueError:
            wildcard = False
        if wildcard:
            found = {*LOOPBACK_NAMES, *(header_name(a) for a in addresses())}
        else:
            found = {header_name(host)}
            try:
                found |= {header_name(str(info[4][0])) for info in socket.getaddrinfo(host.strip("[]"), None)}
            except OSError:
                pass
    return sorted(found)


def transport_security(host: str, allowed: Iterable[str] = (),
                       addresses: Callable[[], set[str]] = machine_addresses) -> TransportSecuritySettings:
    """The SDK's Host/Origin check for a bind on `host`: its own names plus `allowed`, each on any port, and an
    Origin of either scheme on those names."""
    names = sorted({*bound_names(host, addresses), *allowed})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[form for name in names for form in (name, f"{name}:*")],
        allowed_origins=[f"{scheme}://{name}{port}" for name in names for scheme in ("http", "https")
                         for port in ("", ":*")],
    )


def check_tls(certfile: str | None, keyfile: str | None) -> None:
    """Refuse (ConfigError) a certificate and key uvicorn could not load, before anything starts."""
    if certfile is None:
        if keyfile is not None:
            raise ConfigError("--ssl-keyfile given without --ssl-certfile")
        return
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(certfile, keyfile)
    except OSError as exc:
        raise ConfigError(f"cannot load the certificate {certfile}"
                          f"{f' with key {keyfile}' if keyfile else ''}: {exc.strerror or exc}") from None
    except ssl.SSLError as exc:
        raise ConfigError(f"cannot load the certificate {certfile}"
                          f"{f' with key {keyfile}' if keyfile else ''}: {exc.reason or exc}") from None


def startup_line(host: str, port: int, *, locked: bool, tls: bool) -> str:
    """The startup line (stderr): where the face listens and whether it wants a token (never the token)."""
    url = f"{'https' if tls else 'http'}://{header_name(host)}:{port}/mcp"
    return f"MCP over streamable HTTP at {url}: " + ("bearer token required" if locked else "loopback only, no token")

