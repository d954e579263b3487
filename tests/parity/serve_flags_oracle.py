#!/usr/bin/env python3
"""Oracle: does each serving command ``kvscale plan`` answers with mean, to the engine that
parses it, what kvscale means?

    python tests/parity/serve_flags_oracle.py \\
        --vllm-src /tmp/vllm_dl/src --sglang-src /tmp/sglang_dl/src \\
        --deps /tmp/pydeps --deps /tmp/serve_flags_deps \\
        --out tests/parity/serve_flags_expected.json

The commands come from ``serve_flags_cases.py`` (kvscale's own ``candidates_for`` /
``serve_flags``). Each engine then runs in a child process of its own (``--worker``), with
its extracted wheel and the ``--deps`` directories (pydantic, msgspec: the engines' argument
records are pydantic dataclasses and msgspec structs) on ``sys.path``, and parses every command
of its engine the way its command-line entry point does:

* vLLM 0.33.0, ``vllm serve MODEL ...`` (``vllm/entrypoints/cli/main.py``): a
  ``FlexibleArgumentParser`` with a ``serve`` sub-parser filled by ``make_arg_parser``
  (``entrypoints/common/cli_args.py``: ``model_tag``, the frontend options and
  ``AsyncEngineArgs.add_cli_args``), as ``ServeSubcommand.subparser_init`` does; then
  ``ServeSubcommand.validate`` (``validate_parsed_serve_args``), the first statement of
  ``ServeSubcommand.cmd`` (``args.model = args.model_tag``), ``AsyncEngineArgs.from_cli_args``
  (its ``__post_init__`` included), and the statements of ``EngineArgs.create_engine_config``
  that check these values before any model is read: ``resolve_kv_cache_dtype_string``,
  ``CacheConfig(cache_dtype=..., kv_cache_dtype_skip_layers=...)`` (pydantic runs
  ``_validate_cache_dtype``) and ``AttentionConfig.validate_backend_before`` on the
  ``--attention-backend`` value.
* SGLang 0.5.23, ``python -m sglang.launch_server ...`` (``sglang/launch_server.py``'s
  ``__main__``): ``load_plugins()`` then ``prepare_server_args(argv)``
  (``srt/server_args.py``: ``ServerArgs.add_cli_args`` on an ``ArgumentParser``, ``parse_args``,
  ``ServerArgs.from_cli_args``).

Neither engine is installed: the worker imports the engine's own modules from the tree, so
every line that builds and runs the parser is the release's. What is not the engine's:

* placeholder modules for third-party packages the import chain needs but no parsed value
  depends on (``VLLM_PLACEHOLDERS`` / ``SGLANG_PLACEHOLDERS``: networking, serialisation,
  images, the OpenAI client's types); only packages imported unconditionally are listed, so
  optional imports fail as on a machine without them;
* vLLM: ``vllm._C_stable_libtorch`` (the compiled CUDA ops, registered on import of
  ``platforms/cuda.py``) is an empty module, and the current platform is ``CudaPlatform`` (what
  ``vllm serve`` runs on; without NVML here, ``NonNvmlCudaPlatform``): the parser's device
  default reads it;
* the model directories exist (empty) in the worker's working directory, since
  ``EngineArgs.__post_init__`` under ``HF_HUB_OFFLINE=1`` takes an existing path as the model;
  ``resolve_kv_cache_dtype_string`` gets no model config (it reads one only for ``auto``,
  which plan never emits); ``CacheConfig`` gets the two fields the flags set, the others at
  their defaults.

A rejected command is recorded with the stage that rejected it and the engine's message
(argparse's usage error, or the exception). ``test_serve_flags.py`` judges the golden file.
Must run without ``python -O`` (the engines' asserts are behaviour).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import platform as _pyplatform
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SCHEMA = "kvscale.serve-flags-parity/1"
ENGINES = ("vllm", "sglang")

VLLM_PLACEHOLDERS = {
    "cbor2": "vllm/utils/hashing.py",
    "zmq": "vllm/utils/network_utils.py",
    "aiohttp": "vllm/connections.py",
    "openai": "vllm/entrypoints/mcp/tool.py, renderers/chat_utils, entrypoints/openai",
    "openai_harmony": "vllm/entrypoints/mcp/tool_server.py",
    "cloudpickle": "vllm/v1/serial_utils.py",
    "PIL": "vllm/multimodal/hasher.py, multimodal/inputs.py",
    "pybase64": "vllm/multimodal/media/audio.py",
    "cachetools": "vllm/utils/cache.py",
    "uvloop": "vllm/v1/utils.py",
    "cpuinfo": "vllm/usage/usage_lib.py",
    "xgrammar": "vllm/parser/abstract_parser.py",
    "llguidance": "vllm/v1/structured_output/backend_guidance.py (LazyLoader, in an annotation)",
    "fastapi": "vllm/entrypoints/serve/__init__.py",
    "prometheus_client": "vllm/v1/metrics/perf.py",
    "partial_json_parser": "vllm/tool_parsers/utils.py",
}
"""Third-party packages imported unconditionally on the way to ``make_arg_parser``, with the
file that first imports each."""

SGLANG_PLACEHOLDERS = {
    "orjson": "sglang/srt/utils/common.py",
    "pybase64": "sglang/srt/utils/common.py",
    "PIL": "sglang/srt/utils/common.py",
    "starlette": "sglang/srt/utils/common.py",
    "zmq": "sglang/srt/utils/network.py",
    "IPython": "sglang/utils.py",
    "aiohttp": "sglang/lang/backend/runtime_endpoint.py",
}
"""The same, on the way to ``prepare_server_args``."""

VLLM_KEY_FILES = (
    "vllm/engine/arg_utils.py",
    "vllm/entrypoints/common/cli_args.py",
    "vllm/entrypoints/cli/main.py",
    "vllm/entrypoints/cli/serve.py",
    "vllm/utils/argparse_utils.py",
    "vllm/config/cache.py",
    "vllm/config/attention.py",
    "vllm/utils/torch_utils.py",
    "vllm/v1/attention/backends/registry.py",
)
SGLANG_KEY_FILES = (
    "sglang/launch_server.py",
    "sglang/srt/server_args.py",
    "sglang/srt/arg_groups/arg_utils.py",
    "sglang/srt/arg_groups/choices.py",
    "sglang/srt/arg_groups/fields/model.py",
    "sglang/srt/arg_groups/fields/exec_.py",
)
"""The files whose sha256 the golden file pins (the parser, the choices, the checks run)."""


def _load(name: str, file: str) -> types.ModuleType:
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# --- placeholder modules ----------------------------------------------------------------------


class _PlaceholderType(type):
    """Any attribute of a placeholder is another placeholder class: it can be subclassed (with
    class keywords, as msgspec and pydantic bases take), called, subscripted and joined with
    ``|`` in annotations."""

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any], **_: Any) -> Any:
        return super().__new__(mcs, name, bases, ns)

    def __init__(cls, name: str, bases: tuple[type, ...], ns: dict[str, Any], **_: Any) -> None:
        super().__init__(name, bases, ns)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _PlaceholderType(name, (Placeholder,), {})

    def __or__(cls, other: Any) -> Any:
        return cls

    def __ror__(cls, other: Any) -> Any:
        return cls

    def __getitem__(cls, item: Any) -> Any:
        return cls


class Placeholder(metaclass=_PlaceholderType):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return Placeholder()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Placeholder()

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        # The engines' request models (pydantic) name the OpenAI client's types in fields;
        # a placeholder validates anything, and no parsed value goes through those models.
        from pydantic_core import core_schema

        return core_schema.any_schema()


class _PlaceholderModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _PlaceholderType(name, (Placeholder,), {})


class _PlaceholderFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the named top-level packages (and any submodule of them) as placeholders,
    when they are not importable here; everything else imports normally."""

    def __init__(self, packages: Sequence[str]) -> None:
        self.packages = frozenset(packages)
        self.served: set[str] = set()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] not in self.packages:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except (ImportError, ValueError):
                spec = None
            if spec is not None:
                return None
        self.served.add(fullname)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        return _PlaceholderModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []


