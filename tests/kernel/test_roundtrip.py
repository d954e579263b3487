"""``mla_latent_roundtrip``: what vLLM's MLA cache gives back for ``[kv_c | k_pe]`` rows equals the
plain formula ``fp8(clamp(f32(x) / k, +-448)) * k`` (the CPU statement of ``concat_and_cache_mla``
plus the readers' descale), with ``skip_scale`` exactly at 1.0 as vLLM passes it.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from kvscale.kernel import mla  # noqa: E402
from kvscale.kernel.roundtrip import mla_latent_roundtrip  # noqa: E402


def formula(rows: torch.Tensor, scale: float) -> torch.Tensor:
    s = torch.tensor(scale, dtype=torch.float32)
    q = (rows.float() / s).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return q.to(torch.float32) * s


def rows_of(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    # 37 tokens (more than two 16-slot blocks, the last one partly used), 32 + 16 wide; the
    # spread puts values in e4m3's subnormals, normals and past its max at scale 0.01.
    x = torch.randn((37, 48), generator=g) * torch.logspace(-4, 1, 48)
    return x.to(torch.bfloat16)


@pytest.mark.parametrize("scale", [0.01, 1.0, 0.0072265625])
def test_latent_roundtrip_is_the_formula(scale: float) -> None:
    rows = rows_of(3)
    got = mla_latent_roundtrip(torch.tensor([scale]), "fp8", 32)(rows)
    assert got.dtype == torch.float32 and got.shape == (37, 48)
    assert torch.equal(got, formula(rows, scale))
    if scale == 0.01:
        assert bool((rows.float().abs() > 464 * 0.01).any())  # saturation is exercised


def test_skip_scale_is_passed_exactly_at_one(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []

    def spy(*args: object) -> None:
        calls.append(bool(args[-1]))
        mla.reference_concat_and_cache_mla(*args)  # type: ignore[arg-type]

    rows = rows_of(5)
    for scale in (1.0, 0.5, float(torch.nextafter(torch.tensor(1.0), torch.tensor(2.0)))):
        mla_latent_roundtrip(torch.tensor([scale]), "fp8_e4m3", 32, spy)(rows)
    assert calls == [True, False, False]


def test_latent_roundtrip_refuses_per_head_scales() -> None:
    with pytest.raises(ValueError, match="an MLA cache row has one scale, got 2"):
        mla_latent_roundtrip(torch.tensor([1.0, 2.0]), "fp8", 32)


def test_latent_roundtrip_through_the_triton_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify --gpu hands the Triton kernel to the round trip: kv_c and k_pe arrive as column
    slices of the rows (row stride 48). In Triton's interpreter, on values whose quotient is
    exact in e4m3 (the interpreter's own fp8 cast rounds otherwise)."""
    pytest.importorskip("triton", reason="Triton is not installed")
    from kvscale.kernel import triton_mla

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(triton_mla, "_config_override", None)
    g = torch.Generator().manual_seed(11)
    values = torch.tensor([0.0, 1.0, -1.5, 2.0, -3.0, 6.0, -0.25, 12.0, 0.75])
    rows = values[torch.randint(0, len(values), (21, 48), generator=g)].to(torch.bfloat16) * 0.25
    for scale in (0.25, 1.0):
        write = triton_mla.concat_and_cache_mla
        got = mla_latent_roundtrip(torch.tensor([scale]), "fp8", 32, write)(rows)
        assert torch.equal(got, rows.float())
        assert torch.equal(got, formula(rows, scale))
