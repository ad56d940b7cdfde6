"""Host names as a person should read them on the consent page: in their ASCII form, so a name
written with look-alike letters (a Cyrillic 'а' for a Latin 'a') cannot pass for another, and a
warning when one label mixes alphabets."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import idna


@dataclass(frozen=True)
class ShownHost:
    ascii: str  # what the page shows: xn--… for a name with letters outside ASCII
    unicode: str | None  # the name as written, when it differs
    mixed_scripts: bool  # some label mixes alphabets: the classic look-alike trick


def _script(character: str) -> str | None:
    if not character.isalpha():
        return None
    return unicodedata.name(character, "UNKNOWN").split(" ")[0]  # LATIN, CYRILLIC, GREEK, …


def shown(host: str) -> ShownHost:
    if host.isascii():
        return ShownHost(ascii=host, unicode=None, mixed_scripts=False)
    try:
        ascii_host = idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError:
        ascii_host = host.encode("ascii", "backslashreplace").decode("ascii")
    mixed = any(len({s for c in label if (s := _script(c))}) > 1 for label in host.split("."))
    return ShownHost(ascii=ascii_host, unicode=host, mixed_scripts=mixed)
