"""The labels a generated game writes on its buttons and titles: plain game words, none a part of another, so an
OCR pattern made of one label never matches another (engine.sim.generate)."""

from __future__ import annotations

import random

_WORDS = """
ABYSS ACADEMY ALCHEMY ALLIANCE AMBER ANVIL ARCADE ARCHIVE ARENA ARMORY ATLAS AURORA BADGE BANNER BARRACKS BASTION
BAZAAR BEACON BESTIARY BLADE BOUNTY BRAVE BREW BRIDGE CAMP CANYON CARGO CASTLE CELLAR CHAMPION CHAPEL CHARM CHEST
CITADEL CLAN CODEX COMET COMPASS CONVOY CORAL CREST CROWN CRYSTAL DELTA DEPOT DESERT DOCK DRAGON DUEL DUNGEON EMBER
EMPIRE ENIGMA EPOCH ESTATE EXPEDITION FABLE FALCON FEAST FERRY FESTIVAL FIELD FLEET FORGE FORTUNE FOUNTAIN FRONTIER
GALLERY GARDEN GARRISON GATE GLACIER GLORY GOLEM GROVE GUARDIAN GUILD HANGAR HARBOR HARVEST HAVEN HERALD HERO HIGHLAND
HORIZON HUNT ISLAND IVORY JADE JOURNEY JUNGLE KEEP KINGDOM LAGOON LANTERN LEGACY LEGEND LIBRARY LOTUS MANOR MARKET
MEADOW MEDAL MIRAGE MISSION MONSOON MYSTIC NEXUS NOMAD OASIS OBSIDIAN ODYSSEY ORACLE ORCHARD OUTPOST PALACE PARADE
PASS PHANTOM PIER PILGRIM PLAZA PORTAL PRISM QUARRY QUEST RAID RANKING RAVEN REALM RELIC RESEARCH RIDGE RIVAL ROSTER
RUBY RUNE SAGA SALVAGE SANCTUM SCOUT SENTRY SHOP SHRINE SIEGE SILVER SKYLINE SPIRE STABLE SUMMIT SUPPLY TAVERN TEMPLE
THRONE TIDE TOKEN TOURNEY TOWER TRAINING TREASURE TRIAL TRIBE TROPHY TUNDRA UNION VALLEY VAULT VOYAGE WARDEN
WORKSHOP ZENITH
""".split()
WORDS = tuple(w for w in _WORDS if not any(o != w and o in w for o in _WORDS))
"""Every word, none inside another (RUNE is kept, but no word with RUNE in it)."""


class Labels:
    """Draws labels without repeating a word within one game (then pairs of words when the words run out)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.free = list(WORDS)
        rng.shuffle(self.free)
        self.used: set[str] = set()

    def word(self) -> str:
        while self.free:
            word = self.free.pop()
            if word not in self.used:
                self.used.add(word)
                return word
        while True:  # out of single words: two words, still never a label seen before
            word = f"{self.rng.choice(WORDS)} {self.rng.randint(2, 99)}"
            if word not in self.used:
                self.used.add(word)
                return word
