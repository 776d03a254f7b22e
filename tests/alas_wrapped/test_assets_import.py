from __future__ import annotations

import json
import shutil

from engine.__main__ import main
from engine.assetpacks import DirectoryAssetPack


def test_import_alas_writes_every_named_template_and_exits_0(shared_dir, tmp_path, capsys):
    out = tmp_path / "en"
    assert main(["assets", "import-alas", str(shared_dir / "alas"), "--server", "en", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["imported"] > 100 and not report["missing"]
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
