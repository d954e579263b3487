"""The inputs of the per-token-head parity cases (plain data and torch, no vLLM, no kvscale).

``vllm_per_token_head_oracle.py`` runs vLLM's kernels on them and records the bytes;
``test_vllm_per_token_head.py`` rebuilds the same inputs and runs kvscale's reference. Values come
from a splitmix64 stream in integer arithmetic, so they do not depend on torch's random number
generators; the golden file pins the sha256 of every input anyway.

Loaded by file path (like ``cases.py``), never as a package.

Why some inputs are filtered: Triton's interpreter stores fp8 with its own float conversion
(``triton/runtime/interpreter.py`` ``_convert_float``), not the GPU's round-to-nearest-even:
a value exactly halfway between two e4m3 codes rounds away from zero, a value whose 3-bit
mantissa rounds up past 1.875 x 2^e is written as 2^e when e + 7 is odd (the carry is OR-ed
into the exponent), and results below 2^-6 (e4m3 subnormals) are truncated. The fp8 cases keep
every stored quotient away from those three zones (``fp8_interpreter_safe``), so the bytes the
interpreter writes are the GPU's; the oracle re-checks each conversion it performs. Ties,
subnormals and the carry zone are covered by hand-computed tests (tests/kernel) and by the GPU
check (benchmarks/gpu_per_token_head_check.py). bf16 subnormal inputs are avoided for the same
reason (the interpreter widens bf16 with the same routine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
RHT_SEED = 0x9E3779B9  # vLLM's _get_rht_signs, round 0 (checked by the oracle against vLLM)
FP8_MAX = 448.0


@dataclass(frozen=True)
class Case:
    name: str
    kv_cache_dtype: str
    input_dtype: str
    num_tokens: int
    num_kv_heads: int
    head_size: int
    kind: str
    block_size: int = 16
    num_blocks: int = 0  # 0: just enough for the tokens plus one spare block
    physical: str = "HND"  # memory order of the [blocks, heads, slots, content] cache
    padding: tuple[int, ...] = ()  # tokens whose slot is -1
    description: str = ""
    seed: int = field(default=0)

    @property
    def blocks(self) -> int:
        return self.num_blocks or (self.num_tokens + self.block_size - 1) // self.block_size + 1


class SplitMix64:
    """A small deterministic stream of 64-bit integers (Steele, Lea, Flood 2014)."""

    def __init__(self, seed: int) -> None:
        self.state = seed & (2**64 - 1)

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & (2**64 - 1)
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
        return z ^ (z >> 31)

    def uniform(self) -> float:
        return (self.next() >> 11) * 2.0**-53

    def below(self, n: int) -> int:
        return self.next() % n


# --- value kinds ---------------------------------------------------------------------------------


def _gauss_row(rng: SplitMix64, n: int, magnitude: float, outlier: int) -> list[float]:
    # The sum of three 21-bit uniforms from one draw, centred: roughly normal, unit variance / 2.
    row = []
    for _ in range(n):
        z = rng.next()
        u = (z & 0x1FFFFF) + ((z >> 21) & 0x1FFFFF) + ((z >> 42) & 0x1FFFFF)
        row.append((u * 2.0**-21 - 1.5) * 2 * magnitude)
    row[outlier] *= 6.0
    return row


def gauss(case: Case, rng: SplitMix64) -> list[list[list[float]]]:
    """Roughly normal values, a different magnitude per head, one outlier dim per vector."""
    return [
        [
            _gauss_row(rng, case.head_size, 2.0 ** ((h % 4) - 2), (7 * t + 3 * h) % case.head_size)
            for h in range(case.num_kv_heads)
        ]
        for t in range(case.num_tokens)
    ]


def _pad(row: list[float], n: int, filler: float = 1.0) -> list[float]:
    return (row + [filler] * n)[:n]


def int8_special(case: Case, rng: SplitMix64) -> list[list[list[float]]]:
    """Rows for int8 rounding: ties at scale 1 and 2, zeros, -0.0, the 1e-6 floor, its edge, a
    one-hot row, huge values, values that reach +-127 exactly."""
    n = case.head_size
    rows = [
        # absmax 127: s == 1, every .5 is a tie, rounded away from zero.
        _pad([127.0, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 126.5, -126.5, 3.25, -3.75, 64.5], n, 0.5),
        # absmax 254: s == 2, x = 5 -> 2.5 -> 3.
        _pad([254.0, 5.0, -5.0, 1.0, -1.0, 3.0, -3.0, 253.0, -253.0, 7.0, -7.0, 0.5], n, -1.0),
        [0.0] * n,
        [-0.0] * n,
        # absmax 1e-4 < 127e-6: s is the floor, y = x * 1e6.
        _pad([1e-4, -1e-4, 5e-5, -2.5e-5, 1.5e-6, 7.5e-7, 0.0, -0.0], n, 3e-5),
        # absmax 127e-6, the floor's edge.
        _pad([127e-6, -127e-6, 63.5e-6, 1e-6, -0.5e-6], n, 2e-6),
        [0.0] * (n - 1) + [-3.0],  # one-hot
        _pad([1e30, -1e30, 5e29, 1e28], n, -2e29),
        _pad([-1.0, 1.0, -0.25, 0.75, 0.125], n, -0.5),  # absmax reached by -1 and +1
    ]
    if case.input_dtype == "float16":
        rows[7] = _pad([6e4, -6e4, 3e4, 1e4], n, -2e4)  # fp16 max is 65504
        rows[4] = _pad([2.0**-14, -(2.0**-20), 2.0**-24, 3 * 2.0**-24, -(2.0**-17)], n, 2.0**-18)
    if case.input_dtype == "bfloat16":
        rows[7] = _pad([1e38, -1e38, 5e37, 1e36], n, -2e37)
    return _tile(case, rows)


def _tile(case: Case, rows: list[list[float]]) -> list[list[list[float]]]:
    out: list[list[list[float]]] = []
    i = 0
    for _ in range(case.num_tokens):
        out.append([])
        for _ in range(case.num_kv_heads):
            out[-1].append(rows[i % len(rows)])
            i += 1
    return out


def fp8_quotients(row: list[float], dtype: torch.dtype) -> list[float]:
    """The float32 quotients the fp8 write stores for one vector: ``x * (1 / max(absmax / 448,
    1e-6))``, one rounding per operation (what the kernel computes, used only to choose inputs)."""
    x = torch.tensor(row, dtype=torch.float64).to(dtype).to(torch.float32)
    absmax = x.abs().max()
    scale = torch.maximum(absmax / torch.tensor(FP8_MAX), torch.tensor(1e-6, dtype=torch.float32))
    inv = torch.tensor(1.0, dtype=torch.float32) / scale
    return (x * inv).tolist()


def fp8_interpreter_safe(y: float) -> bool:
    """Whether the interpreter's float32 -> e4m3 conversion stores ``y`` (clamped to +-448 first,
    as the kernel does) as the GPU does: zero, or a normal e4m3 magnitude (>= 2^-6) that is not
    a tie and does not round up into the next power of two."""
    if math.isnan(y):
        return False
    a = min(abs(y), FP8_MAX)
    if a == 0.0:
        return True
    if a < 2.0**-6:
        return False
    e = math.floor(math.log2(a))
    r = a / 2.0**e * 8  # in [8, 16): the 3 mantissa bits and the rest
    frac = r - math.floor(r)
    return frac != 0.5 and not (math.floor(r) == 15 and frac > 0.5)


def _fp8_safe_row(rng: SplitMix64, n: int, dtype: torch.dtype, absmax: float) -> list[float]:
    """absmax first, then values below it (log-uniform over 12 octaves, either sign), each
    redrawn until its quotient is interpreter-safe; absmax stays the vector's absmax, so the
    scale is fixed by the first element."""
    row = [absmax] + [0.0] * (n - 1)
    todo = list(range(1, n))
    while todo:
        for i in todo:
            magnitude = absmax * 2.0 ** (-12 * rng.uniform()) * rng.uniform()
            row[i] = magnitude if rng.below(2) else -magnitude
        quotients = fp8_quotients(row, dtype)
        todo = [i for i in todo if not fp8_interpreter_safe(quotients[i])]
    assert all(fp8_interpreter_safe(y) for y in fp8_quotients(row, dtype))
    return row


def fp8_pow2(case: Case, rng: SplitMix64) -> list[list[list[float]]]:
    """absmax = 448 x 2^k per vector, so the scale and its reciprocal are exact and every quotient
    is the input times 2^-k; quotients kept interpreter-safe."""
    dtype = DTYPES[case.input_dtype]
    return [
        [
            _fp8_safe_row(rng, case.head_size, dtype, FP8_MAX * 2.0 ** ((3 * t + h) % 9 - 6))
            for h in range(case.num_kv_heads)
        ]
        for t in range(case.num_tokens)
    ]


def fp8_generic(case: Case, rng: SplitMix64) -> list[list[list[float]]]:
    """Arbitrary absmax per vector (the scale and its reciprocal round), quotients kept safe."""
    dtype = DTYPES[case.input_dtype]
    out = []
    for _t in range(case.num_tokens):
        heads = []
        for _h in range(case.num_kv_heads):
            absmax = float(torch.tensor(0.05 + 40 * rng.uniform()).to(dtype))
            heads.append(_fp8_safe_row(rng, case.head_size, dtype, absmax))
        out.append(heads)
    return out


def fp8_special(case: Case, rng: SplitMix64) -> list[list[list[float]]]:
    """Zeros, -0.0 (stored as 0x80), the 1e-6 floor (y = x * 1e6), a one-hot row, and a vector
    whose absmax quotient rounds above 448 and is clamped back to it."""
    n = case.head_size
    dtype = DTYPES[case.input_dtype]
    over = next(
        a
        for a in (float(torch.tensor(1 + i / 1024).to(dtype)) for i in range(1, 4096))
        if fp8_quotients([a], dtype)[0] > FP8_MAX
    )
    rows = [
        [0.0] * n,
        [-0.0] * n,
        _pad([3e-4, -3e-4, 1.1e-4, -2.3e-4, 5.5e-5, 0.0, -0.0, 2.1e-4], n, 1.5e-4),
        [0.0] * (n - 1) + [-7.0],
        _pad([over, -over, over / 2, 0.75, -0.375], n, 0.25),
    ]
    for row in rows:
        ys = fp8_quotients(row, dtype)
        assert all(fp8_interpreter_safe(y) for y in ys), row
    return _tile(case, rows)


# --- int4: inputs whose rotation is known exactly ----------------------------------------------


def _sylvester(b: int) -> torch.Tensor:
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < b:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h


def rht_signs(b: int) -> torch.Tensor:
    """The +-1 signs vLLM draws for block b (same definition as ``_get_rht_signs``)."""
    gen = torch.Generator(device="cpu")
    gen.manual_seed(RHT_SEED)
    return (2.0 * torch.bernoulli(torch.full((b,), 0.5), generator=gen) - 1.0).double()


def unrotate(r: list[float]) -> list[float]:
    """x with ``H (D x) == r`` for a power-of-two length: ``x = D H r / b`` (exact for dyadic r)."""
    b = len(r)
    x = rht_signs(b) * (_sylvester(b) @ torch.tensor(r, dtype=torch.float64)) / b
    return x.tolist()


INT4_DESIGNED_ROWS: list[list[float]] = [
    # min -5, max 10: s == 1, zp == 5; every .5 is a tie (q = r + 5 rounded away from zero).
    [-5.0, 10.0, 0.5, -2.5, 2.5, -0.5, 1.5, 3.5, -4.5, 9.5, 0.0, 7.0],
    # min -2.5, max 12.5: s == 1, zp = round(2.5) == 3.
    [-2.5, 12.5, 0.5, 1.0, -1.5, 11.5, 0.0, 6.0],
    # all positive: zp clamps to 0, the largest codes clamp to 15.
    [1.0, 8.0, 2.0, 3.0, 7.5, 4.0, 5.0, 6.0],
    # all negative: zp clamps to 15, the smallest codes clamp to 0.
    [-1.0, -8.0, -2.0, -3.0, -7.5, -4.0, -5.0, -6.0],
    # all equal: range 0, the 1e-6 floor; zp clamps to 0 and every code to 15.
    [0.75] * 8,
    [0.0] * 8,
    # s = 0.1 (rounded): the zero point replaces scale bits that are not zero.
    [-0.5, 1.0, 0.25, -0.125, 0.375, 0.0, 0.5, -0.25],
]


def int4_designed(case: Case, rng: SplitMix64) -> list[list[list[float]]]:
    """Vectors whose rotation is one of ``INT4_DESIGNED_ROWS`` (each repeated to fill a block;
    head_size must be a power of two)."""
    b = case.head_size
    assert b & (b - 1) == 0
    rows = [unrotate((r * b)[:b]) for r in INT4_DESIGNED_ROWS]
    return _tile(case, rows)


KINDS = {
    "gauss": gauss,
    "int8-special": int8_special,
    "fp8-pow2": fp8_pow2,
    "fp8-generic": fp8_generic,
    "fp8-special": fp8_special,
    "int4-designed": int4_designed,
}


def build_inputs(case: Case) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(key, value, slot_mapping) of a case: key/value ``[tokens, heads, head_size]`` in the
    input dtype, slot_mapping int64 ``[tokens]`` (distinct slots, -1 for padding tokens)."""
    rng = SplitMix64(hash_name(case.name) ^ case.seed)
    kind = KINDS[case.kind]
    dtype = DTYPES[case.input_dtype]
    key = torch.tensor(kind(case, rng), dtype=torch.float64).to(dtype)
    value = torch.tensor(kind(case, rng), dtype=torch.float64).to(dtype)
    num_slots = case.blocks * case.block_size
    order = list(range(num_slots))
    for i in range(num_slots - 1, 0, -1):  # Fisher-Yates with the stream
        j = rng.below(i + 1)
        order[i], order[j] = order[j], order[i]
    slots = [order[t] if t not in case.padding else -1 for t in range(case.num_tokens)]
    return key, value, torch.tensor(slots, dtype=torch.int64)


