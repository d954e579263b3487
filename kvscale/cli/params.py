"""Shared ``Annotated`` parameter aliases, so every command spells a flag the same way.

Engine options default to ``None`` ("not given"): the policy file may set them, and otherwise
the engine's default applies (``kvscale.options``). Values are validated once, by
``EngineOptions``.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from kvscale.engine.options import GPU_ARCHS, Platform
from kvscale.engine.registry import ENGINES, EngineName, kv_cache_dtypes


class Annotations(str, Enum):
    auto = "auto"
    github = "github"
    none = "none"


CHECKPOINT_HELP = (
    "a .safetensors file, a directory of shards (with or without model.safetensors.index.json), "
    "a Hugging Face cache dir (models--ORG--NAME), or a remote checkpoint read with range "
    "requests: hf://ORG/NAME[@REV], ORG/NAME (when no such local path exists), or an https:// "
    "URL of a .safetensors file or index"
)
CheckpointArg = Annotated[
    str,
    typer.Argument(help=CHECKPOINT_HELP[0].upper() + CHECKPOINT_HELP[1:] + ".", show_default=False),
]
RevisionOpt = Annotated[
    Optional[str],  # noqa: UP045 - typer needs Optional at runtime on 3.10
    typer.Option(
        "--revision",
        help="Branch, tag or commit of a Hub checkpoint (as hf://ORG/NAME@REV); resolved once "
        "to a commit sha. Default: main.",
        show_default=False,
    ),
]


def _engines_help() -> str:
    parts = [e.describe() for e in ENGINES.values()]
    return ", ".join(parts[:-1]) + ", or " + parts[-1]


def _kv_cache_dtypes_help() -> str:
    return "; ".join(
        f"{e.title.split()[0]}: " + ", ".join(kv_cache_dtypes(name)) for name, e in ENGINES.items()
    )


EngineOpt = Annotated[
    Optional[EngineName],  # noqa: UP045 - typer needs Optional at runtime on 3.10
    typer.Option(
        "--engine",
        help=f"Whose rules to apply: {_engines_help()}. Default: the policy file's, else "
        f"{next(iter(ENGINES)).value}.",
        case_sensitive=False,
        show_default=False,
    ),
]
KVCacheDtypeOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--kv-cache-dtype",
        help="The engine's --kv-cache-dtype (default auto: the engine's promotion from the "
        f"checkpoint config). {_kv_cache_dtypes_help()}.",
        show_default=False,
    ),
]
PlatformOpt = Annotated[
    Optional[Platform],  # noqa: UP045
    typer.Option(
        "--platform",
        help="ocp (default): NVIDIA / OCP e4m3fn. fnuz: ROCm MI300 (e4m3fnuz; the base path "
        "doubles loaded k/v/q/prob scales).",
        case_sensitive=False,
        show_default=False,
    ),
]
AttentionBackendOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--attention-backend",
        help="The attention backend you serve with (any case): vllm checks that it runs the "
        "KV-cache dtype (any of vLLM's --attention-backend names: flash_attn, triton_attn, "
        "flashinfer, flashmla, turboquant, ...) and which scale copy triton_attn reads; sglang "
        "flashinfer, triton, fa3, trtllm_mha, flashmla.",
        show_default=False,
    ),
]
SkipLayersOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--kv-cache-dtype-skip-layers",
        help="vLLM's --kv-cache-dtype-skip-layers: layer indices or sliding_window, "
        "comma-separated or repeated (vLLM itself takes them space-separated); those layers "
        "keep an unquantized cache. Entries compare as strings, as in vLLM (01 matches nothing).",
        metavar="LAYERS",
        show_default=False,
    ),
]
GpuArchOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--gpu-arch",
        help="The GPU generation you serve on, where it changes what the engine computes from "
        "the scales (SGLang's NVFP4 global scale on SM100) or which vLLM attention backends run "
        "the KV-cache dtype: " + ", ".join(GPU_ARCHS) + ".",
        metavar="ARCH",
        show_default=False,
    ),
]
Nvfp4ConventionOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--nvfp4-convention",
        help="Rewrite the NVFP4 global scales (k/v of an nvfp4 KV cache) to amax/448 (ModelOpt "
        ">= 0.42), amax/2688 (ModelOpt < 0.42) or engine: the values the chosen --engine turns "
        "into amax/448 on --gpu-arch (SGLang multiplies by 6 on SM100/SM103).",
        metavar="amax/448|amax/2688|engine",
        show_default=False,
    ),
]
Nvfp4ConventionFromOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--nvfp4-convention-from",
        help="The convention the checkpoint's NVFP4 values follow, where it does not say "
        "(kvscale reads it from ModelOpt's producer version): amax/448 or amax/2688.",
        metavar="amax/448|amax/2688",
        show_default=False,
    ),
]
ModelDtypeOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--model-dtype",
        help="The model dtype the engine builds the layers in (bfloat16, float16, float32). "
        "Default: config.json torch_dtype (float32 is served as bfloat16).",
        show_default=False,
    ),
]


class FormatChoice(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


FormatOpt = Annotated[
    Optional[FormatChoice],  # noqa: UP045
    typer.Option(
        "--format",
        help="table (default: for people), json (as --json), markdown (GitHub job summaries and "
        "comments), csv (the table's rows). Under GitHub Actions the Markdown form is also "
        "appended to $GITHUB_STEP_SUMMARY.",
        case_sensitive=False,
        show_default=False,
    ),
]


class NormalizeFormatChoice(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"
    sglang_json = "sglang-json"


NormalizeFormatOpt = Annotated[
    Optional[NormalizeFormatChoice],  # noqa: UP045
    typer.Option(
        "--format",
        help="As for inspect (table, json, markdown, csv); sglang-json: also write SGLang's "
        "--quantization-param-path file (DIR/kv_cache_scales.json, one scale per layer) and "
        "show the table.",
        case_sensitive=False,
        show_default=False,
    ),
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout (the stable contract).")
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="Print only failing problems (one line each).")
]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Warnings fail the run too (exit 1).")]
FailOnOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--fail-on",
        help="Problem codes that fail the run even as warnings (comma-separated, repeatable).",
        show_default=False,
    ),
]
AllowOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--allow",
        help="Problem codes that never fail the run (still reported; comma-separated, repeatable).",
        show_default=False,
    ),
]
PolicyOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--policy",
        help="Policy file (kvscale.toml, or pyproject.toml with a \\[tool.kvscale] table). "
        "Default: the nearest one from the current directory up to the repository root. "
        "Command-line options win over it.",
        show_default=False,
        dir_okay=False,
    ),
]
NoPolicyOpt = Annotated[
    bool,
    typer.Option("--no-policy", help="Ignore kvscale.toml / pyproject.toml policy files."),
]
JunitOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--junit",
        help="Also write a JUnit XML report to this file (one test case per layer and check).",
        show_default=False,
        dir_okay=False,
    ),
]
AnnotationsOpt = Annotated[
    Annotations,
    typer.Option(
        "--annotations",
        help="GitHub Actions annotations (::error/::warning lines on stderr). auto: on when "
        "GITHUB_ACTIONS=true.",
        case_sensitive=False,
    ),
]
OutDirOpt = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        help="Output directory (created; must not be inside the checkpoint). Written atomically: "
        "it appears complete or not at all.",
        show_default=False,
        file_okay=False,
    ),
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace an existing --out (only an untouched kvscale output), and leave layers "
        "that cannot be normalized (refused, invalid values) as they are instead of stopping.",
    ),
]
CheckpointCopyOpt = Annotated[
    bool,
    typer.Option(
        "--checkpoint",
        help="Also write DIR/checkpoint/: a copy of the checkpoint with every KV scale explicit "
        "under the canonical names (other tensors and files byte-identical).",
    ),
]
DigestsOpt = Annotated[
    bool,
    typer.Option(
        "--digests",
        help="sha256 of every output file in the --json summary (reads each copied byte back); "
        "without it, only kvscale's own files (scales, index) get one.",
    ),
]