# --- the engines' parsers -----------------------------------------------------------------------


@contextlib.contextmanager
def _captured_exit() -> Iterator[io.StringIO]:
    """argparse reports a rejected argument on stderr and exits 2: keep the message."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        yield err


def _error(exc: BaseException, err: io.StringIO) -> str:
    if isinstance(exc, SystemExit):
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        return f"SystemExit({exc.code}): {lines[-1] if lines else ''}"
    return f"{type(exc).__name__}: {exc}"


def _staged(stages: Sequence[tuple[str, Callable[[], None]]]) -> dict[str, Any]:
    """Run the stages in order; the first that raises (or exits) ends the run."""
    for stage, step in stages:
        with _captured_exit() as err:
            try:
                step()
            except (Exception, SystemExit) as exc:
                return {"stage": stage, "error": _error(exc, err)}
    return {"stage": None, "error": None}


def _vllm_parser() -> Callable[[Sequence[str]], dict[str, Any]]:
    import vllm.platforms

    sys.modules["vllm._C_stable_libtorch"] = types.ModuleType("vllm._C_stable_libtorch")
    from vllm.platforms import cuda

    vllm.platforms._current_platform = cuda.CudaPlatform()

    from vllm.config import AttentionConfig, CacheConfig
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.common.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    from vllm.utils.torch_utils import resolve_kv_cache_dtype_string

    # entrypoints/cli/main.py: main(); entrypoints/cli/serve.py: ServeSubcommand.subparser_init
    root = FlexibleArgumentParser(description="vLLM CLI")
    subparsers = root.add_subparsers(required=False, dest="subparser")
    serve = subparsers.add_parser("serve", usage="vllm serve [model_tag] [options]")
    make_arg_parser(serve)

    def parse(argv: Sequence[str]) -> dict[str, Any]:
        if list(argv[:2]) != ["vllm", "serve"]:
            return {"stage": "command", "error": f"not a vllm serve command: {argv[:2]}"}
        state: dict[str, Any] = {}

        def parse_args() -> None:
            state["args"] = root.parse_args(list(argv[1:]))

        def validate() -> None:
            validate_parsed_serve_args(state["args"])  # ServeSubcommand.validate

        def engine_args() -> None:
            args = state["args"]
            if hasattr(args, "model_tag") and args.model_tag is not None:  # ServeSubcommand.cmd
                args.model = args.model_tag
            state["engine"] = AsyncEngineArgs.from_cli_args(args)

        def cache_config() -> None:
            e = state["engine"]
            resolved = resolve_kv_cache_dtype_string(e.kv_cache_dtype, None)
            state["cache"] = CacheConfig(
                cache_dtype=resolved, kv_cache_dtype_skip_layers=e.kv_cache_dtype_skip_layers
            )

        def attention_config() -> None:
            e = state["engine"]
            config = copy.deepcopy(e.attention_config)
            if e.attention_backend is not None:
                if config.backend is not None:
                    raise ValueError(
                        "attention_backend and attention_config.backend are mutually exclusive"
                    )
                config.backend = AttentionConfig.validate_backend_before(e.attention_backend)
            state["attention"] = config

        result = _staged(
            [
                ("parse_args", parse_args),
                ("validate_parsed_serve_args", validate),
                ("from_cli_args", engine_args),
                ("CacheConfig", cache_config),
                ("AttentionConfig", attention_config),
            ]
        )
        parsed: dict[str, Any] = {}
        if "engine" in state:
            e = state["engine"]
            parsed.update(
                model=e.model,
                kv_cache_dtype=e.kv_cache_dtype,
                kv_cache_dtype_skip_layers=list(e.kv_cache_dtype_skip_layers),
                attention_backend=e.attention_backend,
                quantization=e.quantization,
                quantization_config=None
                if e.quantization_config is None
                else repr(e.quantization_config),
            )
        if "cache" in state:
            c = state["cache"]
            parsed["cache_config"] = {
                "cache_dtype": c.cache_dtype,
                "kv_cache_dtype_skip_layers": list(c.kv_cache_dtype_skip_layers),
            }
        if "attention" in state:
            backend = state["attention"].backend
            parsed["attention_config_backend"] = None if backend is None else backend.name
        return {**result, "parsed": parsed}

    return parse


def _sglang_parser() -> Callable[[Sequence[str]], dict[str, Any]]:
    from sglang.srt.plugins import load_plugins
    from sglang.srt.server_args import prepare_server_args

    load_plugins()  # launch_server.py: __main__
    entry = ["python", "-m", "sglang.launch_server"]

    def parse(argv: Sequence[str]) -> dict[str, Any]:
        if list(argv[:3]) != entry:
            return {"stage": "command", "error": f"not an sglang.launch_server command: {argv}"}
        state: dict[str, Any] = {}

        def prepare() -> None:
            state["args"] = prepare_server_args(list(argv[3:]))

        result = _staged([("prepare_server_args", prepare)])
        parsed: dict[str, Any] = {}
        if "args" in state:
            a = state["args"]
            parsed.update(
                model_path=a.model_path,
                kv_cache_dtype=a.kv_cache_dtype,
                attention_backend=a.attention_backend,
                decode_attention_backend=a.decode_attention_backend,
                prefill_attention_backend=a.prefill_attention_backend,
                quantization=a.quantization,
                quantization_param_path=a.quantization_param_path,
            )
        return {**result, "parsed": parsed}

    return parse


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _imported_sources(src: Path, package: str) -> dict[str, Any]:
    """Every file of the tree the run imported: count and one digest over (path, sha256)."""
    files = sorted(
        Path(m.__file__).resolve().relative_to(src.resolve()).as_posix()
        for m in list(sys.modules.values())
        if getattr(m, "__file__", None)
        and Path(m.__file__).resolve().is_relative_to((src / package).resolve())
    )
    digest = hashlib.sha256()
    for rel in files:
        digest.update(f"{rel} {_sha256(src / rel)}\n".encode())
    return {"files": len(files), "sha256": digest.hexdigest()}


def _worker(engine: str, src: Path, deps: Sequence[str], cases_file: Path, out: Path) -> None:
    """One engine, in this process: parse every command of ``cases_file`` for ``engine``."""
    spec = json.loads(cases_file.read_text())
    os.environ["HF_HUB_OFFLINE"] = "1"
    workdir = Path(tempfile.mkdtemp(prefix=f"kvscale-{engine}-serve-"))
    for d in spec["checkpoint_dirs"]:
        (workdir / d).mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    sys.path[:0] = [str(src), *deps]
    import torch  # before the finder: torch's own optional imports stay untouched

    placeholders = VLLM_PLACEHOLDERS if engine == "vllm" else SGLANG_PLACEHOLDERS
    finder = _PlaceholderFinder(list(placeholders))
    sys.meta_path.append(finder)
    parse = _vllm_parser() if engine == "vllm" else _sglang_parser()
    results = {
        group: {name: parse(c["argv"]) for name, c in commands.items() if c["engine"] == engine}
        for group, commands in spec["commands"].items()
    }
    key_files = VLLM_KEY_FILES if engine == "vllm" else SGLANG_KEY_FILES
    if engine == "vllm":
        from vllm import __version__ as version
    else:
        from sglang.version import __version__ as version
    import msgspec
    import pydantic

    provenance = {
        f"{engine}_version": version,
        f"{engine}_sources_sha256": {rel: _sha256(src / rel) for rel in key_files},
        f"{engine}_imported_sources": _imported_sources(src, engine),
        f"{engine}_placeholders": sorted(n for n in finder.served if "." not in n),
        f"{engine}_torch_version": torch.__version__,
        f"{engine}_pydantic_version": pydantic.VERSION,
        f"{engine}_msgspec_version": msgspec.__version__,
    }
    if engine == "vllm":
        import vllm.platforms

        provenance["vllm_platform"] = type(vllm.platforms.current_platform).__name__
    out.write_text(json.dumps({"provenance": provenance, "results": results}))


# --- the golden file ----------------------------------------------------------------------------


def build(sources: dict[str, str], deps: Sequence[str]) -> dict[str, Any]:
    """Cases from kvscale, then one worker process per engine."""
    sys.path[:0] = [str(REPO), str(REPO / "tests")]
    cases = _load("kvscale_parity_serve_flags_cases", "serve_flags_cases.py")
    commands = {
        "cases": {name: c.as_json() for name, c in cases.serve_cases().items()},
        "controls": {name: c.as_json() for name, c in cases.CONTROLS.items()},
    }
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "provenance": {"python_version": _pyplatform.python_version()},
        **commands,
    }
    with tempfile.TemporaryDirectory(prefix="kvscale-serve-flags-") as tmp:
        cases_file = Path(tmp) / "commands.json"
        cases_file.write_text(
            json.dumps({"checkpoint_dirs": list(cases.CHECKPOINT_DIRS), "commands": commands})
        )
        for engine in ENGINES:
            out = Path(tmp) / f"{engine}.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", engine]
            cmd += ["--src", sources[engine], "--cases", str(cases_file), "--result", str(out)]
            for d in deps:
                cmd += ["--deps", d]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"{engine} worker failed:\n{proc.stderr[-6000:]}")
            got = json.loads(out.read_text())
            doc["provenance"].update(got["provenance"])
            for group, results in got["results"].items():
                for name, result in results.items():
                    doc[group][name]["engine_result"] = result
    for group in commands:
        missing = [n for n, c in doc[group].items() if "engine_result" not in c]
        assert not missing, missing
    return doc


def dump(doc: dict[str, Any]) -> str:
    """One line per command: diffs show which command changed."""
    groups = ("cases", "controls")
    head = {k: v for k, v in doc.items() if k not in groups}
    parts = [json.dumps(head, indent=1, sort_keys=True)[:-2]]
    for group in groups:
        items = sorted(doc[group].items())
        lines = [f"  {json.dumps(n)}: {json.dumps(c, sort_keys=True)}" for n, c in items]
        parts.append(f',\n "{group}": {{\n' + ",\n".join(lines) + "\n }")
    return "".join(parts) + "\n}\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--vllm-src", help="directory holding the extracted vllm/ package")
    ap.add_argument("--sglang-src", help="directory holding the extracted sglang/ package")
    ap.add_argument(
        "--deps",
        action="append",
        default=[],
        help="directory with pydantic / msgspec, put on the workers' sys.path (repeatable)",
    )
    ap.add_argument("--out", help="golden JSON file to write ('-' for stdout)")
    ap.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    ap.add_argument("--src", help=argparse.SUPPRESS)
    ap.add_argument("--cases", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not __debug__:
        ap.error("run without -O: the engines' assert statements are behaviour")
    if args.worker:
        _worker(args.worker, Path(args.src), args.deps, Path(args.cases), Path(args.result))
        return 0
    if not (args.vllm_src and args.sglang_src and args.out):
        ap.error("--vllm-src, --sglang-src and --out are required")
    doc = build({"vllm": args.vllm_src, "sglang": args.sglang_src}, args.deps)
    text = dump(doc)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text)
    for group in ("cases", "controls"):
        rejected = {n: c["engine_result"]["error"] for n, c in doc[group].items()}
        rejected = {n: e for n, e in rejected.items() if e}
        sys.stderr.write(f"{group}: {len(doc[group])} commands, {len(rejected)} rejected\n")
        for name, error in rejected.items():
            sys.stderr.write(f"  {name}: {error}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
