"""Parts of what ``kvscale plan`` (and ``verify --data``) does per candidate, side by side.

Each pair computes the same values two ways; the script checks that they are equal bit for bit,
times them ``--runs`` times, interleaved, and prints medians and the ratio old / new:

* ``log_softmax``: one chunk of a variant's KL, ``KL_CHUNK`` positions x ``--vocab`` bf16 logits
  to float32 log-probabilities. ``upcasting``: ``torch.log_softmax(logits, dtype=float32,
  out=scratch)``; ``in_place``: ``kvscale.model.evaluate._log_softmax_float32`` (copy into the
  float32 scratch, then the log-softmax on it in place).
* ``kl_chunks``: one variant's KL and loss over one sample (``--tokens`` positions of
  ``--vocab`` bf16 logits) against a reference: ``wide``, chunks of ``KL_CHUNK`` (256)
  positions; ``cached``, the CPU's cache-sized chunks (``_chunk_positions``: 32 positions of
  49,152).
* ``4over6``: which of the two NVFP4 block scales ``nvfp4_4over6`` keeps, for every group of 16
  of a K-shaped bf16 tensor (``--tokens`` x ``--heads`` x ``--head-size``, heavy-tailed values).
  ``exact_all``: the compiled float32 reconstruction error emulated for every block
  (``_reconstruction_error``, both sides); ``screened``: ``_four_is_smaller`` (float64
  estimates, the emulation only where they are too close to decide).
* ``e2m1``: the nearest e2m1 magnitude of ``|x * os|`` for such a tensor: ``counted``, one
  comparison per rounding boundary and a table lookup (the writer before stop 30);
  ``added``, ``kvscale.kernel.nvfp4._e2m1_magnitude`` (add and subtract a power of two).
* ``nvfp4_read`` / ``4over6_read``: what the cache gives back for such a tensor (bf16, global
  scale from its max): ``bytes``, ``dequantize_nvfp4(quantize_nvfp4(...))``; ``values``,
  ``nvfp4_read_back`` (no packing or decoding).
* ``round_half``: the per-token-head kernels' rounding of a ``--tokens`` x ``--heads`` x
  ``--head-size`` float32 tensor: ``where_trunc``, ``trunc(where(y >= 0, y + 0.5, y - 0.5))``
  as the kernels write it; ``floor``, ``kvscale.kernel.per_token_head._round_half_away``.
* ``fp8_read``: what an FP8 per-tensor cache (e4m3fn) gives back for such a bf16 tensor:
  ``bytes``, ``quantize_to_bits`` then the fp8 -> float32 cast times the scale (the writer
  before stop 31); ``values``, ``kvscale.kernel.reference.fp8_read_back`` (the e4m3 rounding in
  float32, no bytes).
* ``int8_pth_read`` / ``fp8_pth_read`` / ``int4_pth_read``: the per-token-head formats' read:
  ``codes``, ``dequantize_per_token_head(quantize_per_token_head(...))``; ``values``,
  ``per_token_head_read_back`` (from the levels, no codes).
* ``head_slice``: the output embedding (``--vocab`` x ``--hidden``, bf16) of a sample's last
  position, as ``capture`` asks for it: ``int_slice``, ``hidden[:, -1:, :]`` (transformers'
  ``logits_to_keep=1``; the size-1 batch dim keeps the stride of every position and torch's
  matmul copies the weight); ``index``, ``hidden[:, [-1], :]`` (a tensor ``logits_to_keep``).
* ``logits_head``: a variant pass's logits, ``--tokens`` positions of the output embedding:
  ``fresh``, ``torch.nn.Linear`` (bias-free) as the model calls it, a new tensor per pass;
  ``reused``, the same head inside ``kvscale.model.evaluate._ReusedLogits.writing()``, which
  writes into one tensor every pass reuses (a fresh one page-faults its pages each time).

    PYTHONPATH=. python3 benchmarks/bench_plan_parts.py                   # SmolLM2's shapes
    PYTHONPATH=. python3 benchmarks/bench_plan_parts.py --runs 31 --threads 1
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable

import torch

from kvscale.kernel import nvfp4 as N
from kvscale.kernel import per_token_head as P
from kvscale.model.evaluate import KL_CHUNK, _chunk_positions, _log_softmax_float32, _Reference


def _time(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def side_by_side(
    name: str, old: Callable[[], object], new: Callable[[], object], runs: int
) -> None:
    old()
    new()
    times: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(runs):
        times["old"].append(_time(old))
        times["new"].append(_time(new))
    o, n = statistics.median(times["old"]), statistics.median(times["new"])
    print(f"{name:<14} old {o * 1e3:8.3f} ms   new {n * 1e3:8.3f} ms   old/new {o / n:5.2f}x")


def log_softmax_pair(vocab: int, runs: int) -> None:
    g = torch.Generator().manual_seed(0)
    logits = (torch.randn(KL_CHUNK, vocab, generator=g) * 4).to(torch.bfloat16)
    scratch = torch.empty(KL_CHUNK, vocab, dtype=torch.float32)

    def upcasting() -> None:
        torch.log_softmax(logits, dim=-1, dtype=torch.float32, out=scratch)

    def in_place() -> None:
        _log_softmax_float32(logits, scratch)

    upcasting()
    expected = scratch.clone()
    in_place()
    if not torch.equal(scratch, expected):
        raise SystemExit("log_softmax: the two ways differ")
    side_by_side("log_softmax", upcasting, in_place, runs)


def kl_chunks_pair(vocab: int, tokens: int, runs: int) -> None:
    g = torch.Generator().manual_seed(2)
    positions = tokens - 1
    reference = (torch.randn(positions, vocab, generator=g) * 3).to(torch.bfloat16)
    variant = (reference.float() + torch.randn(positions, vocab, generator=g) * 0.2).bfloat16()
    following = torch.randint(0, vocab, (positions,), generator=g)
    wide, cached = (
        _Reference(reference, positions, following, chunk=chunk)
        for chunk in (KL_CHUNK, _chunk_positions(vocab, torch.device("cpu")))
    )

    def one(ref: _Reference) -> Callable[[], object]:
        return lambda: ref.kl(variant, with_loss=True)

    def values(ref: _Reference) -> tuple[float, float, float]:
        total, peak, loss = ref.kl(variant, with_loss=True)
        return total, peak, float(loss) if loss is not None else math.nan

    if values(wide) != values(cached):
        raise SystemExit("kl_chunks: the two chunkings differ")
    side_by_side("kl_chunks", one(wide), one(cached), runs)


def four_over_six_pair(tokens: int, heads: int, head_size: int, runs: int) -> None:
    g = torch.Generator().manual_seed(1)
    # Heavy tails, as K has: a normal times a log-normal per element.
    x = torch.randn(tokens, heads, head_size, generator=g)
    x = x * torch.exp(torch.randn(x.shape, generator=g))
    x = x.to(torch.bfloat16).float().reshape(-1, N.SF_VEC_SIZE)
    m, one = x.abs().amax(dim=1), torch.tensor(1.0)  # k_scale 1.0
    side6, side4 = (N._side(x, m, d, one, one).error_terms() for d in (N.RCP_SIX, N.RCP_FOUR))

    def exact_all() -> torch.Tensor:
        return N._reconstruction_error(x, *side4) < N._reconstruction_error(x, *side6)

    def screened() -> torch.Tensor:
        return N._four_is_smaller(x, side6, side4)

    if not torch.equal(exact_all(), screened()):
        raise SystemExit("4over6: the two ways choose differently")
    side_by_side("4over6", exact_all, screened, runs)


def _heavy_tailed(tokens: int, heads: int, head_size: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, heads, head_size, generator=g)
    return (x * torch.exp(torch.randn(x.shape, generator=g))).to(torch.bfloat16)


def e2m1_pair(tokens: int, heads: int, head_size: int, runs: int) -> None:
    x = _heavy_tailed(tokens, heads, head_size, 2).float()
    a = (x / x.abs().amax() * 6).abs().reshape(-1, N.SF_VEC_SIZE)
    # vLLM's round_to_nearest_e2m1 boundaries, a boundary owned by the upper code stored as the
    # float32 just below it: the code is the count of boundaries strictly below |y|.
    below = [float(torch.nextafter(torch.tensor(b), torch.tensor(0.0))) for b in (0.75, 1.75, 3.5)]
    boundaries = (0.25, below[0], 1.25, below[1], 2.5, below[2], 5.0)
    table = torch.tensor(N.E2M1_MAGNITUDES)

    def counted() -> torch.Tensor:
        code = torch.zeros(a.shape, dtype=torch.uint8)
        for b in boundaries:
            code += a > b
        code = torch.where(torch.isnan(a), torch.tensor(7, dtype=torch.uint8), code)
        return table[code.long()]

    def added() -> torch.Tensor:
        return N._e2m1_magnitude(a)

    if not torch.equal(counted(), added()):
        raise SystemExit("e2m1: the two roundings differ")
    side_by_side("e2m1", counted, added, runs)


def read_back_pairs(tokens: int, heads: int, head_size: int, runs: int) -> None:
    x = _heavy_tailed(tokens, heads, head_size, 3)
    k = float(x.float().abs().amax()) / (448 * 6)
    for variant, name in (("nvfp4", "nvfp4_read"), ("nvfp4_4over6", "4over6_read")):

        def through_bytes(variant: str = variant) -> torch.Tensor:
            q = N.quantize_nvfp4(x, k, variant, track_ambiguity=False)
            return N.dequantize_nvfp4(q.data, q.scales, k)

        def values(variant: str = variant) -> torch.Tensor:
            return N.nvfp4_read_back(x, k, variant)

        if not torch.equal(through_bytes().view(torch.int32), values().view(torch.int32)):
            raise SystemExit(f"{variant}: the read-back differs from the decoded bytes")
        side_by_side(name, through_bytes, values, runs)


def round_half_pair(tokens: int, heads: int, head_size: int, runs: int) -> None:
    y = _heavy_tailed(tokens, heads, head_size, 4).float() * 40

    def where_trunc() -> torch.Tensor:
        return torch.trunc(torch.where(y >= 0, y + 0.5, y - 0.5))

    def floor() -> torch.Tensor:
        return P._round_half_away(y)

    if not torch.equal(where_trunc().view(torch.int32), floor().view(torch.int32)):
        raise SystemExit("round_half: the two roundings differ")
    side_by_side("round_half", where_trunc, floor, runs)


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal float32 bits, a NaN equal to a NaN."""
    same = (a.view(torch.int32) == b.view(torch.int32)) | (a.isnan() & b.isnan())
    return a.shape == b.shape and bool(same.all())


