"""Parity with vLLM 0.33.0's per-token-head cache writes (int8/fp8/int4_per_token_head).

tests/parity/vllm_per_token_head_expected.json holds what vLLM's own kernels wrote for every case
of per_token_head_cases.py, executed by vllm_per_token_head_oracle.py under Triton's interpreter.
Here kvscale's reference writes the same inputs into a cache prepared the way vLLM prepares it
(poison bytes, every scale cell 1.0) and must produce the same storage, byte for byte; the
rotation signs, the rotated int4 inputs and the cell size are compared on their own so that a
mismatch says where it comes from.

The read side: for the attention cases the golden file holds the output of vLLM's attention
kernel (``unified_attention``, and ``unified_attention_int4`` with its inverse rotation) over the
cache vLLM wrote; attention computed in float64 over kvscale's ``dequantize_per_token_head`` of
the same cache must match it to float32 rounding (2e-5 of the output's magnitude; the
quantization error itself is 1e-2 to 5e-2 there, and reading int4 in the rotated space is off by
100%).

``test_golden_file_is_up_to_date`` re-runs the oracle when KVSCALE_VLLM_SRC points at an extracted
vLLM 0.33.0 tree (the directory holding ``vllm/``): about 20 s.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from support.modules import load_module

from kvscale.kernel import per_token_head as pth

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "vllm_per_token_head_expected.json"
ORACLE = HERE / "vllm_per_token_head_oracle.py"
VOLATILE_PROVENANCE = ("torch_version", "triton_version", "python_version", "device")


CASES = load_module("kvscale_parity_per_token_head_cases", HERE / "per_token_head_cases.py")
GOLDEN_DOC: dict[str, Any] = json.loads(GOLDEN.read_text())
NAMES = [c.name for c in CASES.CASES]


@functools.cache
def inputs(name: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    built: tuple[torch.Tensor, torch.Tensor, torch.Tensor] = CASES.build_inputs(
        CASES.CASES_BY_NAME[name]
    )
    return built


def _sha256(*tensors: torch.Tensor) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def vllm_like_cache(case: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(logical cache, its buffer) as the oracle allocates it, scales initialised to 1.0."""
    layout = pth.per_token_head_layout(case.kv_cache_dtype, case.num_kv_heads, case.head_size)
    dims = (case.blocks, case.num_kv_heads, case.block_size, layout.content_bytes)
    if case.physical == "NHD":
        dims = (dims[0], dims[2], dims[1], dims[3])
    dtype = pth.per_token_head_format(case.kv_cache_dtype).torch_storage_dtype
    buf = torch.full(dims, GOLDEN_DOC["provenance"]["poison_byte"], dtype=torch.uint8).view(dtype)
    cache = buf if case.physical == "HND" else buf.permute(0, 2, 1, 3)
    pth.init_per_token_head_cache(cache, case.kv_cache_dtype, case.head_size)
    return cache, buf


def test_golden_covers_the_catalogue() -> None:
    assert GOLDEN_DOC["schema"] == "kvscale.vllm-per-token-head/1"
    assert GOLDEN_DOC["provenance"]["vllm_version"] == "0.33.0"
    assert GOLDEN_DOC["provenance"]["interpreted"] is True
    assert list(GOLDEN_DOC["cases"]) == NAMES, (
        "golden file is stale: regenerate it with tests/parity/vllm_per_token_head_oracle.py"
    )
    for case in CASES.CASES:
        gold = GOLDEN_DOC["cases"][case.name]
        fields = ("kv_cache_dtype", "input_dtype", "num_tokens", "num_kv_heads", "head_size")
        assert [gold[f] for f in fields] == [getattr(case, f) for f in fields], case.name
        assert (gold["block_size"], gold["num_blocks"], gold["physical"]) == (
            case.block_size,
            case.blocks,
            case.physical,
        )
    # Every dtype, every input dtype, both physical orders and a non-power-of-two head size each.
    seen = {(c.kv_cache_dtype, c.input_dtype) for c in CASES.CASES}
    assert len(seen) == 9
    assert {c.physical for c in CASES.CASES} == {"HND", "NHD"}
    assert all(
        any(c.kv_cache_dtype == d and c.head_size & (c.head_size - 1) for c in CASES.CASES)
        for d in pth.PER_TOKEN_HEAD_KV_CACHE_DTYPES
    )


@pytest.mark.parametrize("name", NAMES)
def test_reference_writes_vllms_bytes(name: str) -> None:
    case = CASES.CASES_BY_NAME[name]
    gold = GOLDEN_DOC["cases"][name]
    key, value, slots = inputs(name)
    assert _sha256(key, value, slots) == gold["input_sha256"], "the case inputs changed"
    assert slots.tolist() == gold["slots"]
    cache, buf = vllm_like_cache(case)
    pth.reference_reshape_and_cache_per_token_head(key, value, cache, slots, case.kv_cache_dtype)

    k_got, v_got = pth.read_per_token_head_cache(cache, slots, case.kv_cache_dtype, case.head_size)
    live = [s for s in gold["scales"]["k"] if s is not None]
    want_k = [[int(h, 16) for h in row] for row in live]
    want_v = [[int(h, 16) for h in row] for row in gold["scales"]["v"] if row is not None]
    assert (k_got.scales.view(torch.int32) & 0xFFFFFFFF).tolist() == want_k, "K scales"
    assert (v_got.scales.view(torch.int32) & 0xFFFFFFFF).tolist() == want_v, "V scales"
    cell = gold["first_cell"]
    blk, off = divmod(gold["slots"][cell["token"]], case.block_size)
    raw = cache.view(torch.uint8) if cache.dtype != torch.uint8 else cache
    assert raw[blk, cell["head"], off].numpy().tobytes().hex() == cell["bytes"]
    assert _sha256(buf) == gold["cache_sha256"], "bytes differ outside the first cell"