def hash_name(name: str) -> int:
    h = 0xCBF29CE484222325  # FNV-1a, 64 bit
    for ch in name.encode():
        h = ((h ^ ch) * 0x100000001B3) & (2**64 - 1)
    return h


CASES: list[Case] = [
    Case("int8-bf16-h128-gauss", "int8_per_token_head", "bfloat16", 24, 4, 128, "gauss",
         physical="NHD", padding=(5, 17), description="Llama-like head, NHD cache, 2 padding"),
    Case("int8-fp16-h80-gauss", "int8_per_token_head", "float16", 12, 2, 80, "gauss",
         description="non-power-of-two head size (masked lanes)"),
    Case("int8-fp32-h36-gauss", "int8_per_token_head", "float32", 9, 3, 36, "gauss",
         block_size=32, description="head size 36 (multiple of 4, not of 8), block size 32"),
    Case("int8-fp32-h32-special", "int8_per_token_head", "float32", 9, 2, 32, "int8-special",
         description="ties at s=1 and s=2, zeros, -0.0, the 1e-6 floor and its edge, one-hot, "
         "1e30, absmax of both signs"),
    Case("int8-bf16-h64-special", "int8_per_token_head", "bfloat16", 9, 1, 64, "int8-special",
         physical="NHD", description="the special rows in bf16"),
    Case("int8-fp16-h48-special", "int8_per_token_head", "float16", 9, 1, 48, "int8-special",
         description="the special rows in fp16, floor row of fp16 subnormals"),
    Case("fp8-bf16-h128-pow2", "fp8_per_token_head", "bfloat16", 16, 4, 128, "fp8-pow2",
         physical="NHD", padding=(3,), description="power-of-two scales, exact quotients"),
    Case("fp8-fp16-h96-generic", "fp8_per_token_head", "float16", 10, 2, 96, "fp8-generic",
         description="rounded scales and reciprocals, non-power-of-two head size"),
    Case("fp8-fp32-h64-generic", "fp8_per_token_head", "float32", 8, 2, 64, "fp8-generic",
         block_size=32),
    Case("fp8-fp32-h32-special", "fp8_per_token_head", "float32", 5, 2, 32, "fp8-special",
         description="zeros, -0.0, the floor, one-hot, a quotient clamped to 448"),
    Case("fp8-bf16-h48-special", "fp8_per_token_head", "bfloat16", 5, 1, 48, "fp8-special",
         physical="NHD"),
    Case("int4-bf16-h128-gauss", "int4_per_token_head", "bfloat16", 20, 4, 128, "gauss",
         physical="NHD", padding=(0, 13), description="rotation block 128"),
    Case("int4-fp16-h96-gauss", "int4_per_token_head", "float16", 10, 2, 96, "gauss",
         description="rotation block 32, applied 3 times per head"),
    Case("int4-fp32-h40-gauss", "int4_per_token_head", "float32", 8, 2, 40, "gauss",
         description="rotation block 8 (40 = 5 x 8)"),
    Case("int4-bf16-h256-gauss", "int4_per_token_head", "bfloat16", 6, 2, 256, "gauss",
         description="rotation block 256 (vLLM's Triton Hadamard tier stops at 128)"),
    Case("int4-fp32-h32-designed", "int4_per_token_head", "float32", 7, 1, 32, "int4-designed",
         description="rotated rows chosen by hand: ties in codes and zero point, zero-point and "
         "code clamps, the floor, zeros, zero point over non-zero scale bits"),
    Case("int4-fp16-h64-designed", "int4_per_token_head", "float16", 7, 2, 64, "int4-designed",
         physical="NHD"),
]  # fmt: skip
CASES_BY_NAME = {c.name: c for c in CASES}


