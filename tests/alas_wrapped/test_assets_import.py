from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from alas_wrapped.assets_import import asset_names
from engine.__main__ import main
from engine.config.assetpacks import DirectoryAssetPack
from engine.config.loader import load_graph

GRAPH_DIR = Path(__file__).resolve().parents[2] / "pages" / "azurlane"


def test_import_alas_writes_every_named_template_and_exits_0(shared_dir, tmp_path, capsys):
    out = tmp_path / "en"
    assert main(["assets", "import-alas", str(shared_dir / "alas"), "--server", "en", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["imported"] > 100 and not report["missing"] and report["warnings"] == []
    assert "ui_white/POPUP_SINGLE_WHITE" in report["fallback"]
    pack = DirectoryAssetPack(out)
    back = pack.get("ui/BACK_ARROW")
    assert back.area == (33, 44, 47, 64) and back.frames[0].shape == (20, 14, 3)
    assert len(pack.get("handler/POPUP_CONFIRM").frames) == 3


def test_import_reports_missing_assets_with_exit_1(shared_dir, tmp_path, capsys):
    fake = tmp_path / "alas" / "assets"
    for server in ("en", "cn"):
        (fake / server / "ui").mkdir(parents=True)
    shutil.copy(shared_dir / "alas/assets/en/ui/BACK_ARROW.png", fake / "en/ui/BACK_ARROW.png")
    code = main(["assets", "import-alas", str(tmp_path / "alas"), "--server", "en", "--out", str(tmp_path / "o")])
    assert code == 1
    report = json.loads(capsys.readouterr().out)
    assert report["imported"] == 1 and "ui/MAIN_GOTO_FLEET" in report["missing"]
    assert "MAIN_GOTO_FLEET" in report["missing"]["ui/MAIN_GOTO_FLEET"]


@pytest.mark.parametrize("server, fallback_only", [("jp", "ui/ISLAND_CHECK"), ("tw", "ui/ISLAND_MAP_CHECK")])
def test_import_jp_and_tw_with_the_graphs_own_areas(shared_dir, tmp_path, capsys, server, fallback_only):
    out = tmp_path / server
    assert main(["assets", "import-alas", str(shared_dir / "alas"), "--server", server, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    named = asset_names(load_graph().resolve(server))
    assert report["ok"] and report["server"] == server and report["imported"] == len(named)
    assert report["warnings"] == [] and "warning" not in captured.err
    # Files the server lacks come from the graph's fallback server (cn), and say so.
    assert fallback_only in report["fallback"] and "ui/COMMISSION_CHECK" not in report["fallback"]
    index = json.loads((out / "index.json").read_text())
    assert index["server"] == server
    fleet = DirectoryAssetPack(out).get("ui/MAIN_GOTO_FLEET")
    assert fleet.area == tuple(load_graph().resolve(server).button("MAIN_GOTO_FLEET").area)


def _graph_without(tmp_path: Path, servers: tuple[str, ...]) -> Path:
    """The shipped graph with `servers` still declared but their own values removed (they fall back to cn's)."""
    folder = tmp_path / "graph"
    folder.mkdir()
    pattern = re.compile(rf", ({'|'.join(servers)}): \[[\d, ]+\]")
    for path in GRAPH_DIR.glob("*.yaml"):
        (folder / path.name).write_text(pattern.sub("", path.read_text()))
    return folder


def test_import_warns_about_templates_off_their_graph_area(shared_dir, tmp_path, capsys):
    graph_dir = _graph_without(tmp_path, ("jp", "tw"))
    code = main(["assets", "import-alas", str(shared_dir / "alas"), "--server", "jp", "--out", str(tmp_path / "o"),
                 "--graph", str(graph_dir)])
    captured = capsys.readouterr()
    assert code == 0
    report = json.loads(captured.out)
    warned = {warning["asset"]: warning for warning in report["warnings"]}
    # The 12 jp buttons that lie more than the search offset away from their cn areas (a chore's among them).
    assert len(warned) == 12 and "reward/MISSION_SINGLE" in warned
    fleet = warned["ui/MAIN_GOTO_FLEET"]
    assert fleet["template_area"] == [736, 360, 985, 435] and fleet["graph_area"] == [859, 372, 936, 410]
    assert fleet["offset"] == [5, 5] and fleet["outside"] == [123, 25]  # page_main's check: offset (5, 5)
    assert "ui/COMMISSION_CHECK" not in warned  # 1-2 px off: the matcher finds it
    lines = [line for line in captured.err.splitlines() if line.startswith("warning: ")]
    assert len(lines) == 12 and any(line.startswith("warning: ui/MAIN_GOTO_FLEET ") for line in lines)


def test_import_for_an_undeclared_server_is_one_line_and_exit_2(shared_dir, tmp_path, capsys):
    code = main(["assets", "import-alas", str(shared_dir / "alas"), "--server", "kr", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "unknown server 'kr'" in err
