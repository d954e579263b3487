"""Every command-line flag reaches the core call it is meant for (issue 10: a flag that only
picked verify's write format, never its resolution, passed every other test).

Each test replaces the command's one core call with a stub that records its arguments and stops
the command (a ``UsageError``: exit 2), then checks that every flag arrived, merged with the
policy file exactly once (command line > policy file > defaults).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.cli import CliRunner
from support.paths import EXAMPLES

from kvscale.cli import app
from kvscale.engine.options import EngineOptions
from kvscale.errors import UsageError

EXAMPLE = EXAMPLES / "llm-compressor-fp8"
runner = CliRunner()

ENGINE_FLAGS = [
    "--engine",
    "sglang",
    "--kv-cache-dtype",
    "fp8_e4m3",
    "--platform",
    "fnuz",
    "--model-dtype",
    "float16",
]
ENGINE = EngineOptions(
    engine="sglang",  # type: ignore[arg-type]
    kv_cache_dtype="fp8_e4m3",
    platform="fnuz",  # type: ignore[arg-type]
    model_dtype="float16",
)


class Seam:
    """Replace ``module.name`` with a stub recording its call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: str, name: str) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

        def stub(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((args, kwargs))
            raise UsageError("stopped at the seam")

        monkeypatch.setattr(f"{module}.{name}", stub)

    def run(self, *args: object) -> tuple[tuple[Any, ...], dict[str, Any]]:
        result = runner.invoke(app, [str(a) for a in args])
        assert result.exit_code == 2, result.stderr
        assert "stopped at the seam" in result.stderr, result.stderr
        assert len(self.calls) == 1
        return self.calls[0]


@pytest.fixture(autouse=True)
def _no_policy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()  # the policy search stops at this "repository root"
    monkeypatch.chdir(tmp_path)


def _same_options(got: EngineOptions, want: EngineOptions) -> None:
    assert got.chosen() == want.chosen()


def test_inspect(monkeypatch: pytest.MonkeyPatch) -> None:
    seam = Seam(monkeypatch, "kvscale.core.inspect", "inspect_checkpoint")
    args, kwargs = seam.run(
        "inspect", EXAMPLE, *ENGINE_FLAGS, "--attention-backend", "triton", "--revision", "v2"
    )
    assert args[0] == str(EXAMPLE)
    _same_options(args[1], EngineOptions(**{**ENGINE.chosen(), "attention_backend": "triton"}))
    assert kwargs["revision"] == "v2"


def test_inspect_takes_options_from_the_policy_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "kvscale.toml").write_text('kv_cache_dtype = "fp8"\nplatform = "fnuz"\n')
    seam = Seam(monkeypatch, "kvscale.core.inspect", "inspect_checkpoint")
    args, _ = seam.run("inspect", EXAMPLE, "--platform", "ocp")
    assert args[1].chosen() == {"kv_cache_dtype": "fp8", "platform": "ocp"}


@pytest.mark.parametrize("checkpoint_copy", [False, True])
def test_normalize(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, checkpoint_copy: bool) -> None:
    seam = Seam(monkeypatch, "kvscale.core.normalize", "plan_normalize")
    extra = ["--checkpoint"] if checkpoint_copy else []
    args, _ = seam.run(
        "normalize", EXAMPLE, "--out", tmp_path / "o", *ENGINE_FLAGS, "--force", "--digests",
        "--revision", "main", *extra,
    )  # fmt: skip
    checkpoint, out, options = args[0], args[1], args[2]
    assert (checkpoint, Path(out)) == (str(EXAMPLE), tmp_path / "o")
    _same_options(options.engine, ENGINE)
    assert (options.checkpoint, options.force, options.write.digests, options.revision) == (
        checkpoint_copy,
        True,
        True,
        "main",
    )


def test_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    seam = Seam(monkeypatch, "kvscale.core.diff", "diff_paths")
    args, _ = seam.run("diff", EXAMPLE, "hf://org/b@v1", *ENGINE_FLAGS, "--max-rel-change", "0.25")
    assert args[:2] == (str(EXAMPLE), "hf://org/b@v1")
    _same_options(args[2], ENGINE)
    assert args[3] == 0.25


