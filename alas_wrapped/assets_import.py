"""Import the templates a graph names from an ALAS checkout into the project's asset layout.

ALAS keeps each template as a full 1280x720 frame, black outside the button (assets/<server>/<module>/NAME.png,
.gif for animated ones, NAME.BUTTON.png for a separate click area). The import crops each one to its button,
keeps every frame of a .gif, records area and click area in index.json (engine.assetpacks.DirectoryAssetPack),
and reports the names the checkout does not have: a graph that names an asset nobody can supply is a bug worth
seeing before the first tap.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel

from engine.assetpacks import AlasAssetPack, new_index, save_index, write_template
from engine.schema import Graph

log = logging.getLogger(__name__)


@dataclass
class ImportReport:
    server: str
    out: Path
    imported: list[str] = field(default_factory=list)
    fallback: list[str] = field(default_factory=list)
    """Imported from the fallback server because `server` has no file of its own."""
    missing: dict[str, list[str]] = field(default_factory=dict)
    """Asset name -> the buttons or signatures that name it."""

    @property
    def ok(self) -> bool:
        return not self.missing

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "server": self.server,
            "out": str(self.out),
            "imported": len(self.imported),
            "fallback": self.fallback,
            "missing": self.missing,
        }


def _walk(value: Any) -> Iterator[Any]:
    if isinstance(value, BaseModel):
        yield value
        for name in type(value).model_fields:
            yield from _walk(getattr(value, name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item)


def asset_names(graph: Graph) -> dict[str, list[str]]:
    """Every asset name a server-resolved graph uses -> who uses it (buttons and template signatures)."""
    names: dict[str, list[str]] = {}
    for node in _walk(graph):
        asset = getattr(node, "asset", None)
        if isinstance(asset, str):
            owner = getattr(node, "name", None) or getattr(node, "button", None) or "signature"
            names.setdefault(asset, []).append(owner)
    return dict(sorted(names.items()))


def import_alas(alas_root: str | Path, server: str, out: str | Path, graph: Graph) -> ImportReport:
    """Copy (cropped) every template `graph` names from an ALAS checkout into `out` (project layout)."""
    if graph.server is None:
        graph = graph.for_server(server)
    pack = AlasAssetPack(alas_root, server)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = ImportReport(server=server, out=out)
    index = new_index(server)
    for name, owners in asset_names(graph).items():
        template = pack.get(name)
        if template is None:
            report.missing[name] = sorted(set(owners))
            continue
        write_template(out, template, index)
        report.imported.append(name)
        source = pack.source(name)
        if source is not None and source[1] != server:
            report.fallback.append(name)
    save_index(out, index)
    log.info("imported %d templates into %s (%d missing)", len(report.imported), out, len(report.missing))
    return report
