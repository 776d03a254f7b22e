"""One signature, as a graph author writes it, compiled alone so the studio can test it on a folder of frames.

Unlike the observer, a colour signature is tested as written (not confirmed by its button's template), and a
``button`` the graph does not have yet is looked up among the templates cut in the studio (``studio/NAME``), so the
YAML the studio hands out can be tested before it is pasted into the graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.config.assetpacks import LayeredPack
from engine.config.assets import AssetPack
from engine.config.schema import AnyOfSignature, ColorSignature, Graph, OcrSignature, TemplateSignature
from engine.observe.checks import CombinedCheck

STUDIO_MODULE = "studio"


def studio_pack(pack_dir: Path, session_pack: AssetPack | None) -> LayeredPack:
    from engine.config.assetpacks import DirectoryAssetPack

    packs: list[Any] = []
    if pack_dir.is_dir():
        packs.append(DirectoryAssetPack(pack_dir))
    if session_pack is not None:
        packs.append(session_pack)
    return LayeredPack(packs, getattr(session_pack, "server", "default"))


def _has_button(graph: Graph, name: str | None) -> bool:
    if not name:
        return True
    try:
        graph.button(name)
    except KeyError:
        return False
    return True


def _studio_template(sig: Any, pack: LayeredPack) -> TemplateSignature:
    """A template signature on a button the graph lacks, made from the template cut in the studio for it."""
    asset = f"{STUDIO_MODULE}/{sig.button}"
    found = pack.get(asset)
    if found is None or found.area is None:
        raise ValueError(f"the graph has no button {sig.button!r} and no template {asset!r} was cut in the studio")
    return TemplateSignature(type="template", asset=asset, area=tuple(found.area), name=sig.name or sig.button,
                             offset=getattr(sig, "offset", None), threshold=getattr(sig, "threshold", None),
                             color=getattr(sig, "color", False))


def compile_signature(sig: Any, graph: Graph, pack: LayeredPack) -> Any:
    """A compiled check (``verify(frame) -> Evidence``) for one signature.

    Raises:
        ValueError: the signature names what neither the graph nor the studio has, or is still per-server.
        EngineError: a template is missing from every pack (MissingAsset).
    """
    from verifiers import color as color_verifier
    from verifiers import ocr as ocr_verifier
    from verifiers import template as template_verifier

    if isinstance(sig, (TemplateSignature, ColorSignature)) and not _has_button(graph, sig.button):
        if isinstance(sig, ColorSignature):
            raise ValueError(f"the graph has no button {sig.button!r}: give the colour signature area and rgb")
        sig = _studio_template(sig, pack)
    if isinstance(sig, ColorSignature):
        return color_verifier.compile_color(sig, graph)
    if isinstance(sig, TemplateSignature):
        return template_verifier.compile_template(sig, graph, pack)
    if isinstance(sig, OcrSignature):
        return ocr_verifier.compile_ocr(sig, graph)
    if isinstance(sig, AnyOfSignature):
        checks = [compile_signature(alternative, graph, pack) for alternative in sig.of]
        return CombinedCheck(sig.name or checks[0].name, checks, need_all=False)
    raise ValueError(f"unknown signature type {getattr(sig, 'type', sig)!r}")
