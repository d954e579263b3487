"""The Triton cache-write kernel on a CUDA GPU: every cache byte equal to the CPU reference.

Runs only with Triton, CUDA and native FP8 conversion (compute capability 8.9+); skipped
otherwise. Caches are poisoned with random bytes before each write and compared whole (their
entire storage), so bytes of padding slots, of padded strides and of the other half of a fused
kv tensor must stay untouched.
"""

from __future__ import annotations

import pytest
import torch

from kvscale.kernel import (
    UnsupportedOnDeviceError,
    make_stress_values,
    reference_reshape_and_cache_flash,
    resolve_kv_cache_dtype,
)


def _skip_reason() -> str | None:
    try:
        import triton  # noqa: F401
    except ImportError:
        return "Triton is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    if torch.cuda.get_device_capability() < (8, 9):
        return "the GPU has no native FP8 conversion (needs compute capability 8.9+)"
    return None


_REASON = _skip_reason()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_REASON is not None, reason=_REASON or ""),
]

DTYPES = [torch.bfloat16, torch.float16, torch.float32]


def _storage(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def _to_cuda(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each distinct storage copied to the GPU once, every view rebuilt on it (same strides and
    offsets), so views sharing a storage (kv_cache[:, 0] / [:, 1]) still share it there."""
    copies: dict[int, torch.Tensor] = {}
    out = []
    for t in tensors:
        st = t.untyped_storage()
        if st.data_ptr() not in copies:
            copies[st.data_ptr()] = torch.empty(0, dtype=torch.uint8).set_(st).cuda()
        out.append(
            copies[st.data_ptr()].view(t.dtype).as_strided(t.shape, t.stride(), t.storage_offset())
        )
    return out


def _layout(name: str, tokens: int, heads: int, head: int, bs: int, dtype, cache_dtype):
    blocks = (tokens + bs - 1) // bs + 2
    if name == "contig":
        key = torch.empty(tokens, heads, head, dtype=dtype)
        value = torch.empty(tokens, heads, head, dtype=dtype)
        kc = torch.empty(blocks, bs, heads, head, dtype=cache_dtype)
        vc = torch.empty(blocks, bs, heads, head, dtype=cache_dtype)
    elif name == "fused":
        qkv = torch.empty(tokens, 6 * heads * head, dtype=dtype)
        key = qkv[:, 4 * heads * head : 5 * heads * head].view(tokens, heads, head)
        value = qkv[:, 5 * heads * head :].view(tokens, heads, head)
        kv = torch.empty(blocks, 2, bs, heads, head, dtype=cache_dtype)
        kc, vc = kv[:, 0], kv[:, 1]
    else:
        key = torch.empty(tokens, heads, head + 16, dtype=dtype)[..., :head]
        value = torch.empty(tokens, heads + 1, head, dtype=dtype)[:, 1:]
        kc = torch.empty(blocks, bs, heads, head + 32, dtype=cache_dtype)[..., :head]
        vc = torch.empty(blocks + 1, bs, heads, head, dtype=cache_dtype)[1:]
    return key, value, kc, vc, blocks * bs


def _check(
    kv_cache_dtype: str,
    dtype: torch.dtype,
    k_scale: list[float],
    v_scale: list[float],
    layout: str = "contig",
    tokens: int = 600,
    n: int = 560,
    heads: int = 8,
    head: int = 128,
    bs: int = 16,
    kinds: tuple[str, ...] = ("random", "heavy", "adversarial"),
    seed: int = 0,
) -> None:
    from kvscale.kernel import reshape_and_cache_flash

    kv = resolve_kv_cache_dtype(kv_cache_dtype)
    fmt = kv.fp8 or resolve_kv_cache_dtype("fp8").fp8
    assert fmt is not None
    cache_dtype = torch.uint8 if kv.quantized else dtype
    for i, kind in enumerate(kinds):
        g = torch.Generator().manual_seed(seed * 31 + i)
        key, value, kc, vc, num_slots = _layout(layout, tokens, heads, head, bs, dtype, cache_dtype)
        ks = torch.tensor(k_scale, dtype=torch.float32)
        vs = torch.tensor(v_scale, dtype=torch.float32)
        shape = (tokens, heads, head)
        key.copy_(make_stress_values(shape, kind=kind, dtype=dtype, scale=ks, fmt=fmt, generator=g))
        value.copy_(
            make_stress_values(shape, kind=kind, dtype=dtype, scale=vs, fmt=fmt, generator=g)
        )
        for c in (kc, vc):
            _storage(c).copy_(
                torch.randint(0, 256, (_storage(c).numel(),), generator=g, dtype=torch.uint8)
            )
        slots = torch.randperm(num_slots, generator=g)[:n]
        slots[torch.rand(n, generator=g) < 0.1] = -1
        gk, gv, gkc, gvc = _to_cuda([key, value, kc, vc])
        reshape_and_cache_flash(
            gk, gv, gkc, gvc, slots.cuda(), kv_cache_dtype, ks.cuda(), vs.cuda()
        )
        reference_reshape_and_cache_flash(key, value, kc, vc, slots, kv_cache_dtype, ks, vs)
        for got, want in ((gkc, kc), (gvc, vc)):
            diff = _storage(got).cpu() != _storage(want)
            assert int(diff.sum()) == 0, (
                f"{int(diff.sum())} mismatched bytes ({kv_cache_dtype}, {dtype}, {layout}, {kind}, "
                f"first at byte {diff.nonzero()[:3].flatten().tolist()})"
            )


MIXED = [0.0173, 2.0, 0.5, 3.7, 1e-3, 128.0, 0.0625, 7.0]
EXTREME = [0.5, 1e-12, 0.0, -1.5, float("inf"), 1e12, float("nan"), 0.25]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kv_cache_dtype", ["fp8", "fp8_e5m2"])
@pytest.mark.parametrize(
    "scales",
    [([0.5], [0.0173]), ([-2.0], [3.0]), (MIXED, MIXED), (EXTREME, [0.0])],
    ids=["tensor", "negative", "per-head", "extreme"],
)
def test_bit_exact(kv_cache_dtype: str, dtype: torch.dtype, scales: tuple) -> None:
    _check(kv_cache_dtype, dtype, scales[0], scales[1])


@pytest.mark.parametrize("layout", ["fused", "padded"])
@pytest.mark.parametrize("kv_cache_dtype", ["fp8", "fp8_e5m2"])
def test_bit_exact_strided(layout: str, kv_cache_dtype: str) -> None:
    heads, head = (8, 128) if layout == "fused" else (6, 80)
    _check(
        kv_cache_dtype,
        torch.bfloat16,
        [0.25],
        MIXED[:heads],
        layout=layout,
        heads=heads,
        head=head,
        bs=32,
    )


@pytest.mark.parametrize("tokens,n", [(7, 3), (1, 1), (3000, 2900)])
def test_bit_exact_batch_sizes(tokens: int, n: int) -> None:
    _check("fp8", torch.bfloat16, [0.0173], MIXED, tokens=tokens, n=n, kinds=("adversarial",))


@pytest.mark.parametrize(
    "kv_cache_dtype,dtype",
    [("auto", torch.bfloat16), ("float16", torch.float16), ("float32", torch.float32)],
)
def test_plain_copy(kv_cache_dtype: str, dtype: torch.dtype) -> None:
    _check(kv_cache_dtype, dtype, [float("nan")], [1.0], layout="fused", kinds=("adversarial",))


def test_float8_typed_cache() -> None:
    from kvscale.kernel import reshape_and_cache_flash

    key = torch.randn(64, 2, 64, device="cuda", dtype=torch.bfloat16) * 100
    kc = torch.zeros(8, 16, 2, 64, device="cuda", dtype=torch.float8_e4m3fn)
    vc = torch.zeros_like(kc)
    ref_k = torch.zeros(8, 16, 2, 64, dtype=torch.uint8)
    ref_v = torch.zeros_like(ref_k)
    slots = torch.randperm(128)[:64]
    one = torch.tensor([0.7])
    reshape_and_cache_flash(key, key, kc, vc, slots.cuda(), "fp8", one.cuda(), one.cuda())
    reference_reshape_and_cache_flash(key.cpu(), key.cpu(), ref_k, ref_v, slots, "fp8", one, one)
    assert torch.equal(kc.view(torch.uint8).cpu(), ref_k)


def test_fnuz_raises() -> None:
    from kvscale.kernel import reshape_and_cache_flash

    key = torch.ones(4, 1, 16, device="cuda", dtype=torch.bfloat16)
    kc = torch.zeros(2, 4, 1, 16, device="cuda", dtype=torch.uint8)
    one = torch.ones(1, device="cuda")
    with pytest.raises(UnsupportedOnDeviceError, match="an NVIDIA GPU cannot write e4m3fnuz"):
        reshape_and_cache_flash(
            key, key, kc, kc.clone(), torch.arange(4, device="cuda"), "fp8_e4m3fnuz", one, one
        )


def test_runs_on_a_side_stream() -> None:
    from kvscale.kernel import reshape_and_cache_flash

    key = torch.randn(256, 8, 128, device="cuda", dtype=torch.bfloat16)
    kc = torch.zeros(16, 16, 8, 128, device="cuda", dtype=torch.uint8)
    vc = torch.zeros_like(kc)
    ref_k = torch.zeros(16, 16, 8, 128, dtype=torch.uint8)
    ref_v = torch.zeros_like(ref_k)
    slots = torch.arange(256)
    one = torch.tensor([0.01])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        reshape_and_cache_flash(key, key, kc, vc, slots.cuda(), "fp8", one.cuda(), one.cuda())
    torch.cuda.current_stream().wait_stream(side)
    reference_reshape_and_cache_flash(key.cpu(), key.cpu(), ref_k, ref_v, slots, "fp8", one, one)
    assert torch.equal(kc.cpu(), ref_k)
