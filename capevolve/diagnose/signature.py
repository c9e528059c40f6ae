"""The root-cause key of a failure's feedback, and the old first-words key.

Quoted literals are dropped except identifiers; the shared preamble is stripped unless nothing
specific is left; numbers, codes and stopwords are dropped; identifiers stay verbatim; other
words are stemmed before generic outcome words are dropped, so no inflection leaks through.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

_QUOTED = re.compile(r'"([^"\n]*)"|“([^”\n]*)”|`([^`\n]*)`|(?<!\w)\'([^\'\n]*)\'(?!\w)')
_WORD = re.compile(r"[a-z0-9_]+(?:'[a-z]+)?")
_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
_REDACTED = "[REDACTED]"
_DIGIT = re.compile(r"\d")
_ALPHA = re.compile(r"[a-z]")
PREAMBLE_SHARE = 0.8

STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been
before being below between both but by can cannot could couldn't did didn't do does doesn't
doing don't down during each either few for from further had hadn't has hasn't have haven't
having he her here hers him his how i if in into is isn't it it's its itself just me more
most my neither no nor not now of off on once only or other our out over own same she so
some such than that the their them then there these they this those through to too under
until up very was wasn't we were weren't what when where which while who whom why will with
won't would wouldn't you your yet never without via per s t
""".split())

_GENERIC_WORDS = """
fail failed failing failure failures wrong missing miss missed expected expect expectation
invalid incorrect incorrectly error errors erroneous omitted omit omission required require
requirement should must need needed correct correctly properly proper instead actual
actually got get found result answer output response reply agent assistant model task score
reward value mismatch mismatched match different unexpected bad issue problem success
successful successfully pass passed ok okay yes true false none null given provided step
redacted
""".split()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Collapse inflections: plural, one suffix, final e, doubled final consonant."""
    w = word
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("ches", "shes", "sses", "xes", "zes")) or (
            w.endswith("es") and len(w) > 4 and not w.endswith(("ses", "us"))):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        w = w[:-1]
    for suffix, replacement in (("ational", "ate"), ("ation", ""), ("ition", ""), ("ied", "y"),
                                ("ion", ""), ("ment", ""), ("ing", ""), ("edly", ""),
                                ("ed", ""), ("ly", ""), ("al", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)] + replacement
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    return w


GENERIC = frozenset(stem(w) for w in _GENERIC_WORDS)


def raw_tokens(feedback: str, identifiers: frozenset[str] = frozenset()) -> list[str]:
    """Lowercased word tokens with quoted literals removed (quoted identifiers kept)."""
    def keep_identifier(match: re.Match) -> str:
        inner = next(g for g in match.groups() if g is not None).strip().lower()
        if _IDENT.match(inner) and ("_" in inner or inner in identifiers):
            return f" {inner} "
        return " "

    text = feedback.replace(_REDACTED, " ")
    return _WORD.findall(_QUOTED.sub(keep_identifier, text).lower())


def preamble_cuts(feedbacks: list[str]) -> list[int]:
    """Per feedback, its offset past the token run leading ``PREAMBLE_SHARE`` of them (else 0)."""
    by_text = preamble_cuts_of(Counter(feedbacks))
    return [by_text[f] for f in feedbacks]


def preamble_cuts_of(counts: Counter[str]) -> dict[str, int]:
    """:func:`preamble_cuts` per distinct text, from counts."""
    texts = list(counts)
    total = sum(counts.values())
    if total < 2:
        return dict.fromkeys(texts, 0)
    cuts = _distinct_cuts(texts, [counts[t] for t in texts], total)
    return dict(zip(texts, cuts, strict=True))


def _distinct_cuts(feedbacks: list[str], weights: list[int], total: int) -> list[int]:
    lowered = [f.lower() for f in feedbacks]
    seen: list[list[tuple[str, int]]] = [[] for _ in feedbacks]
    common = os.path.commonprefix(lowered)
    start, depth = 0, 0
    if common:  # tokens ending inside the prefix every feedback shares: no counting needed
        inside = [(m.group(), m.end()) for m in _WORD.finditer(common)
                  if m.end() + 2 <= len(common)]
        seen = [inside.copy() for _ in feedbacks]
        start, depth = (inside[-1][1] if inside else 0), len(inside)
    streams = [_WORD.finditer(text, start) for text in lowered]

    def token(i: int, depth: int) -> str | None:
        while len(seen[i]) <= depth:
            match = next(streams[i], None)
            if match is None:
                return None
            seen[i].append((match.group(), match.end()))
        return seen[i][depth][0]

    need = PREAMBLE_SHARE * total
    alive = list(range(len(feedbacks)))
    alive_total = total
    while alive_total >= need:
        words: Counter[str] = Counter()
        for i in alive:
            if (w := token(i, depth)) is not None:
                words[w] += weights[i]
        if not words:
            break
        word, count = words.most_common(1)[0]
        if count < need:
            break
        alive = [i for i in alive if token(i, depth) == word]
        alive_total = count
        depth += 1
    cuts = [0] * len(feedbacks)
    if depth == 0 or any(token(i, depth) is None for i in alive):
        return cuts  # a run that is some failure's whole feedback is a cause, not a preamble
    for i in alive:
        end = seen[i][depth - 1][1]
        line = feedbacks[i].rfind("\n", 0, end)
        cuts[i] = line + 1 if line > 0 else end
    return cuts


@dataclass(frozen=True)
class Key:
    """A root-cause key and each token's shortest word, in text order."""

    tokens: frozenset[str]
    surface: tuple[tuple[str, str], ...]  # (token, shortest word as written), in text order


