"""Import the templates a graph names from an ALAS checkout into the project's asset layout.

ALAS keeps each template as a full 1280x720 frame, black outside the button (assets/<server>/<module>/NAME.png,
.gif for animated ones, NAME.BUTTON.png for a separate click area). The import crops each one to its button,
keeps every frame of a .gif, records area and click area in index.json (engine.config.assetpacks.DirectoryAssetPack),
and reports the names the checkout does not have: a graph that names an asset nobody can supply is a bug worth
seeing before the first tap. A server without a file of its own takes the graph's ``fallback_server``'s.

It also warns about every template that sits farther from the graph's area for that server than the search
offset lets the matcher look: the graph would never find it there (a server whose areas were never written).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel

from engine.config.assetpacks import AlasAssetPack, new_index, save_index, write_template
from engine.config.assets import Area
from engine.config.schema import AnyOfSignature, Graph, Page, TemplateSignature

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AreaWarning:
    """A template that lies outside its graph area widened by the search offset."""

    asset: str
    owners: tuple[str, ...]
    template_area: Area
    graph_area: Area
    offset: tuple[int, int]
    outside: tuple[int, int]
    """How far (x, y) the template's edges lie beyond the graph's area (before the offset widens it)."""

    @property
    def message(self) -> str:
        return (f"{self.asset} ({', '.join(self.owners)}): template area {list(self.template_area)} is off the "
                f"graph's area {list(self.graph_area)} by ({self.outside[0]}, {self.outside[1]}) px, more than "
                f"the search offset ({self.offset[0]}, {self.offset[1]})")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.message}


@dataclass
class ImportReport:
    server: str
    out: Path
    imported: list[str] = field(default_factory=list)
    fallback: list[str] = field(default_factory=list)
    """Imported from the fallback server because `server` has no file of its own."""
    missing: dict[str, list[str]] = field(default_factory=dict)
    """Asset name -> the buttons or signatures that name it."""
    warnings: list[AreaWarning] = field(default_factory=list)

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
            "warnings": [warning.to_dict() for warning in self.warnings],
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


@dataclass(frozen=True)
class _Use:
    asset: str
    owner: str
    area: Area
    offset: tuple[int, int]


def _template_signatures(signatures: list[Any]) -> Iterator[TemplateSignature]:
    for signature in signatures:
        if isinstance(signature, AnyOfSignature):
            yield from _template_signatures(signature.of)
        elif isinstance(signature, TemplateSignature):
            yield signature


def template_uses(graph: Graph) -> Iterator[_Use]:
    """Where a server-resolved graph expects each template: signatures with their offsets, and every button with
    an asset at the graph's default offset (buttons are found there before a tap)."""
    scopes: list[tuple[Page | None, list[Any]]] = [(page, page.signatures) for page in graph.pages]
    scopes += [(None, popup.signatures) for popup in graph.popups]
    scopes.append((None, graph.loading_signatures))
    buttons = {button.name: button for button in graph.buttons}
    for page, signatures in scopes:
        default = graph.settings(page).template_offset or (0, 0)
        for sig in _template_signatures(signatures):
            button = buttons.get(sig.button) if sig.button else None
            asset = sig.asset or (button.asset if button else None)
            area = sig.area or (button.area if button else None)
            if isinstance(asset, str) and area is not None:
                owner = sig.button or sig.name or asset
                yield _Use(asset, owner, tuple(area), tuple(sig.offset or default))
    default = graph.settings().template_offset or (0, 0)
    for button in graph.buttons:
        if isinstance(button.asset, str):
            yield _Use(button.asset, button.name, tuple(button.area), tuple(default))


def _outside(template: Area, area: Area) -> tuple[int, int]:
    """How far the template's edges stick out of `area` (0 when it lies inside)."""
    return (max(area[0] - template[0], template[2] - area[2], 0), max(area[1] - template[1], template[3] - area[3], 0))


def area_warnings(graph: Graph, areas: dict[str, Area]) -> list[AreaWarning]:
    """Templates (asset name -> the area they sit at) that the graph would search for in the wrong place."""
    found: dict[tuple[str, Area, tuple[int, int]], list[str]] = {}
    worst: dict[tuple[str, Area, tuple[int, int]], tuple[int, int]] = {}
    for use in template_uses(graph):
        template = areas.get(use.asset)
        if template is None:
            continue
        dx, dy = _outside(template, use.area)
        if dx > use.offset[0] or dy > use.offset[1]:
            key = (use.asset, use.area, use.offset)
            found.setdefault(key, []).append(use.owner)
            worst[key] = (dx, dy)
    warnings: dict[str, AreaWarning] = {}
    for (asset, area, offset), owners in found.items():
        if asset not in warnings:  # one line per template: the first (strictest) disagreement
            warnings[asset] = AreaWarning(asset, tuple(dict.fromkeys(owners)), areas[asset], area, offset,
                                          worst[(asset, area, offset)])
    return [warnings[name] for name in sorted(warnings)]


def import_alas(alas_root: str | Path, server: str, out: str | Path, graph: Graph) -> ImportReport:
    """Copy (cropped) every template `graph` names from an ALAS checkout into `out` (project layout).

    Raises:
        ConfigError: the graph does not declare `server`, or the checkout has no assets for it.
    """
    graph = graph.resolve(server)
    pack = AlasAssetPack(alas_root, server, fallback=graph.fallback_server)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = ImportReport(server=server, out=out)
    index = new_index(server)
    areas: dict[str, Area] = {}
    for name, owners in asset_names(graph).items():
        template = pack.get(name)
        if template is None:
            report.missing[name] = sorted(set(owners))
            continue
        write_template(out, template, index)
        report.imported.append(name)
        if template.area is not None:
            areas[name] = template.area
        source = pack.source(name)
        if source is not None and source[1] != server:
            report.fallback.append(name)
    save_index(out, index)
    report.warnings = area_warnings(graph, areas)
    for warning in report.warnings:
        log.debug("area warning: %s", warning.message)
    log.info("imported %d templates into %s (%d missing, %d off their area)", len(report.imported), out,
             len(report.missing), len(report.warnings))
    return report