def read_pairs(tokens: int, heads: int, head_size: int, runs: int) -> None:
    from kvscale.kernel.formats import E4M3FN
    from kvscale.kernel.reference import fp8_read_back, quantize_to_bits

    x = _heavy_tailed(tokens, heads, head_size, 5)
    scale = torch.tensor([float(x.float().abs().amax()) / 448])

    def fp8_bytes() -> torch.Tensor:
        return quantize_to_bits(x, scale, E4M3FN).view(torch.float8_e4m3fn).float() * scale

    def fp8_values() -> torch.Tensor:
        return fp8_read_back(x, scale, E4M3FN)

    if not _same_values(fp8_bytes(), fp8_values()):
        raise SystemExit("fp8_read: the read-back differs from the decoded bytes")
    side_by_side("fp8_read", fp8_bytes, fp8_values, runs)
    for dtype in P.PER_TOKEN_HEAD_KV_CACHE_DTYPES:

        def codes(dtype: str = dtype) -> torch.Tensor:
            return P.dequantize_per_token_head(P.quantize_per_token_head(x, dtype))

        def values(dtype: str = dtype) -> torch.Tensor:
            return P.per_token_head_read_back(x, dtype)

        if not _same_values(codes(), values()):
            raise SystemExit(f"{dtype}: the read-back differs from the codes' read")
        side_by_side(dtype.replace("_per_token_head", "_pth_read"), codes, values, runs)


