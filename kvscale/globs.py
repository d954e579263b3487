"""``fnmatch.fnmatchcase`` against many patterns at once, in time linear in the names.

Both engines test every ``layer_quant_config`` name of a Quark checkpoint against every
``kv_cache_group`` pattern with one ``fnmatch.fnmatchcase`` call per pair (vLLM 0.33.0
``model_executor/layers/quantization/quark/quark.py`` ``QuarkConfig.from_config``; SGLang 0.5.23
``srt/layers/quantization/quark/quark.py``, a port). A 400-layer MoE checkpoint has ~300,000
names; with hundreds of patterns that is ~10^8 regex calls, minutes of CPU. ``GlobSet`` answers
the same question with hash lookups for the plain forms (a name, ``*<literal>``,
``<literal>*``) and one automaton for all other patterns: their positions are simulated together
(a Thompson NFA), and each set of positions met becomes a DFA state the first time it is met, so
that a later name costs one dictionary lookup per dot-separated part of it. Cost: linear in the
names' and the patterns' lengths for every pattern set measured (``tests/hostile/
test_many_names.py``); a hostile pattern set whose DFA is exponential is matched correctly, with a
bounded cache.

Semantics are ``fnmatch.fnmatchcase``'s, character for character: ``*`` any run (also empty,
also of dots and newlines), ``?`` one character, ``[...]`` one character of a set, with the
bracket extent and set contents that ``fnmatch.translate`` gives (a ``[`` with no closing ``]``
is a literal ``[``; each set is compiled by ``fnmatch.translate`` itself); nothing is escaped.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from enum import Enum

_SPECIAL = re.compile(r"[*?\[]")


class _Wild(Enum):
    STAR = "*"
    ANY = "?"


_Atom = str | _Wild | re.Pattern[str]
"""One character of a pattern: a literal character, ``*``, ``?`` or a compiled ``[...]`` set."""


def _parse(pattern: str) -> tuple[_Atom, ...]:
    """A pattern's atoms, with consecutive stars merged (as ``fnmatch.translate`` does)."""
    atoms: list[_Atom] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if not atoms or atoms[-1] is not _Wild.STAR:
                atoms.append(_Wild.STAR)
        elif c == "?":
            atoms.append(_Wild.ANY)
        elif c == "[":
            # fnmatch.translate's bracket extent: an optional "!", an optional "]", then up to
            # the next "]"; without one the "[" is a literal.
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                atoms.append("[")
            else:
                atoms.append(re.compile(fnmatch.translate(pattern[i - 1 : j + 1])))
                i = j + 1
        else:
            atoms.append(c)
    return tuple(atoms)


Position = tuple[int, int]
"""(pattern index, atom index): how far one pattern has read."""

_Step = tuple[int, tuple[Position, ...]]
"""A block's step: the next block (-1: none) and the star positions reached."""

_MAX_CACHED = 100_000
"""DFA states and blocks kept before the cache starts again. A hostile pattern set
(``*a??????????``) has exponentially many states; matching stays correct, only slower."""


_MAX_LENGTHS = 64
"""Distinct literal lengths of ``*<literal>`` (or ``<literal>*``) patterns hashed; more go to
the automaton (each length costs every name one lookup)."""


_NO_LINKS: frozenset[int] = frozenset()


def _lengths(literals: set[str]) -> tuple[int, ...]:
    return tuple(sorted({len(literal) for literal in literals}))


