"""Asset packs: a template name -> the template's pixels (one or more frames) and where it sits.

Three kinds implement the AssetPack protocol: a directory in ALAS's layout (``assets/<server>/<module>/NAME.png``,
full frames black outside the button), a directory in the project's own layout, and the simulator's synthetic pack
(engine/sim). Names are ``module/NAME`` (for example ``ui/BACK_ARROW``), never absolute and never containing ``..``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol

import numpy as np

Area = tuple[int, int, int, int]


@dataclass(frozen=True)
class Template:
    """One template: BGR crops (several for an animated .gif asset: any may match) and its areas."""

    name: str
    frames: tuple[np.ndarray, ...]
    area: Area | None = None
    """Where the crop sits on a reference frame, when the pack knows it (ALAS files do)."""
    click: Area | None = None
    """The click area when it differs from `area` (ALAS's NAME.BUTTON.png)."""


class AssetPack(Protocol):
    server: str

    def get(self, name: str) -> Template | None:
        """The template called `name`, or None when the pack does not have it."""

    def names(self) -> Iterable[str]:
        """Every template name the pack can answer."""
