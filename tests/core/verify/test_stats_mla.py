"""``run_latent_layer`` and ``latent_activations``: one MLA layer's rows through vLLM's
``concat_and_cache_mla`` with the k scale, measured as one kind; the kernel (here in Triton's
interpreter) compared byte for byte with the reference, padding rows included.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from kvscale.core.verify.stats import latent_activations, run_latent_layer  # noqa: E402
from kvscale.core.verify.target import LayerScales  # noqa: E402
from kvscale.errors import InputError  # noqa: E402
from kvscale.kernel.formats import E4M3FN  # noqa: E402

NAME = "model.layers.0.self_attn.attn"


def layer(k: float, v: float = 0.5) -> LayerScales:
    return LayerScales(NAME, k, v, (k,), (v,))


def exact_rows(tokens: int, seed: int) -> torch.Tensor:
    """Values whose quotient by 0.25 and 1.0 is exact in e4m3 (the interpreter's fp8 cast is
    not the GPU's on anything else)."""
    g = torch.Generator().manual_seed(seed)
    values = torch.tensor([1.0, -1.5, 2.0, -3.0, 6.0, -0.25, 12.0, 0.75])
    return values[torch.randint(0, len(values), (tokens, 48), generator=g)] * 0.25


@pytest.mark.parametrize("k", [0.25, 1.0])
def test_kernel_bytes_equal_the_reference_and_the_row_is_exact(
    monkeypatch: pytest.MonkeyPatch, k: float
) -> None:
    pytest.importorskip("triton", reason="Triton is not installed")
    from kvscale.kernel import triton_mla

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(triton_mla, "_config_override", None)
    rows = exact_rows(200, 1).to(torch.bfloat16)
    stats = run_latent_layer(
        layer(k), rows, "model", 32, "fp8", E4M3FN, torch.device("cpu"),
        triton_mla.concat_and_cache_mla, torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert stats.mismatched_bytes == 0
    assert (stats.saturated, stats.underflow, stats.rel_rms_error) == (0.0, 0.0, 0.0)
    assert (stats.scale, stats.absmax, stats.data, stats.failures) == (k, 3.0, "model", ())


def test_a_scale_too_small_saturates_every_value() -> None:
    rows = (exact_rows(64, 2) * 1000).to(torch.float32)  # |x| >= 62.5: past 464 x 0.01
    stats = run_latent_layer(
        layer(0.01), rows, "activations", 32, "fp8", E4M3FN, torch.device("cpu"), None,
        torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert stats.saturated == 1.0 and stats.mismatched_bytes is None
    assert "too small for this data" in stats.failures[0]


def test_per_head_k_scales_are_refused_for_a_latent_row() -> None:
    with pytest.raises(InputError, match="MLA layer .one latent row, one k scale., but holds 2"):
        run_latent_layer(
            LayerScales(NAME, 1.0, 1.0, (1.0, 2.0), (1.0,)), exact_rows(4, 3), "model", 32,
            "fp8", E4M3FN, torch.device("cpu"), None, torch.Generator(),
        )  # fmt: skip


def test_latent_activations_join_the_halves_and_check_them() -> None:
    kv_c, k_pe = torch.randn(5, 32), torch.randn(5, 16)
    rows, rank = latent_activations({f"{NAME}.kv_c": kv_c, f"{NAME}.k_pe": k_pe}, NAME, None)
    assert rank == 32 and torch.equal(rows, torch.cat([kv_c, k_pe], dim=1))
    assert latent_activations({}, NAME, None) is None
    with pytest.raises(InputError, match=f"holds {NAME}.kv_c but no {NAME}.k_pe"):
        latent_activations({f"{NAME}.kv_c": kv_c}, NAME, None)
    with pytest.raises(InputError, match="the halves of one row share tokens and dtype"):
        latent_activations({f"{NAME}.kv_c": kv_c, f"{NAME}.k_pe": k_pe[:4]}, NAME, None)
    with pytest.raises(InputError, match=r"must be \[tokens, width\]"):
        latent_activations({f"{NAME}.kv_c": kv_c[None], f"{NAME}.k_pe": k_pe}, NAME, None)