class GlobSet:
    """Whether a name matches any of ``patterns`` (``fnmatch.fnmatchcase``): names,
    ``*<literal>`` and ``<literal>*`` by hash lookups, the rest by one lazily built DFA.

    The NFA's positions are split two ways, so that no new DFA state costs the number of
    patterns:

    * a position at a star never leaves (the star takes every character): the stars reached
      form a *star set*, grown link by link, and each link's followers on a character (the
      positions that start reading the segment after a star) are computed once;
    * the other positions come in *blocks*, one per character at which they started (or the
      start of the name): a block steps as a whole, and its step is computed once. The
      thousands of ``*.layers.N.self_attn.k_proj`` patterns that start reading after any "."
      are one block, shared by every name and state, not copied into each.

    A DFA state is a star set and a set of blocks."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self._exact: set[str] = set()
        suffixes: set[str] = set()
        prefixes: set[str] = set()
        others: list[str] = []
        for pattern in dict.fromkeys(patterns):
            if not _SPECIAL.search(pattern):
                self._exact.add(pattern)
            elif pattern[:1] == "*" and not _SPECIAL.search(pattern, 1):
                suffixes.add(pattern[1:])
            elif pattern[-1:] == "*" and not _SPECIAL.search(pattern[:-1]):
                prefixes.add(pattern[:-1])
            else:
                others.append(pattern)
        # "*<literal>" and "<literal>*" (Quark's "*k_proj") by one hash lookup per distinct
        # literal length: as long as there are few lengths, that beats any automaton.
        self._suffixes, self._suffix_lengths = suffixes, _lengths(suffixes)
        self._prefixes, self._prefix_lengths = prefixes, _lengths(prefixes)
        if len(self._suffix_lengths) > _MAX_LENGTHS:
            others.extend("*" + s for s in suffixes)
            self._suffixes, self._suffix_lengths = set(), ()
        if len(self._prefix_lengths) > _MAX_LENGTHS:
            others.extend(s + "*" for s in prefixes)
            self._prefixes, self._prefix_lengths = set(), ()
        self._programs = [_parse(pattern) for pattern in others]
        self._generation = 0
        self._reset()

    def _reset(self) -> None:
        self._generation += 1
        # Blocks: frozen sets of positions not at a star.
        self._block_ids: dict[frozenset[Position], int] = {}
        self._blocks: list[frozenset[Position]] = []
        self._block_final: list[bool] = []
        self._block_index: list[tuple[dict[str, list[Position]], list[Position]] | None] = []
        self._block_steps: list[dict[str, _Step]] = []
        # Star sets: each is its parent grown by its own stars (a link), known by that, not by
        # its content (a copy of thousands of stars per set would cost patterns x names); the
        # chain of links from the first set to it says which followers start on a character.
        self._star_children: dict[tuple[int, frozenset[Position]], int] = {}
        self._star_own: list[frozenset[Position]] = []
        self._star_chain: list[tuple[int, ...]] = []
        self._chain_links: list[frozenset[int]] = []
        self._added_by: dict[Position, set[int]] = {}
        """The links that hold a star: whether a set has it is one intersection."""
        self._star_final: list[bool] = []
        self._link_index: list[tuple[dict[str, list[Position]], list[Position]] | None] = []
        self._link_steps: list[dict[str, _Step]] = []
        # DFA states: (star set, blocks).
        self._state_ids: dict[tuple[int, frozenset[int]], int] = {}
        self._state_stars: list[int] = []
        self._state_blocks: list[frozenset[int]] = []
        self._accepts: list[bool] = []
        self._absorbs: list[bool] = []
        self._dead: list[bool] = []
        self._steps: list[dict[str, int]] = []
        self._part_steps: dict[tuple[int, str], int] = {}
        self._start = self._state_of(frozenset(), [(p, 0) for p in range(len(self._programs))])

    def _state_of(self, stars: frozenset[Position], positions: Iterable[Position]) -> int:
        """The state of a star set's stars and one block of positions (a fresh cache)."""
        block, reached = self._block(positions)
        sid = self._grow(-1, [*stars, *reached])
        return self._state(sid, frozenset([block]) if block >= 0 else frozenset())

    def _is_star(self, p: int, i: int) -> bool:
        atoms = self._programs[p]
        return i < len(atoms) and atoms[i] is _Wild.STAR

    def _block(self, positions: Iterable[Position]) -> _Step:
        """The block of ``positions`` that are not at a star, and those that are."""
        rest: set[Position] = set()
        stars: list[Position] = []
        for pos in positions:
            if self._is_star(*pos):
                stars.append(pos)
            else:
                rest.add(pos)
        if not rest:
            return -1, tuple(stars)
        key = frozenset(rest)
        found = self._block_ids.get(key)
        if found is None:
            found = len(self._blocks)
            self._block_ids[key] = found
            self._blocks.append(key)
            self._block_final.append(any(i == len(self._programs[p]) for p, i in key))
            self._block_index.append(None)
            self._block_steps.append({})
        return found, tuple(stars)

    def _grow(self, sid: int, stars: Iterable[Position]) -> int:
        """Star set ``sid`` (-1: none) grown by those of ``stars`` it does not hold."""
        links = self._chain_links[sid] if sid >= 0 else frozenset()
        own = frozenset(st for st in stars if not (self._added_by.get(st, _NO_LINKS) & links))
        if not own:
            return sid
        found = self._star_children.get((sid, own))
        if found is not None:
            return found
        new = len(self._star_own)
        self._star_children[(sid, own)] = new
        self._star_own.append(own)
        chain = (self._star_chain[sid] if sid >= 0 else ()) + (new,)
        self._star_chain.append(chain)
        self._chain_links.append(frozenset(chain))
        for star in own:
            self._added_by.setdefault(star, set()).add(new)
        # A final star takes the rest of the name, whatever it is: stop reading.
        self._star_final.append(
            (sid >= 0 and self._star_final[sid])
            or any(i == len(self._programs[p]) - 1 for p, i in own)
        )
        # The link's followers: the atom after each of its own stars, advanced when it takes
        # the next character.
        self._link_index.append(self._index((p, i + 1) for p, i in own))
        self._link_steps.append({})
        return new

    def _index(
        self, positions: Iterable[Position]
    ) -> tuple[dict[str, list[Position]], list[Position]]:
        """Positions by the literal character their atom takes (each advanced by one), and
        those whose atom is ``?`` or a set: a step then costs the positions that move."""
        literal: dict[str, list[Position]] = {}
        wild: list[Position] = []
        programs = self._programs
        for p, i in positions:
            if i == len(programs[p]):
                continue
            atom = programs[p][i]
            if isinstance(atom, str):
                literal.setdefault(atom, []).append((p, i + 1))
            else:
                wild.append((p, i))
        return literal, wild

    def _advance(self, index: tuple[dict[str, list[Position]], list[Position]], char: str) -> _Step:
        literal, wild = index
        moved = list(literal.get(char, ()))
        programs = self._programs
        for p, i in wild:
            atom = programs[p][i]
            if atom is _Wild.ANY or (isinstance(atom, re.Pattern) and atom.match(char)):
                moved.append((p, i + 1))
        return self._block(moved)

    def _block_step(self, block: int, char: str) -> _Step:
        steps = self._block_steps[block]
        got = steps.get(char)
        if got is None:
            index = self._block_index[block]
            if index is None:
                index = self._block_index[block] = self._index(self._blocks[block])
            got = steps[char] = self._advance(index, char)
        return got

    def _link_step(self, link: int, char: str) -> _Step:
        steps = self._link_steps[link]
        got = steps.get(char)
        if got is None:
            index = self._link_index[link]
            assert index is not None
            got = steps[char] = self._advance(index, char)
        return got

    def _state(self, sid: int, blocks: frozenset[int]) -> int:
        key = (sid, blocks)
        found = self._state_ids.get(key)
        if found is not None:
            return found
        state = len(self._state_stars)
        self._state_ids[key] = state
        self._state_stars.append(sid)
        self._state_blocks.append(blocks)
        self._accepts.append(any(self._block_final[b] for b in blocks))
        self._absorbs.append(sid >= 0 and self._star_final[sid])
        self._dead.append(sid < 0 and not blocks)
        self._steps.append({})
        return state

    def _step(self, state: int, char: str) -> int:
        nxt = self._steps[state].get(char)
        if nxt is not None:
            return nxt
        sid = self._state_stars[state]
        blocks: set[int] = set()
        reached: list[Position] = []
        for block in self._state_blocks[state]:
            moved, stars = self._block_step(block, char)
            if moved >= 0:
                blocks.add(moved)
            reached.extend(stars)
        for link in self._star_chain[sid] if sid >= 0 else ():
            moved, stars = self._link_step(link, char)
            if moved >= 0:
                blocks.add(moved)
            reached.extend(stars)
        nxt = self._state(self._grow(sid, reached) if reached else sid, frozenset(blocks))
        self._steps[state][char] = nxt
        return nxt

    def _run(self, state: int, text: str) -> int:
        for char in text:
            if self._dead[state] or self._absorbs[state]:
                break
            if len(self._state_stars) + len(self._blocks) > _MAX_CACHED:
                state = self._restart(state)
            state = self._step(state, char)
        return state

    def _restart(self, state: int) -> int:
        """Drop every cached state, block and star set but ``state``'s."""
        sid = self._state_stars[state]
        chain = self._star_chain[sid] if sid >= 0 else ()
        stars = frozenset(star for link in chain for star in self._star_own[link])
        positions = [pos for b in self._state_blocks[state] for pos in self._blocks[b]]
        self._reset()
        return self._state_of(stars, positions)

    def matches(self, name: str) -> bool:
        if name in self._exact:
            return True
        size = len(name)
        for length in self._suffix_lengths:
            if length > size:
                break
            if name[size - length :] in self._suffixes:
                return True
        for length in self._prefix_lengths:
            if length > size:
                break
            if name[:length] in self._prefixes:
                return True
        if not self._programs:
            return False
        # Names repeat their dot-separated parts ("model", "layers", "12", "experts", ...): a
        # part is read character by character once per state it is reached in (the first
        # part from the start state, without a dot before it).
        state = -1
        for part in name.split("."):
            key = (state, part)
            nxt = self._part_steps.get(key)
            if nxt is None:
                generation = self._generation
                nxt = self._run(self._start if state < 0 else self._step(state, "."), part)
                if generation == self._generation:
                    self._part_steps[key] = nxt
            state = nxt
            if self._dead[state] or self._absorbs[state]:
                break
        return self._absorbs[state] or self._accepts[state]


__all__ = ["GlobSet"]