# --- attention over a written cache (the read side) ----------------------------------------------


@dataclass(frozen=True)
class AttentionCase:
    """One sequence of ``seq_len`` tokens written through the cache, then ``query_len`` causal
    queries at its end (``num_kv_heads * queries_per_kv`` query heads, float32), read by vLLM's
    attention kernel for the dtype."""

    name: str
    kv_cache_dtype: str
    input_dtype: str
    num_kv_heads: int
    head_size: int
    seq_len: int
    query_len: int
    kind: str = "gauss"
    queries_per_kv: int = 2
    block_size: int = 16

    @property
    def blocks(self) -> int:
        return (self.seq_len + self.block_size - 1) // self.block_size + 2

    @property
    def softmax_scale(self) -> float:
        return self.head_size**-0.5


def build_attention_inputs(
    case: AttentionCase,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(key, value, query, slot_mapping, block_table): K/V ``[seq_len, kv_heads, head_size]`` in
    the input dtype, query float32 ``[query_len, q_heads, head_size]``, the sequence's blocks in
    a shuffled order (block_table int32 ``[1, blocks]``)."""
    rng = SplitMix64(hash_name(case.name))
    as_case = Case(case.name, case.kv_cache_dtype, case.input_dtype, case.seq_len,
                   case.num_kv_heads, case.head_size, case.kind)  # fmt: skip
    dtype = DTYPES[case.input_dtype]
    key = torch.tensor(KINDS[case.kind](as_case, rng), dtype=torch.float64).to(dtype)
    value = torch.tensor(KINDS[case.kind](as_case, rng), dtype=torch.float64).to(dtype)
    q_heads = case.num_kv_heads * case.queries_per_kv
    query = torch.tensor(
        [[_gauss_row(rng, case.head_size, 1.0, 0) for _ in range(q_heads)]
         for _ in range(case.query_len)],
        dtype=torch.float32,
    )  # fmt: skip
    order = list(range(case.blocks))
    for i in range(len(order) - 1, 0, -1):
        j = rng.below(i + 1)
        order[i], order[j] = order[j], order[i]
    block_table = torch.tensor([order], dtype=torch.int32)
    slots = [order[t // case.block_size] * case.block_size + t % case.block_size
             for t in range(case.seq_len)]  # fmt: skip
    return key, value, query, torch.tensor(slots, dtype=torch.int64), block_table


def causal_attention(
    k: torch.Tensor, v: torch.Tensor, q: torch.Tensor, case: AttentionCase
) -> torch.Tensor:
    """Causal attention in float64 of ``len(q)`` queries at the end of the sequence, each KV head
    shared by ``queries_per_kv`` consecutive query heads: what vLLM's kernel computes, without its
    float32 rounding."""
    seq, qlen = k.shape[0], q.shape[0]
    k = k.double().repeat_interleave(case.queries_per_kv, dim=1)
    v = v.double().repeat_interleave(case.queries_per_kv, dim=1)
    scores = torch.einsum("lhd,shd->hls", q.double(), k) * case.softmax_scale
    future = torch.arange(seq)[None, :] > (seq - qlen + torch.arange(qlen))[:, None]
    scores = scores.masked_fill(future[None], float("-inf"))
    return torch.einsum("hls,shd->lhd", scores.softmax(-1), v)


ATTENTION_CASES: list[AttentionCase] = [
    AttentionCase("attn-int8-bf16-h64", "int8_per_token_head", "bfloat16", 2, 64, 37, 5),
    AttentionCase(
        "attn-fp8-fp16-h64", "fp8_per_token_head", "float16", 2, 64, 37, 5, kind="fp8-generic"
    ),
    AttentionCase("attn-int4-bf16-h64", "int4_per_token_head", "bfloat16", 2, 64, 37, 5),
    AttentionCase("attn-int4-fp32-h96", "int4_per_token_head", "float32", 1, 96, 21, 3),
]
ATTENTION_CASES_BY_NAME = {c.name: c for c in ATTENTION_CASES}
