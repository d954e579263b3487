"""Which problems fail a run: severity, ``--strict``, ``--fail-on`` and ``--allow``.

Errors fail unless allowed; warnings fail under ``--strict`` or when their code is in
``--fail-on``; an allowed code never fails (it is still reported, marked allowed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kvscale.errors import UsageError
from kvscale.problems import CATALOGUE, Problem, Severity


@dataclass(frozen=True)
class Policy:
    strict: bool = False
    fail_on: frozenset[str] = field(default_factory=frozenset)
    allow: frozenset[str] = field(default_factory=frozenset)

    def fails(self, item: Problem) -> bool:
        if item.code in self.allow:
            return False
        if item.severity is Severity.ERROR:
            return True
        return self.strict or item.code in self.fail_on

    def failing(self, problems: Iterable[Problem]) -> list[Problem]:
        return [p for p in problems if self.fails(p)]

    def merged(self, other: Policy) -> Policy:
        """Command-line options (other) on top of a policy file (self)."""
        return Policy(
            strict=self.strict or other.strict,
            fail_on=(self.fail_on - other.allow) | other.fail_on,
            allow=(self.allow - other.fail_on) | other.allow,
        )


def parse_codes(values: Sequence[str] | None, option: str) -> frozenset[str]:
    """``--fail-on a,b --fail-on c`` -> {a, b, c}; unknown codes are a usage error."""
    codes: set[str] = set()
    for value in values or ():
        for part in value.split(","):
            code = part.strip()
            if not code:
                continue
            if code not in CATALOGUE:
                raise UsageError(
                    f"unknown problem code {code!r} in {option}",
                    hint="run `kvscale codes` for the list",
                )
            codes.add(code)
    return frozenset(codes)
