"""``CliRunner``: typer's test runner, with each app's click command built once.

``typer.testing.CliRunner.invoke(app, ...)`` converts every command's signature to click
parameters on each call (~10 ms; a third of the suite's time over ~1,800 invocations). A click
command is made to be invoked many times (module-level click apps are), and the callbacks it
wraps look kvscale's modules up when they run, so monkeypatching those still reaches the command.

The runner below does what typer's ``invoke`` does, with typer's public pieces only: the command
from ``typer.main.get_command`` (once per app), the runner's ``isolation`` (stdin, stdout, stderr,
environment, terminal width) and ``typer.testing.Result``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import typer
import typer.main
import typer.testing

Result = typer.testing.Result

_commands: dict[int, tuple[typer.Typer, Any]] = {}


def click_command(app: typer.Typer) -> Any:
    """The click command of ``app``, built on first use (the app is kept alive with it)."""
    key = id(app)
    if key not in _commands:
        _commands[key] = (app, typer.main.get_command(app))
    return _commands[key][1]


class CliRunner(typer.testing.CliRunner):
    """``typer.testing.CliRunner`` whose ``invoke`` reuses the app's click command."""

    def invoke(  # type: ignore[override]
        self,
        app: typer.Typer,
        args: str | Sequence[str] | None = None,
        input: bytes | str | None = None,
        env: Mapping[str, str | None] | None = None,
        catch_exceptions: bool = True,
        color: bool = False,
        **extra: Any,
    ) -> Result:
        command = click_command(app)
        if isinstance(args, str):
            args = shlex.split(args)
        prog_name = extra.pop("prog_name", None) or self.get_default_prog_name(command)
        return_value: Any = None
        exception: BaseException | None = None
        exit_code = 0
        exc_info: Any = None
        with self.isolation(input=input, env=env, color=color) as (out, err, mixed):
            try:
                return_value = command.main(args=args or (), prog_name=prog_name, **extra)
            except SystemExit as e:
                exc_info = sys.exc_info()
                code: Any = 0 if e.code is None else e.code
                if code != 0:
                    exception = e
                if not isinstance(code, int):
                    sys.stdout.write(f"{code}\n")
                    code = 1
                exit_code = code
            except Exception as e:
                if not catch_exceptions:
                    raise
                exception, exit_code, exc_info = e, 1, sys.exc_info()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                stdout, stderr, output = out.getvalue(), err.getvalue(), mixed.getvalue()
        return Result(
            runner=self,
            stdout_bytes=stdout,
            stderr_bytes=stderr,
            output_bytes=output,
            return_value=return_value,
            exit_code=exit_code,
            exception=exception,
            exc_info=exc_info,
        )


runner = CliRunner()
"""One runner for the whole suite (a runner holds no state between invocations)."""


def run_cli(
    *args: object, env: Mapping[str, str | None] | None = None, input: str | None = None
) -> Result:
    """``kvscale ARGS`` in process; paths may be given as ``Path``."""
    from kvscale.cli import app

    argv = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
    return runner.invoke(app, argv, env=env, input=input)


def run_cli_json(*args: object, env: Mapping[str, str | None] | None = None) -> tuple[int, Any]:
    """``kvscale ARGS --json``: the exit code and the parsed document."""
    result = run_cli(*args, "--json", env=env)
    return result.exit_code, json.loads(result.stdout)