def head_slice_pair(vocab: int, hidden_size: int, tokens: int, runs: int) -> None:
    g = torch.Generator().manual_seed(6)
    weight = (torch.randn(vocab, hidden_size, generator=g) * 0.02).to(torch.bfloat16)
    hidden = torch.randn(1, tokens, hidden_size, generator=g).to(torch.bfloat16)
    last = torch.tensor([-1])

    def int_slice() -> torch.Tensor:
        return torch.nn.functional.linear(hidden[:, -1:, :], weight)

    def index() -> torch.Tensor:
        return torch.nn.functional.linear(hidden[:, last, :], weight)

    if not torch.equal(int_slice(), index()):
        raise SystemExit("head_slice: the two rows' logits differ")
    side_by_side("head_slice", int_slice, index, runs)


def logits_head_pair(vocab: int, hidden_size: int, tokens: int, runs: int) -> None:
    from kvscale.model.evaluate import _ReusedLogits

    g = torch.Generator().manual_seed(7)
    head = torch.nn.Linear(hidden_size, vocab, bias=False, dtype=torch.bfloat16)
    with torch.no_grad():
        head.weight.copy_(torch.randn(vocab, hidden_size, generator=g) * 0.02)
    hidden = torch.randn(1, tokens, hidden_size, generator=g).to(torch.bfloat16)

    class Model:
        def get_output_embeddings(self) -> torch.nn.Linear:
            return head

    reused = _ReusedLogits(Model())

    def fresh() -> torch.Tensor:
        return head(hidden)

    def into_reused() -> torch.Tensor:
        with reused.writing():
            return head(hidden)

    with torch.inference_mode():
        if not torch.equal(fresh(), into_reused()):
            raise SystemExit("logits_head: the two heads' logits differ")
        side_by_side("logits_head", fresh, into_reused, runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--vocab", type=int, default=49152, help="SmolLM2's by default")
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--heads", type=int, default=3)
    ap.add_argument("--head-size", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=576, help="SmolLM2's by default")
    ap.add_argument("--threads", type=int, default=0, help="torch threads; 0 keeps torch's default")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, medians of {args.runs}")
    log_softmax_pair(args.vocab, args.runs)
    kl_chunks_pair(args.vocab, args.tokens, args.runs)
    four_over_six_pair(args.tokens, args.heads, args.head_size, args.runs)
    e2m1_pair(args.tokens, args.heads, args.head_size, args.runs)
    read_back_pairs(args.tokens, args.heads, args.head_size, args.runs)
    round_half_pair(args.tokens, args.heads, args.head_size, args.runs)
    read_pairs(args.tokens, args.heads, args.head_size, args.runs)
    head_slice_pair(args.vocab, args.hidden, args.tokens, args.runs)
    logits_head_pair(args.vocab, args.hidden, args.tokens, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
