"""How far two honest calibrations of one model differ: the measurement behind
``kvscale.core.diff.DEFAULT_MAX_REL_CHANGE`` (the drift bound ``kvscale diff`` applies unless told
otherwise).

The calibration text is cut into ``--parts`` disjoint pieces (at paragraph breaks); the model is
calibrated on each with every ``--samples`` count (``kvscale.calibrate``, ``--seq-len`` tokens a
sample). It prints, over the k and v scales of every layer, the relative change
``max(a/b, b/a) - 1`` that ``kvscale diff`` measures:

* between every two pieces at the same sample count (different data, same recipe);
* between the smallest and the largest sample count on the same piece (more data).

    python3 examples/smollm2/make_model.py --out /tmp/smol       # SmolLM2-135M, once
    PYTHONPATH=. python3 benchmarks/calibration_noise.py --model /tmp/smol --out /tmp/noise

Measured on a 2-core CPU (about an hour; a GPU takes minutes), SmolLM2-135M in bfloat16:

    8x512 disjoint: 6 pairs, 360 values, max 0.504, p99 0.361, p95 0.174, median 0.037
    32x512 disjoint: 6 pairs, 360 values, max 0.333, p99 0.284, p95 0.163, median 0.025
    8 vs 32 samples, same text: 4 pairs, 240 values, max 0.559, p99 0.328, p95 0.160
"""

from __future__ import annotations

import argparse
import itertools
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = ROOT / "examples" / "calibration" / "kvscale-calibration.txt"


def split_text(text: str, parts: int) -> list[str]:
    """``parts`` consecutive pieces of about equal size, cut after a blank line."""
    cuts = [0]
    for i in range(1, parts):
        at = text.find("\n\n", len(text) * i // parts)
        cuts.append(at + 2 if at >= 0 else len(text) * i // parts)
    cuts.append(len(text))
    return [text[a:b] for a, b in itertools.pairwise(cuts)]


def k_v_changes(a: Path, b: Path) -> list[float]:
    from kvscale.core.diff import diff_paths

    result = diff_paths(a, b, None, None)
    return [
        change.rel_change
        for layer in result.layers
        for change in layer.values
        if change.kind in ("k_scale", "v_scale") and change.rel_change is not None
    ]


def summary(name: str, pairs: list[tuple[Path, Path]]) -> float:
    values = sorted(v for a, b in pairs for v in k_v_changes(a, b))

    def at(q: float) -> float:
        return values[min(int(q * len(values)), len(values) - 1)]

    print(
        f"{name}: {len(pairs)} pairs, {len(values)} values, max {values[-1]:.3f}, "
        f"p99 {at(0.99):.3f}, p95 {at(0.95):.3f}, median {statistics.median(values):.3f}"
    )
    return values[-1]


def main() -> None:
    import kvscale
    from kvscale.core.diff import DEFAULT_MAX_REL_CHANGE

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="a new directory for the runs")
    parser.add_argument("--data", type=Path, default=TEXT)
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--samples", default="8,32", help="comma-separated sample counts")
    parser.add_argument("--seq-len", type=int, default=512)
    args = parser.parse_args()

    counts = sorted(int(n) for n in args.samples.split(","))
    args.out.mkdir(parents=True)
    pieces = split_text(args.data.read_text(encoding="utf-8"), args.parts)
    runs: dict[tuple[int, int], Path] = {}
    for i, piece in enumerate(pieces):
        data = args.out / f"part{i}.txt"
        data.write_text(piece, encoding="utf-8")
        for n in counts:
            out = args.out / f"{n}x{args.seq_len}-part{i}"
            kvscale.calibrate(args.model, data, out, samples=n, seq_len=args.seq_len)
            runs[(n, i)] = out
            print(f"calibrated {out.name}", flush=True)
    worst = 0.0
    for n in counts:
        pairs = [
            (runs[(n, i)], runs[(n, j)]) for i, j in itertools.combinations(range(len(pieces)), 2)
        ]
        worst = max(worst, summary(f"{n}x{args.seq_len} disjoint", pairs))
    if len(counts) > 1:
        low, high = counts[0], counts[-1]
        pairs = [(runs[(low, i)], runs[(high, i)]) for i in range(len(pieces))]
        worst = max(worst, summary(f"{low} vs {high} samples, same text", pairs))
    print(
        f"largest honest change {worst:.3f}; DEFAULT_MAX_REL_CHANGE {DEFAULT_MAX_REL_CHANGE} "
        f"({'above' if DEFAULT_MAX_REL_CHANGE > worst else 'NOT above'} it)"
    )


if __name__ == "__main__":
    main()
