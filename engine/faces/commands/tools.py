"""``python -m engine cli ...`` (one tool call, CLI mode) and ``python -m engine serve`` (the MCP server)."""

from __future__ import annotations

import argparse
import sys


def _cli(args: argparse.Namespace) -> int:
    from engine.faces.cli import run_cli

    return run_cli(args, sys.stdout)


HTTP_ONLY = (("--host", "host"), ("--port", "port"), ("--token-file", "token_file"),
             ("--allowed-host", "allowed_host"), ("--ssl-certfile", "ssl_certfile"), ("--ssl-keyfile", "ssl_keyfile"))


def _serve(args: argparse.Namespace) -> int:
    from engine.core.errors import ConfigError
    from engine.faces.cli import check_session_arguments, open_tools, outside_tasks
    from engine.faces.mcp_server import serve
    from engine.faces.mcpauth import check_bind, check_tls, read_token

    token = None
    if args.transport == "stdio":
        given = [flag for flag, name in HTTP_ONLY if getattr(args, name)]
        if given:
            raise ConfigError(f"{', '.join(given)}: only for --transport http (stdio has no address)")
    else:
        token = read_token(args.token_file)
        check_bind(args.host or "127.0.0.1", token)  # before anything opens: refused off loopback without a token
        check_tls(args.ssl_certfile, args.ssl_keyfile)
    check_session_arguments(args)  # before the transport starts: a refused flag is one line, not a dead server
    outside_tasks(args)  # a wrong --alas checkout too
    serve(lambda: open_tools(args), transport=args.transport, host=args.host or "127.0.0.1", port=args.port or 8000,
          token=token, allowed_hosts=args.allowed_host or (), ssl_certfile=args.ssl_certfile,
          ssl_keyfile=args.ssl_keyfile)
    return 0


def _allowed_host(text: str) -> str:
    # mcpauth imports the MCP SDK (about 2 s): only `serve` may pay for it, not every command's parser
    from engine.faces.mcpauth import allowed_host

    return allowed_host(text)


def register(sub: argparse._SubParsersAction) -> None:
    from engine.faces.cli import add_session_arguments, port

    cli = sub.add_parser(
        "cli",
        help="call one tool (the MCP server's tools, from the shell)",
        description="Call one tool and print its result; exit code 0 only when it is ok.",
    )
    what = cli.add_mutually_exclusive_group(required=True)
    what.add_argument("--health", action="store_true", help="adb_health: check the device and ADB")
    what.add_argument("--screenshot", metavar="OUT.png", help="adb_screenshot: save the frame as PNG")
    what.add_argument("--state", action="store_true", help="alas_state: observe the current page")
    what.add_argument("--tap", nargs=2, type=int, metavar=("X", "Y"), help="adb_tap: tap a point, then observe")
    what.add_argument("--swipe", nargs="+", type=int, metavar="N",
                      help="adb_swipe: X1 Y1 X2 Y2 [MS] (duration in ms, default 300), then observe")
    what.add_argument("--goto", metavar="PAGE", help="alas_goto: navigate to a page and verify it")
    what.add_argument("--run", metavar="NAME", help="alas_run: run a named task (see --list-tools)")
    what.add_argument("--list-tools", action="store_true", help="alas_tools: the tasks --run can run")
    add_session_arguments(cli)
    cli.set_defaults(handler=_cli)

    serve = sub.add_parser(
        "serve",
        help="serve the tools over MCP (stdio by default)",
        description="Serve the eight tools over MCP; stdout carries only JSON-RPC, logs go to stderr.",
    )
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                       help="stdio (default) or http (streamable HTTP at http://HOST:PORT/mcp)")
    serve.add_argument("--host", default=None,
                       help="HTTP address (default 127.0.0.1); any address that is not loopback needs a token")
    serve.add_argument("--port", type=port, default=None, help="HTTP port (default 8000)")
    http = serve.add_argument_group("remote access (--transport http)")
    http.add_argument("--token-file", metavar="FILE",
                      help="file holding the bearer token every request must carry (default: $ENGINE_MCP_TOKEN); "
                           "required for a --host that is not loopback")
    http.add_argument("--allowed-host", type=_allowed_host, action="append", metavar="NAME",
                      help="a name clients reach the server under (a reverse proxy's, a DNS name), accepted in the "
                           "Host and Origin headers beside the bound addresses; repeatable")
    http.add_argument("--ssl-certfile", metavar="FILE", help="serve HTTPS with this certificate (PEM)")
    http.add_argument("--ssl-keyfile", metavar="FILE", help="the certificate's private key (if not in the certfile)")
    add_session_arguments(serve, results=False)
    serve.set_defaults(handler=_serve)
