"""``python -m engine observe FRAME_OR_FOLDER...``: classify frame files (a folder = every image in it).

One process loads the graph, the asset pack and the observer once and then classifies every frame; frames of
another size with the graph's shape (1920x1080 for a 1280x720 graph) are scaled first. Exit 0 also when a frame
is unknown (that is an answer); 2 when the arguments are wrong or any file cannot be used (each bad file is one
stderr line and the others are still observed; a header announcing an oversized image is refused unread).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".webp"}


def frame_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for spec in paths:
        path = Path(spec)
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES))
        else:
            files.append(path)
    return files


def build_observer(graph_dir: str | None, assets: str | None, server: str | None, *, ocr: bool = False,
                   vision: bool = False):
    """Graph + asset pack + observer as the CLI configures them (also used by ``assets`` and tests)."""
    from engine.config.assetpacks import load_pack
    from engine.config.loader import load_graph
    from engine.observe.observer import Observer

    graph = load_graph(graph_dir).resolve(server)
    server = graph.server
    assets = assets or os.environ.get("ENGINE_ASSETS")
    if assets:
        pack = load_pack(assets, server, fallback=graph.fallback_server)
    else:
        from engine.sim import SyntheticAssets  # no real templates: the simulator's own look

        pack = SyntheticAssets(graph)
    client = None
    if vision:
        from verifiers.vision import VisionClient

        client = VisionClient.from_env(game=graph.game)
    return Observer(graph, pack, ocr=ocr or None, vision=client)


def read_frame(path: Path):
    """The BGR frame in `path`, its header checked before decoding (BadFrame: empty, oversized or undecodable)."""
    import cv2

    from engine.core.errors import BadFrame
    from engine.core.imageheader import check_image_file

    check_image_file(path)
    frame = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if frame is None:
        raise BadFrame(f"{path} is not an image OpenCV can decode")
    return frame


def _report(args: argparse.Namespace, path: Path, observation) -> None:
    if args.json:
        record = {"file": str(path), **observation.to_dict()}
        if not args.evidence:
            record["evidence"] = [e for e in record["evidence"] if e["hit"]]
        record["latency_ms"] = round(observation.latency_ms.get("total", 0.0), 3)
        record["latency_by_channel"] = {k: round(v, 3) for k, v in observation.latency_ms.items()}
        print(json.dumps(record), flush=True)
        return
    what = observation.page or ("black frame" if observation.black_frame else
                                "loading" if observation.loading else "unknown")
    popups = f" + {', '.join(observation.popups)}" if observation.popups else ""
    ambiguous = f" (also: {', '.join(observation.ambiguous)})" if observation.ambiguous else ""
    hits = ", ".join(f"{e.signature}:{e.channel}={e.score:.2f}" for e in observation.evidence if e.hit)
    print(f"{path}: {what}{popups}{ambiguous} confidence={observation.confidence:.2f} "
          f"[{hits}] {observation.latency_ms.get('total', 0.0):.1f} ms", flush=True)


def _run(args: argparse.Namespace) -> int:
    """Observe every frame; a file that cannot be read is reported (one stderr line) and the next one goes on."""
    from engine.core.errors import BadFrame, ConfigError

    observer = build_observer(args.graph, args.assets, args.server, ocr=args.ocr, vision=args.escalate)
    files = frame_files(args.frames)
    if not files:
        raise ConfigError("no frame files given (a folder is read for .png/.jpg/.bmp/.webp images)")
    bad: list[str] = []
    for path in files:
        try:
            observation = observer.observe(read_frame(path), expected=args.expected, escalate=args.escalate)
        except BadFrame as exc:
            bad.append(str(path))
            print(f"error: {exc}" if str(path) in str(exc) else f"error: {path}: {exc}", file=sys.stderr)
            continue
        except OSError as exc:
            bad.append(str(path))
            print(f"error: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            continue
        _report(args, path, observation)
    if bad:
        print(f"error: {len(bad)} of {len(files)} frame file(s) could not be observed: {', '.join(bad)}",
              file=sys.stderr)
        return 2
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("observe", help="classify screenshot files: page, popups, confidence, evidence")
    parser.add_argument("frames", nargs="+", metavar="FRAME_OR_FOLDER",
                        help="image files, or folders whose images are read (each unusable file is reported)")
    parser.add_argument("--graph", default=None, metavar="GRAPH_DIR", help="graph folder (default: the shipped default graph)")
    parser.add_argument("--assets", default=None, metavar="DIR",
                        help="asset pack: an ALAS checkout or an imported folder (default: $ENGINE_ASSETS, "
                             "else the simulator's synthetic templates)")
    parser.add_argument("--server", default=None, help="game server (default: the graph's first)")
    parser.add_argument("--expected", default=None, metavar="PAGE", help="page the frames are expected to show")
    parser.add_argument("--ocr", action="store_true", help="read free text of unknown frames (with --escalate)")
    parser.add_argument("--escalate", action="store_true",
                        help="for unknown frames: free-text OCR (with --ocr) and the vision model (GEMINI_API_KEY)")
    parser.add_argument("--json", action="store_true", help="one JSON object per frame")
    parser.add_argument("--evidence", action="store_true", help="with --json: every evidence record, not only hits")
    parser.set_defaults(handler=_run)
