"""``--force`` replaces an output, nothing more; writing layers normalize cannot fix takes
``--unsafe-write-unfixed``, whose summary names them (issue 25: ``normalize examples/broken
--checkpoint --force`` exited 0 and wrote a checkpoint that inspect then failed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kvscale
from kvscale.cli import app
from kvscale.errors import RefusedError

ROOT = Path(__file__).resolve().parents[2]
BROKEN = str(ROOT / "examples/broken")
L0 = "model.layers.0.self_attn.attn"
WHY = (
    "v_scale would be 0.0 on ocp (from model.layers.0.self_attn.v_scale in model.safetensors); "
    "only positive finite scales can be written"
)


def _normalize(out: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, ["normalize", BROKEN, "--out", str(out), "--checkpoint", "--no-policy", *args]
    )
    return result.exit_code, result.stdout, result.stderr


def test_force_no_longer_writes_unfixed_layers(tmp_path: Path) -> None:
    code, out, err = _normalize(tmp_path / "out", "--force")
    assert code == 1
    assert not (tmp_path / "out").exists()
    assert err.splitlines()[-1] == (
        "kvscale: error: nothing written: 1 problem(s) normalization cannot fix "
        "(--unsafe-write-unfixed writes those layers as they are)"
    )
    assert out.splitlines()[-1] == (
        "nothing written: the problems above stop normalize (--unsafe-write-unfixed writes "
        "those layers as they are)"
    )


def test_unsafe_write_unfixed_names_every_layer_written_unfixed(tmp_path: Path) -> None:
    code, out, _ = _normalize(tmp_path / "out", "--unsafe-write-unfixed")
    assert code == 0
    assert out.splitlines()[-1] == (
        "UNSAFE (--unsafe-write-unfixed): 1 layer written unfixed, as the checkpoint had them "
        f"(the engine still refuses or misuses them): {L0} ({WHY})"
    )
    assert "│0 │         - │          - │ - │    - │ unfixed  │" in out
    inspected = kvscale.inspect(tmp_path / "out" / "checkpoint")
    assert "scale-zero" in {p.code for p in inspected.errors}  # what it was, unfixed


def test_unsafe_json_says_so(tmp_path: Path) -> None:
    code, out, _ = _normalize(tmp_path / "out", "--unsafe-write-unfixed", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["written"] is True and doc["unsafe_write_unfixed"] is True
    assert doc["layers"]["skipped"] == [{"name": L0, "reason": WHY}]


def test_force_still_replaces_an_output(tmp_path: Path) -> None:
    src = str(ROOT / "examples/llm-compressor-fp8")
    out = tmp_path / "out"
    for extra in ([], ["--force"]):
        result = CliRunner().invoke(app, ["normalize", src, "--out", str(out), *extra])
        assert result.exit_code == 0, result.output
    again = CliRunner().invoke(app, ["normalize", src, "--out", str(out)])
    assert again.exit_code == 2 and "pass --force to replace it" in again.stderr


def test_python_api_splits_them_too(tmp_path: Path) -> None:
    with pytest.raises(RefusedError, match="nothing written") as refused:
        kvscale.normalize(BROKEN, tmp_path / "a", checkpoint_copy=True, force=True)
    assert refused.value.hint is not None and "--unsafe-write-unfixed" in refused.value.hint
    result = kvscale.normalize(
        BROKEN, tmp_path / "b", checkpoint_copy=True, unsafe_write_unfixed=True
    )
    assert [layer.name for layer in result.plan.skipped_layers] == [L0]


@pytest.mark.parametrize("command", ["normalize", "calibrate"])
def test_force_help_says_only_replace(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    rows = [line.strip("│ ") for line in result.stdout.splitlines()]
    line = next(row for row in rows if row.startswith("--force "))
    assert "Replace an existing --out" in line and "normaliz" not in line
