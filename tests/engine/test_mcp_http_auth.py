"""The MCP face over HTTP beyond loopback (engine.faces.mcpauth): a bearer token, the Host/Origin names, TLS.

End to end with the real MCP client over streamable HTTPS on 127.0.0.1 only (nothing here binds another address):
the server child gets a token file, an allowed host and a self-signed certificate made here with `cryptography`
(in the lock). The Host/Origin rules of a non-loopback bind are checked in process, on the SDK's own app with our
settings, through starlette's TestClient: naming an address in the Host header needs no socket bound to it.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from starlette.testclient import TestClient

from engine.core.errors import ConfigError
from engine.core.redact import redact_text
from engine.faces import mcpauth
from engine.faces.mcpauth import (
    BearerToken,
    allowed_host,
    auth_settings,
    check_bind,
    is_loopback,
    read_token,
    transport_security,
)
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["adb_health", "adb_screenshot", "adb_tap", "adb_swipe", "alas_state", "alas_goto", "alas_tools", "alas_run"]
TOKEN = "tok-" + "q7Hc2mXv9Lp4Rz8Wn3Ks"
WRONG = "tok-" + "q7Hc2mXv9Lp4Rz8Wn3Kt"  # one character off: a constant-time compare still refuses it
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    certfile, keyfile = folder / "cert.pem", folder / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return certfile, keyfile


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"the server did not listen on {port} (exit {proc.poll()})")


async def session(url: str, verify: ssl.SSLContext, headers: dict[str, str]) -> tuple[list[str] | None, list[int]]:
    """Connect with the real MCP client; (the tools it lists, or None when it could not connect; every HTTP status
    the server answered)."""
    statuses: list[int] = []

    async def seen(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    names: list[str] | None = None
    async with httpx2.AsyncClient(headers=headers, verify=verify, event_hooks={"response": [seen]},
                                  timeout=httpx2.Timeout(30)) as http:
        try:
            with anyio.fail_after(60):
                async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=30) as client:
                    listed = [tool.name for tool in (await client.list_tools()).tools]
                    health = await client.call_tool("adb_health", {})
                    assert not health.is_error, health.content
                    names = listed
        except* MCPError:  # the client's own error for a refused connection; the statuses say why
            pass
    return names, statuses


def test_a_token_locks_the_http_face_and_never_reaches_the_logs(tmp_path):
    certfile, keyfile = self_signed(tmp_path)
    token_file = tmp_path / "token.txt"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGINE_") and k != "GEMINI_API_KEY"}
    env.update(ENGINE_LOG_LEVEL="DEBUG", ENGINE_SERIAL="sim", PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    argv = [sys.executable, "-m", "engine", "serve", "--transport", "http", "--port", str(port),
            "--token-file", str(token_file), "--allowed-host", "proxy.example", "--ssl-certfile", str(certfile),
            "--ssl-keyfile", str(keyfile), "--transcript", str(tmp_path / "run")]
    verify = ssl.create_default_context(cafile=str(certfile))
    url = f"https://127.0.0.1:{port}/mcp"
    with tempfile.TemporaryFile() as stderr, subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                                              stdout=subprocess.PIPE, stderr=stderr) as proc:
        try:
            wait_for_port(port, proc)
            names, statuses = anyio.run(session, url, verify, {})
            assert names is None and statuses and set(statuses) == {401}
            names, statuses = anyio.run(session, url, verify, {"Authorization": f"Bearer {WRONG}"})
            assert names is None and statuses and set(statuses) == {401}
            names, statuses = anyio.run(session, url, verify, {"Authorization": f"Bearer {TOKEN}"})
            assert sorted(names or []) == sorted(TOOLS) and 401 not in statuses

            async def post(**headers: str) -> int:
                async with httpx2.AsyncClient(verify=verify, timeout=30) as http:
                    answer = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **headers})
                    return answer.status_code

            bearer = {"authorization": f"Bearer {TOKEN}"}
            assert anyio.run(lambda: post(**bearer, host="proxy.example")) == 200  # the allowed host
            assert anyio.run(lambda: post(**bearer, host="evil.example")) == 421  # DNS rebinding
            assert anyio.run(lambda: post(**bearer, origin="https://proxy.example")) == 200
            assert anyio.run(lambda: post(**bearer, origin="http://evil.example")) == 403  # a cross-site page
            assert anyio.run(lambda: post(host="proxy.example")) == 401  # the name alone is no key
        finally:
            proc.terminate()
            proc.wait(10)
        assert proc.stdout.read() == b""
        stderr.seek(0)
        logged = stderr.read().decode("utf-8", "replace")
    assert "bearer token required" in logged and f"https://127.0.0.1:{port}/mcp" in logged
    written = [logged, *(p.read_text("utf-8", "replace") for p in (tmp_path / "run").rglob("*") if p.is_file())]
    for text in written:
        assert TOKEN not in text and WRONG not in text


# --------------------------------------------------------------------------------------------- starting up


def test_beyond_loopback_without_a_token_the_server_refuses_to_start():
    for host in ("0.0.0.0", "::", "192.168.1.5", "engine.example.org", "127.0.0.1.example.org"):
        with pytest.raises(ConfigError, match="without a token"):
            check_bind(host, None)
        check_bind(host, TOKEN)
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"):
        assert is_loopback(host)
        check_bind(host, None)


def test_the_token_is_compared_in_constant_time_and_never_shown(monkeypatch):
    compared: list[tuple[bytes, bytes]] = []
    real = mcpauth.hmac.compare_digest
    monkeypatch.setattr(mcpauth.hmac, "compare_digest", lambda a, b: compared.append((a, b)) or real(a, b))
    verifier = BearerToken(TOKEN)
    assert anyio.run(verifier.verify_token, WRONG) is None
    granted = anyio.run(verifier.verify_token, TOKEN)
    assert granted is not None and TOKEN not in repr(granted) and TOKEN not in repr(verifier)
    assert compared == [(WRONG.encode(), TOKEN.encode()), (TOKEN.encode(), TOKEN.encode())]


def test_the_token_comes_from_its_file_or_the_environment_and_is_redacted(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(f"  {TOKEN}\n")
    other = "env-" + "Zr5Yp8Qw2Lm6Nb4Vc1Xd"
    assert read_token(str(token_file), {"ENGINE_MCP_TOKEN": other}) == TOKEN  # the flag beats the environment
    assert read_token(None, {"ENGINE_MCP_TOKEN": other}) == other
    assert read_token(None, {}) is None
    assert TOKEN not in redact_text(f"Authorization: {TOKEN}") and other not in redact_text(other)
    cases = {"": "is empty", "short-token": "has 11 characters", "two words here, long enough": "printable ASCII",
             "x" * 5000: "over 4096 bytes"}
    for text, message in cases.items():
        token_file.write_text(text)
        with pytest.raises(ConfigError, match=message) as caught:
            read_token(str(token_file), {})
        assert text == "" or text not in str(caught.value)
    with pytest.raises(ConfigError, match="cannot read the token file"):
        read_token(str(tmp_path / "missing"), {})


def test_an_allowed_host_is_a_bare_name():
    assert allowed_host("Engine.Example.org") == "engine.example.org"
    assert allowed_host("10.0.0.7") == "10.0.0.7"
    assert allowed_host("fd00::7") == allowed_host("[fd00::7]") == "[fd00::7]"
    for text in ("https://engine.example.org", "engine.example.org:443", "engine.example.org/mcp", "a b", ""):
        with pytest.raises(Exception, match="not a host name"):
            allowed_host(text)


# --------------------------------------------------------------------------------------------- Host and Origin


def locked_app(host: str, allowed: tuple[str, ...] = (), addresses=lambda: set()) -> TestClient:
    """The SDK's streamable HTTP app with our token check and Host/Origin settings for a bind on `host`."""
    server = MCPServer("t", token_verifier=BearerToken(TOKEN), auth=auth_settings())
    return TestClient(server.streamable_http_app(host=host, transport_security=transport_security(
        host, allowed, addresses)))


