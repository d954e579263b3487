"""What a command runs with: command line over policy file over defaults, decided once.

Every command that resolves scales calls ``run_settings``; nothing else merges options.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from kvscale.engine.options import EngineOptions, check_for_engine
from kvscale.errors import UsageError
from kvscale.policy import Policy, PolicyFile, parse_codes, resolve_policy_file


@dataclass(frozen=True)
class RunSettings:
    options: EngineOptions
    """Engine options after the merge (fields still ``None`` take the engine's defaults)."""
    policy: Policy
    policy_file: PolicyFile | None

    @property
    def policy_path(self) -> str | None:
        return str(self.policy_file.path) if self.policy_file else None

    def applied(self) -> dict[str, object]:
        """Which options and which policy file were applied (for the summary and JSON)."""
        return {"policy_file": self.policy_path, "options": self.options.chosen()}


def _value(choice: Enum | str | None) -> str | None:
    if isinstance(choice, Enum):
        return str(choice.value)
    return choice


def run_settings(
    *,
    engine: Enum | str | None = None,
    kv_cache_dtype: str | None = None,
    platform: Enum | str | None = None,
    model_dtype: str | None = None,
    attention_backend: str | None = None,
    kv_cache_dtype_skip_layers: Sequence[str] | None = None,
    gpu_arch: str | None = None,
    policy_path: Path | None = None,
    no_policy: bool = False,
    strict: bool = False,
    fail_on: Sequence[str] | None = None,
    allow: Sequence[str] | None = None,
) -> RunSettings:
    """The engine options and fail policy of a run; ``None`` means "not on the command line"."""
    if policy_path is not None and no_policy:
        raise UsageError("--policy and --no-policy exclude each other")
    cli_policy = Policy(
        strict=strict,
        fail_on=parse_codes(fail_on, "--fail-on"),
        allow=parse_codes(allow, "--allow"),
    )
    both = sorted(cli_policy.fail_on & cli_policy.allow)
    if both:
        raise UsageError(f"{', '.join(both)} given to both --fail-on and --allow")
    cli_options = EngineOptions(
        engine=_value(engine),  # type: ignore[arg-type]
        platform=_value(platform),  # type: ignore[arg-type]
        model_dtype=model_dtype,
        kv_cache_dtype_skip_layers=tuple(kv_cache_dtype_skip_layers)
        if kv_cache_dtype_skip_layers
        else None,
        gpu_arch=gpu_arch,
    )
    file = resolve_policy_file(policy_path, discover=not no_policy)
    merged = cli_options if file is None else cli_options.over(file.options)
    check_for_engine(merged.engine_name, kv_cache_dtype, attention_backend)
    merged = replace(
        merged,
        kv_cache_dtype=kv_cache_dtype or merged.kv_cache_dtype,
        attention_backend=attention_backend or merged.attention_backend,
    )
    if file is None:
        return RunSettings(merged, cli_policy, None)
    return RunSettings(merged, file.policy.merged(cli_policy), file)