def key_of(tokens: list[str], identifiers: frozenset[str]) -> Key:
    """The root-cause key of already preamble-stripped tokens."""
    kept: dict[str, str] = {}
    for word in tokens:
        word = word.split("'", 1)[0] if word.endswith("'s") else word
        if "_" in word or word in identifiers:
            if _ALPHA.search(word):
                kept.setdefault(word, word)
            continue
        if word in STOPWORDS or _DIGIT.search(word):
            continue
        token = stem(word)
        if len(token) < 2 or token in GENERIC:
            continue
        if token not in kept or len(word) < len(kept[token]):
            kept[token] = word
    return Key(frozenset(kept), tuple(kept.items()))


def _loose_tokens(text: str) -> tuple[list[str], frozenset[str]]:
    """``raw_tokens(text)`` without identifiers, and the words identifiers could change."""
    quoted: list[str] = []

    def drop(match: re.Match) -> str:
        inner = next(g for g in match.groups() if g is not None).strip().lower()
        if _IDENT.match(inner):
            if "_" in inner:
                return f" {inner} "
            quoted.append(inner)
        return " "

    tokens = _WORD.findall(_QUOTED.sub(drop, text.replace(_REDACTED, " ")).lower())
    words = {w.split("'", 1)[0] if w.endswith("'s") else w for w in tokens}
    return tokens, frozenset(w for w in words if "_" not in w).union(quoted)


_ZEROS = str.maketrans("123456789", "000000000")
_BYTE_ZEROS = bytes.maketrans(b"123456789", b"000000000")


def even_digits(text: str) -> str:
    """``text`` with each ASCII digit written ``0``."""
    if text.isascii():
        return text.encode("ascii").translate(_BYTE_ZEROS).decode("ascii")
    return text.translate(_ZEROS)


class KeyCache:
    """Root-cause keys equal to ``key_of(raw_tokens(text, ids), ids)``, each text tokenised once
    unless ``ids`` touch its sensitive words."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[Key, frozenset[str], bool]] = {}
        self._templates: dict[str, tuple[Key, frozenset[str], bool]] = {}
        self._digit_ids: dict[frozenset[str], bool] = {}

    def _shared(self, text: str) -> tuple[Key, frozenset[str], bool]:
        """(shared key, sensitive words, whether digits were evened out) of ``text``."""
        template = even_digits(text)
        if template == text and "0" not in text:
            tokens, sensitive = _loose_tokens(text)
            return key_of(tokens, frozenset()), sensitive, False
        found = self._templates.get(template)
        if found is None:
            tokens, sensitive = _loose_tokens(template)
            exact = not any("0" in t and "_" in t for t in tokens)
            found = self._templates[template] = (key_of(tokens, frozenset()), sensitive, exact)
        if found[2]:
            return found[0], found[1], True
        tokens, sensitive = _loose_tokens(text)
        return key_of(tokens, frozenset()), sensitive, False

    def _has_digit(self, identifiers: frozenset[str]) -> bool:
        known = self._digit_ids.get(identifiers)
        if known is None:
            known = self._digit_ids[identifiers] = any(map(_DIGIT.search, identifiers))
        return known

    def key(self, text: str, identifiers: frozenset[str]) -> Key:
        known = self._known.get(text)
        if known is None:
            known = self._known[text] = self._shared(text)
        if identifiers and (not known[1].isdisjoint(identifiers)
                            or (known[2] and self._has_digit(identifiers))):
            return key_of(raw_tokens(text, identifiers), identifiers)
        return known[0]


def root_cause_keys(feedbacks: list[str], identifiers: list[frozenset[str]]) -> list[Key]:
    """The root-cause key of every failure's whole feedback."""
    keys = []
    for text, cut, ids in zip(feedbacks, preamble_cuts(feedbacks), identifiers, strict=True):
        key = key_of(raw_tokens(text[cut:], ids), ids)
        if not key.tokens and cut:  # the shared run was this failure's whole cause
            key = key_of(raw_tokens(text, ids), ids)
        keys.append(key)
    return keys


def first_words(feedback: str, n: int = 4) -> str:
    """The old lexical key: the feedback's first ``n`` words, lowercased."""
    words = re.findall(r"[a-z0-9_']+", feedback.lower())[:n]
    return " ".join(words) or "(no feedback)"