def status(client: TestClient, host: str, origin: str | None = None, token: str | None = TOKEN) -> int:
    headers = {**ACCEPT, "host": host, **({"origin": origin} if origin else {}),
               **({"authorization": f"Bearer {token}"} if token else {})}
    return client.post("/mcp", json=INITIALIZE, headers=headers).status_code


def test_a_non_loopback_bind_answers_only_to_its_own_address():
    with locked_app("192.0.2.7") as client:
        assert status(client, "192.0.2.7:8000") == 200
        assert status(client, "192.0.2.7:8000", origin="http://192.0.2.7:8000") == 200
        assert status(client, "192.0.2.7:8000", token=None) == 401
        assert status(client, "192.0.2.7:8000", token=WRONG) == 401
        for foreign in ("evil.example", "evil.example:8000", "127.0.0.1:8000", "192.0.2.77:8000", "192.0.2.7.evil"):
            assert status(client, foreign) == 421, foreign
        assert status(client, "192.0.2.7:8000", origin="http://evil.example") == 403


def test_allowed_hosts_extend_the_host_and_origin_checks():
    with locked_app("192.0.2.7", ("engine.example.org", "[fd00::7]")) as client:
        assert status(client, "engine.example.org") == 200
        assert status(client, "engine.example.org:8443", origin="https://engine.example.org:8443") == 200
        assert status(client, "[fd00::7]:8000") == 200
        assert status(client, "192.0.2.7:8000") == 200
        assert status(client, "other.example.org") == 421
        assert status(client, "engine.example.org", origin="https://engine.example.org.evil") == 403


def test_a_wildcard_bind_answers_to_the_machine_addresses_and_loopback():
    with locked_app("0.0.0.0", addresses=lambda: {"192.0.2.7", "2001:db8::5"}) as client:
        for own in ("192.0.2.7:8000", "[2001:db8::5]:8000", "127.0.0.1:8000", "localhost:8000", "[::1]:8000"):
            assert status(client, own) == 200, own
        assert status(client, "evil.example:8000") == 421


def test_a_loopback_bind_keeps_loopback_names_only_unless_told():
    with locked_app("127.0.0.2") as client:  # the SDK's own default covers only three names; ours covers this one
        assert status(client, "127.0.0.2:8000") == 200 and status(client, "localhost:8000") == 200
        assert status(client, "evil.example") == 421
        assert status(client, "localhost:8000", origin="http://evil.example") == 403


def test_the_machine_addresses_of_a_wildcard_bind_are_addresses_with_loopback():
    found = mcpauth.machine_addresses()
    assert {"127.0.0.1", "::1"} <= found
    for address in found:
        ipaddress.ip_address(address.split("%")[0])  # an address, never a name a DNS answer could point anywhere


# --------------------------------------------------------------------------------------------- the studio


def test_the_studio_still_binds_loopback_only():
    from engine.__main__ import build_parser
    from engine.faces.commands.studio import _bind

    sock = _bind(0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["studio", "--host", "0.0.0.0"])
    assert exited.value.code == 2