def test_cell_sizes_are_vllms() -> None:
    for case in CASES.CASES:
        layout = pth.per_token_head_layout(case.kv_cache_dtype, case.num_kv_heads, case.head_size)
        assert layout.content_bytes == GOLDEN_DOC["cases"][case.name]["content_bytes"], case.name


def test_rht_signs_are_vllms() -> None:
    signs = GOLDEN_DOC["rht_signs"]
    assert set(signs) == {"8", "32", "64", "128", "256"}
    for block, text in signs.items():
        mine = "".join("+" if s > 0 else "-" for s in pth.rht_signs(int(block)).tolist())
        assert mine == text, block


@pytest.mark.parametrize(
    "name", [c.name for c in CASES.CASES if c.kv_cache_dtype.startswith("int4")]
)
def test_int4_rotation_is_vllms(name: str) -> None:
    key, value, _ = inputs(name)
    rotated = [pth.random_hadamard_transform(t).to(t.dtype) for t in (key, value)]
    assert _sha256(*rotated) == GOLDEN_DOC["cases"][name]["rotated_sha256"]


def test_a_changed_byte_is_seen() -> None:
    """The comparison can fail: one flipped code bit in a written cell changes the digest."""
    case = CASES.CASES_BY_NAME["int8-fp32-h32-special"]
    key, value, slots = inputs(case.name)
    cache, buf = vllm_like_cache(case)
    pth.reference_reshape_and_cache_per_token_head(key, value, cache, slots, case.kv_cache_dtype)
    blk, off = divmod(int(slots[0]), case.block_size)
    cache[blk, 0, off, 3] ^= 1
    assert _sha256(buf) != GOLDEN_DOC["cases"][case.name]["cache_sha256"]


def attention(k: torch.Tensor, v: torch.Tensor, q: torch.Tensor, case: Any) -> torch.Tensor:
    out: torch.Tensor = CASES.causal_attention(k, v, q, case)
    return out


ATTENTION_NAMES = [c.name for c in CASES.ATTENTION_CASES]


def test_golden_covers_the_attention_cases() -> None:
    assert list(GOLDEN_DOC["attention"]) == ATTENTION_NAMES
    assert {c.kv_cache_dtype for c in CASES.ATTENTION_CASES} == set(
        pth.PER_TOKEN_HEAD_KV_CACHE_DTYPES
    )


@pytest.mark.parametrize("name", ATTENTION_NAMES)
def test_dequantize_is_what_vllms_attention_reads(name: str) -> None:
    case = CASES.ATTENTION_CASES_BY_NAME[name]
    gold = GOLDEN_DOC["attention"][name]
    key, value, query, slots, block_table = CASES.build_attention_inputs(case)
    assert _sha256(key, value, query, slots, block_table) == gold["input_sha256"]
    layout = pth.per_token_head_layout(case.kv_cache_dtype, case.num_kv_heads, case.head_size)
    dtype = pth.per_token_head_format(case.kv_cache_dtype).torch_storage_dtype
    cache = torch.zeros(layout.cache_shape(case.blocks, case.block_size), dtype=dtype)
    pth.reference_reshape_and_cache_per_token_head(key, value, cache, slots, case.kv_cache_dtype)
    k_q, v_q = pth.read_per_token_head_cache(cache, slots, case.kv_cache_dtype, case.head_size)
    ours = attention(
        pth.dequantize_per_token_head(k_q), pth.dequantize_per_token_head(v_q), query, case
    )
    bits = torch.tensor([int(h, 16) for h in gold["output"]], dtype=torch.int64)
    vllm = bits.to(torch.int32).view(torch.float32).reshape(ours.shape).double()
    scale = float(vllm.abs().max())
    assert float((ours - vllm).abs().max()) <= 2e-5 * scale
    # The tolerance is far below the quantization error, so a reference that skipped the
    # cache (or, for int4, read it in the rotated space) would fail.
    assert float((attention(key, value, query, case) - vllm).abs().max()) > 1e-3 * scale
    if case.kv_cache_dtype == pth.INT4_PER_TOKEN_HEAD:
        k_r = pth.dequantize_per_token_head(k_q, domain="rotated")
        v_r = pth.dequantize_per_token_head(v_q, domain="rotated")
        assert float((attention(k_r, v_r, query, case) - vllm).abs().max()) > 0.5 * scale


@pytest.mark.skipif(
    not os.environ.get("KVSCALE_VLLM_SRC"),
    reason="set KVSCALE_VLLM_SRC to an extracted vLLM 0.33.0 source tree to re-run the oracle",
)
def test_golden_file_is_up_to_date(tmp_path: Path) -> None:
    pytest.importorskip("triton", reason="the oracle runs vLLM's Triton kernels")
    out = tmp_path / "expected.json"
    cmd = [sys.executable, str(ORACLE), "--vllm-src", os.environ["KVSCALE_VLLM_SRC"]]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    subprocess.run([*cmd, "--out", str(out), "--quiet"], check=True, env=env, timeout=600)
    new = json.loads(out.read_text())
    old = json.loads(GOLDEN.read_text())
    for doc in (new, old):
        for key in VOLATILE_PROVENANCE:
            doc["provenance"].pop(key, None)
    assert new == old, "vLLM's kernels now write other bytes: regenerate and review the diff"