def test_verify(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seam = Seam(monkeypatch, "kvscale.core.verify.run", "verify_target")
    acts = tmp_path / "a.safetensors"
    args, _ = seam.run(
        "verify", EXAMPLE, *ENGINE_FLAGS, "--gpu", "--activations", acts, "--tokens", "77",
        "--seed", "5", "--revision", "r1",
    )  # fmt: skip
    target, options = args[0], args[1]
    assert target == str(EXAMPLE)
    _same_options(options.engine, ENGINE)
    assert (options.gpu, options.activations, options.tokens, options.seed, options.revision) == (
        True,
        acts,
        77,
        5,
        "r1",
    )
    assert options.model is None


def test_verify_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    seam = Seam(monkeypatch, "kvscale.core.verify.run", "verify_target")
    data, model, saved = tmp_path / "d.jsonl", tmp_path / "m", tmp_path / "kv.safetensors"
    args, _ = seam.run(
        "verify", EXAMPLE, "--model", model, "--data", data, "--samples", "3", "--seq-len", "64",
        "--max-ppl-increase", "0.02", "--max-kl", "0.5", "--activations-out", saved,
    )  # fmt: skip
    m = args[1].model
    assert (m.data, m.model, m.samples, m.seq_len, m.max_ppl_increase, m.max_kl) == (
        data,
        model,
        3,
        64,
        0.02,
        0.5,
    )
    assert m.activations_out == saved


@pytest.mark.parametrize("flag", ["--model", "--max-kl", "--max-ppl-increase", "--activations-out"])
def test_verify_model_flags_need_data(flag: str) -> None:
    value = "0.1" if flag.startswith("--max") else "x"
    result = runner.invoke(app, ["verify", str(EXAMPLE), flag, value])
    assert result.exit_code == 2 and f"{flag} needs --data" in result.stderr


def test_plan(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    seam = Seam(monkeypatch, "kvscale.core.plan", "plan_model")
    data, model, out = tmp_path / "d.jsonl", tmp_path / "m", tmp_path / "serve"
    args, _ = seam.run(
        "plan", model, "--data", data, "--max-ppl-increase", "0.02",
        "--candidates", "fp8:calibrated,int8_per_token_head", "--candidates", "nvfp4:calibrated",
        "--gpu-memory", "2GiB", "--samples", "3", "--seq-len", "16", "--device", "cuda",
        "--out", out, "--force", "--engine", "sglang", "--platform", "fnuz",
        "--attention-backend", "triton", "--gpu-arch", "sm100",
    )  # fmt: skip
    got, options = args[0], args[1]
    assert got == model
    assert (options.data, options.max_kl, options.max_ppl_increase) == (data, None, 0.02)
    assert options.candidates == ("fp8:calibrated", "int8_per_token_head", "nvfp4:calibrated")
    assert (options.gpu_memory, options.samples, options.seq_len) == (2 << 30, 3, 16)
    assert (options.device, options.out, options.force) == ("cuda", out, True)
    _same_options(
        options.engine,
        EngineOptions(
            engine="sglang",  # type: ignore[arg-type]
            platform="fnuz",  # type: ignore[arg-type]
            attention_backend="triton",
            gpu_arch="sm100",
        ),
    )


def test_plan_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    seam = Seam(monkeypatch, "kvscale.core.plan", "plan_model")
    args, _ = seam.run("plan", tmp_path / "m", "--data", tmp_path / "d.jsonl")
    options = args[1]
    assert (options.max_kl, options.max_ppl_increase, options.candidates) == (None, None, None)
    assert (options.samples, options.seq_len, options.device) == (32, 1024, "cpu")
    assert (options.gpu_memory, options.out, options.force) == (None, None, False)
    _same_options(options.engine, EngineOptions())


def test_calibrate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    seam = Seam(monkeypatch, "kvscale.core.calibrate", "plan_calibration")
    args, _ = seam.run(
        "calibrate", tmp_path / "model", "--data", tmp_path / "d.txt", "--out", tmp_path / "o",
        "--samples", "7", "--seq-len", "33", "--batch-size", "2", "--device", "cpu",
        "--dtype", "float32", "--strategy", "head", "--headroom", "1.25", "--min-scale", "1e-6",
        "--holdout", "0.25", "--checkpoint", "--target", tmp_path / "t", "--force",
        "--kv-cache-dtype", "fp8", "--platform", "fnuz", "--model-dtype", "bfloat16",
    )  # fmt: skip
    model, data, out, options = args[:4]
    assert (Path(model), Path(data), Path(out)) == (
        tmp_path / "model",
        tmp_path / "d.txt",
        tmp_path / "o",
    )
    assert (
        options.samples, options.seq_len, options.batch_size, options.device, options.dtype,
        options.strategy, options.headroom, options.min_scale, options.holdout,
        options.checkpoint, options.target, options.force,
    ) == (7, 33, 2, "cpu", "float32", "head", 1.25, 1e-6, 0.25, True, tmp_path / "t", True)  # noqa: E501  # fmt: skip
    assert options.engine.chosen() == {
        "kv_cache_dtype": "fp8",
        "platform": "fnuz",
        "model_dtype": "bfloat16",
    }


def test_calibrate_target_needs_checkpoint(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    result = runner.invoke(
        app,
        ["calibrate", str(tmp_path), "--data", "d", "--out", "o", "--target", str(tmp_path)],
    )
    assert result.exit_code == 2 and "pass --checkpoint too" in result.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--json", "--quiet"], "--json and --quiet exclude each other"),
        (["--quiet", "--format", "csv"], "--quiet and --format exclude each other"),
        (["--json", "--format", "markdown"], "--json and --format exclude each other"),
    ],
)
@pytest.mark.parametrize("command", ["inspect", "diff", "verify"])
def test_output_flags_exclude_each_other(command: str, flags: list[str], message: str) -> None:
    args = [command, str(EXAMPLE)] + ([str(EXAMPLE)] if command == "diff" else [])
    result = runner.invoke(app, [*args, *flags])
    assert result.exit_code == 2 and message in result.stderr
