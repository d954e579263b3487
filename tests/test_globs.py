"""kvscale.globs.GlobSet: ``fnmatch.fnmatchcase`` over many patterns, exactly."""

from __future__ import annotations

import fnmatch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvscale import globs
from kvscale.globs import GlobSet

# Every character fnmatch treats specially, and the ones inside a set ("!", "^", "-", "]", "\").
PATTERN_CHARS = "ab.*?[]!^-\\\n"
NAME_CHARS = "ab.[]!^-\\\n"
patterns = st.lists(st.text(PATTERN_CHARS, max_size=8), min_size=1, max_size=5)
names = st.lists(st.text(NAME_CHARS, max_size=10), max_size=20)


def fnmatch_any(name: str, group: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in group)


@settings(max_examples=150, deadline=None)
@given(patterns, names)
def test_matches_exactly_what_fnmatchcase_matches(group: list[str], tried: list[str]) -> None:
    found = GlobSet(group)
    assert [found.matches(n) for n in tried] == [fnmatch_any(n, group) for n in tried]


@settings(max_examples=75, deadline=None)
@given(patterns, names)
def test_the_automaton_alone_and_its_restarts_match_exactly(
    group: list[str], tried: list[str]
) -> None:
    """Every pattern through the automaton (no hashed suffix or prefix), with a cache so small
    that it starts again inside a name."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(globs, "_MAX_LENGTHS", -1)
        patch.setattr(globs, "_MAX_CACHED", 3)
        found = GlobSet(group)
        assert [found.matches(n) for n in tried] == [fnmatch_any(n, group) for n in tried]


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("*", "", True),
        ("*", "any.thing\n", True),
        ("a[b", "a[b", True),  # no closing "]": a literal "["
        ("[]]", "]", True),  # a "]" first in a set is a member
        ("[!]]", "a", True),
        ("[!]]", "]", False),
        ("[a-]", "-", True),
        ("[z-a]", "z", False),  # an empty range matches nothing
        ("?", "\n", True),  # "?" and "*" take newlines, as fnmatch's (?s) does
        ("model.layers.*.self_attn.[kv]_proj", "model.layers.7.self_attn.v_proj", True),
        ("model.layers.*.self_attn.[kv]_proj", "model.layers.7.self_attn.q_proj", False),
        ("*.layers.1.*.k_proj", "model.layers.1.self_attn.k_proj", True),
        ("*.layers.1.*.k_proj", "model.layers.12.self_attn.k_proj", False),
        ("*k_proj", "model.layers.0.self_attn.k_proj", True),
        ("model.*", "model.layers.0.self_attn.k_proj", True),
        ("model.layers.0.self_attn.k_proj", "model.layers.0.self_attn.k_proj", True),
    ],
)
def test_fnmatch_corner_cases(pattern: str, name: str, expected: bool) -> None:
    assert fnmatch.fnmatchcase(name, pattern) is expected
    assert GlobSet([pattern]).matches(name) is expected
