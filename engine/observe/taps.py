"""Buttons found where they are: a popup's tap with ``search`` (a dialog whose button moves) is located on the frame
the popup was seen on, so that the actuator taps where the button is now.

A tap ``{type: tap, button: B, search: AREA}`` in a popup's ``dismiss`` is compiled once per graph: B's template,
searched over AREA (the dialog's area) instead of B's area widened by the template offset. When the observer names
the popup, the search runs and its evidence (channel ``template``, signature B, the offset from B's declared area)
joins the observation; ``Observation.offsets`` then shifts the tap (engine.navigation.actuator), as for any
template that matched a little elsewhere. A search that finds nothing is a miss in the evidence, and the tap goes
to B's declared click area.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Any

import numpy as np

from engine.config.assets import AssetPack
from engine.config.schema import Graph, TapAction, TemplateSignature
from engine.core.errors import VerificationError
from engine.core.results import Evidence
from verifiers import template as template_verifier
from verifiers.common import clip

log = logging.getLogger(__name__)


def compile_search_taps(graph: Graph, assets: AssetPack) -> dict[str, list[Any]]:
    """Per popup, the compiled checks of its dismiss taps that search for their button (those it has)."""
    taps: dict[str, list[Any]] = {}
    for popup in graph.popups:
        for action in popup.dismiss:
            if not isinstance(action, TapAction) or action.search is None:
                continue
            try:
                check = template_verifier.compile_template(
                    TemplateSignature(type="template", button=action.button), graph, assets)
            except (VerificationError, KeyError) as exc:
                log.warning("popup %s: its tap on %s cannot search for it: %s", popup.name, action.button, exc)
                continue
            search = clip(tuple(action.search), graph.resolution)
            # Full scale: the button may sit anywhere in the area, off the coarse grid of its declared corner.
            taps.setdefault(popup.name, []).append(replace(check, search=search, coarse=False,
                                                           _lock=threading.Lock()))
    return taps


def locate(taps: dict[str, list[Any]], frame: np.ndarray, popups: tuple[str, ...]) -> list[Evidence]:
    """The evidence of where each searching tap's button is, for the popups seen on `frame`."""
    return [check.verify(frame) for name in popups for check in taps.get(name, ())]
