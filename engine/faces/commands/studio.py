"""``python -m engine studio``: serve the graph studio (engine.faces.studio) on 127.0.0.1 for one session."""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from pathlib import Path

from engine.faces.cli import add_session_arguments, check_session_arguments, outside_tasks, port

log = logging.getLogger(__name__)

DEFAULT_PORT = 8011


def studio_home(graph_dir: str | None) -> Path:
    """$ENGINE_HOME/<game>/studio: the default transcript folder, with the captures below it."""
    from engine.config.loader import load_graph
    from engine.core.paths import agent_home, game_dir

    return game_dir(agent_home(), load_graph(graph_dir)) / "studio"


def _bind(number: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", number))
    except OSError as exc:
        sock.close()
        from engine.core.errors import ConfigError

        raise ConfigError(f"cannot listen on 127.0.0.1:{number}: {exc.strerror or exc} (try --port 0)") from None
    sock.listen(64)
    return sock


def _draft_folder(value: str | None) -> Path | None:
    """The --draft folder, which must hold an explorer's draft.yaml (ConfigError: exit 2)."""
    if value is None:
        return None
    from engine.core.errors import ConfigError
    from engine.explore.review import DRAFT_FILE

    folder = Path(value)
    if not (folder / DRAFT_FILE).is_file():
        raise ConfigError(f"--draft {value}: no {DRAFT_FILE} there (a folder `python -m engine explore --out` "
                          f"wrote)")
    return folder.resolve()


def _server_class(uvicorn):
    class StudioServer(uvicorn.Server):
        """A uvicorn server that ends the event streams as soon as it is told to stop (Ctrl+C), so open pages
        do not hold the shutdown."""

        def __init__(self, config, on_exit) -> None:
            super().__init__(config)
            self.on_exit = on_exit

        def handle_exit(self, sig, frame) -> None:
            self.on_exit()
            super().handle_exit(sig, frame)

    return StudioServer


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from engine.faces.studio import create_app
    from engine.runtime.session import open_session

    check_session_arguments(args)
    draft = _draft_folder(args.draft)
    home = studio_home(args.graph)
    transcript = Path(args.transcript) if args.transcript else home
    captures = Path(args.captures) if args.captures else transcript / "captures"
    sock = _bind(args.port)
    session = open_session(
        args.serial, graph_dir=args.graph, server=args.server, assets=args.assets, scenario=args.scenario,
        seed=args.seed, transcript_dir=transcript, policies_file=args.policies, adb_host=args.adb_host,
        adb_port=args.adb_port, providers=outside_tasks(args),
    )
    app = create_app(session, graph_dir=args.graph, assets_dir=args.assets, transcript_dir=transcript,
                     captures_dir=captures, draft_dir=draft)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2, lifespan="off", access_log=False)
    server = _server_class(uvicorn)(config, app.state.studio.closing.set)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    print(f"graph studio on {url} (transcript in {transcript}; Ctrl+C stops it)", file=sys.stderr, flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        app.state.studio.close()
        session.close()
        sock.close()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("studio", help="serve the graph studio: a local page to watch the engine and write "
                                           "graphs from real frames (127.0.0.1 only)")
    add_session_arguments(parser, results=False)
    parser.add_argument("--port", type=port, default=DEFAULT_PORT,
                        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: a free one)")
    parser.add_argument("--captures", metavar="DIR",
                        help="folder for captured and uploaded frames (default: the transcript folder's captures/)")
    parser.add_argument("--draft", metavar="DIR",
                        help="an explorer's draft folder to review in the Draft panel (rename, merge, split, "
                             "drop links, accept as graph YAML)")
    parser.set_defaults(handler=_serve)
    parser.epilog = ("The transcript folder defaults to $ENGINE_HOME/<game>/studio (else "
                     "~/.local/share/engine/<game>/studio), so the transcript and bundle views have something.")
