"""Atomic output directories: stage every file next to ``--out``, fsync, rename into place once.

Used by every command that writes a directory (``normalize``, ``calibrate``). What must hold:

* an interrupted run leaves no file under a final output name: ``--out`` is absent, or complete
  (with ``--force``: the old or the new complete output);
* a failed run removes its staging directory and leaves ``--out`` as it was;
* kvscale replaces only a directory that it wrote itself and that holds nothing else: every
  output carries a manifest (``MANIFEST_NAME``) listing its files, and ``--force`` replaces a
  directory only when its entries are exactly the manifest's;
* a pre-existing *empty* directory is taken over atomically (``RENAME_EXCHANGE``): if anything
  appeared in it meanwhile, or another run took it first, the swap is undone and the run
  refused, so exactly one of two racing runs wins;
* nothing is written where the input lives (``check_not_input``: device and inode along the
  path, so a bind mount or a symlink of the input is recognized).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kvscale.errors import InputError, OutputError, UsageError
from kvscale.io.safetensors_write import (
    ShardLayout,
    SourceChangedError,
    copy_file,
    fsync_dir,
    write_bytes,
    write_layout,
)
from kvscale.progress import ProgressEvent, ProgressFn

STAGING_MARK = ".kvscale-tmp-"
OLD_MARK = ".kvscale-old-"
MANIFEST_NAME = ".kvscale-manifest.json"
MANIFEST_SCHEMA = "kvscale.manifest/1"
DEFAULT_WORKERS = 4

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


@dataclass(frozen=True)
class FileJob:
    """One file of an output directory."""

    path: str
    """Relative to the output directory, with ``/`` separators."""
    action: str
    """``generated`` (kvscale's own bytes), ``rewritten`` (shard with new scales) or ``copied``."""
    size: int
    source: Path | None = None
    data: bytes | None = None
    layout: ShardLayout | None = None
    mode: int | None = None
    """Permission bits for the new file (never wider than its source's); None: the umask's."""


@dataclass(frozen=True)
class WrittenFile:
    path: str
    action: str
    bytes: int
    sha256: str | None
    method: str


class _Aborted(Exception):
    pass


# --- where the output may go ---------------------------------------------------------------------


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _ancestors(path: Path) -> Iterable[Path]:
    """``path`` and every directory above it, as given (not resolved)."""
    absolute = Path(os.path.abspath(path))
    yield absolute
    yield from absolute.parents


def check_not_input(target: Path, inputs: Iterable[Path], what: str) -> None:
    """Refuse to write ``target`` (a file or directory of the output) where an input lives.

    Compared by device and inode along the path, not by name: through a bind mount, a symlink
    or ``..``, the same directory has two names but one identity. ``inputs`` are the input
    files and directories; the target may be neither one of them, nor inside an input
    directory, nor (for a directory target) contain one.
    """
    protected: dict[tuple[int, int], Path] = {}
    for path in inputs:
        ident = _identity(path)
        if ident is not None:
            protected[ident] = path
    for ancestor in _ancestors(target):
        ident = _identity(ancestor)
        if ident is not None and ident in protected:
            raise UsageError(
                f"{what} {target} is inside the input ({protected[ident]})",
                hint=f"choose a {what} outside the input checkpoint",
            )
    target_ident = _identity(target)
    if target_ident is None:
        return
    for path in inputs:
        for ancestor in _ancestors(path):
            if _identity(ancestor) == target_ident:
                raise UsageError(
                    f"the input ({path}) is inside {what} {target}",
                    hint=f"choose a {what} that does not contain the input",
                )


def read_manifest(out: Path) -> list[str] | None:
    """The files a kvscale output lists in its manifest, or None (not a kvscale output)."""
    try:
        fd = os.open(
            out / MANIFEST_NAME, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        )
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, 1 << 24)
    finally:
        os.close(fd)
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    files = doc.get("files") if isinstance(doc, dict) else None
    if doc.get("schema") != MANIFEST_SCHEMA or not isinstance(files, list):
        return None
    if not all(isinstance(f, str) for f in files):
        return None
    return list(files)


def _entries(root: Path) -> set[str] | None:
    """Every file and directory below ``root`` (relative, ``/``); None if unreadable."""
    found: set[str] = set()
    try:
        for dirpath, dirnames, filenames in os.walk(root, onerror=_raise):
            rel = os.path.relpath(dirpath, root)
            for name in [*dirnames, *filenames]:
                found.add(name if rel == "." else f"{rel}/{name}")
    except OSError:
        return None
    return found


def _raise(exc: OSError) -> None:
    raise exc


def _expected_entries(files: Sequence[str]) -> set[str]:
    out = {MANIFEST_NAME}
    for rel in files:
        parts = rel.split("/")
        for i in range(1, len(parts)):
            out.add("/".join(parts[:i]))
        out.add(rel)
    return out


def is_own_output(out: Path) -> bool:
    """Whether ``out`` is a directory kvscale wrote that holds exactly its manifest's files."""
    files = read_manifest(out)
    if files is None:
        return False
    return _entries(out) == _expected_entries(files)


@dataclass(frozen=True)
class ExistingOutput:
    """What ``--out`` was when it was checked: its identity, and whether it was empty."""

    identity: tuple[int, int]
    empty: bool


def check_out(out: Path, force: bool) -> ExistingOutput | None:
    """Validate ``--out`` before anything is written; None when it does not exist yet, else
    what it is (an empty directory to take over, or a kvscale output to replace)."""
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        if not out.parent.is_dir():
            raise UsageError(
                f"the parent directory of --out {out} does not exist", hint="create it first"
            ) from None
        return None
    except OSError as exc:
        raise OutputError(f"{out}: cannot check the output path: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"--out {out} is a symbolic link", hint="pass the real directory")
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"--out {out} exists and is not a directory")
    try:
        with os.scandir(out) as entries:
            empty = next(entries, None) is None
    except OSError as exc:
        raise OutputError(f"{out}: cannot read the existing output: {exc.strerror}") from None
    if empty:
        return ExistingOutput((st.st_dev, st.st_ino), True)
    if not force:
        raise UsageError(
            f"--out {out} already exists", hint="pass --force to replace it, or choose a new name"
        )
    if not is_own_output(out):
        raise UsageError(
            f"--out {out} exists and is not an untouched kvscale output (its files are not "
            f"exactly those its {MANIFEST_NAME} lists); refusing to replace it even with --force",
            hint="choose a new output directory, or remove it yourself",
        )
    return ExistingOutput((st.st_dev, st.st_ino), False)


# --- stale staging directories ----------------------------------------------------------------


def _start_time(pid: int) -> str | None:
    """A process's start time (clock ticks since boot, /proc/PID/stat field 22), or None.

    The pid alone is not an identity: in a container kvscale is often PID 1 in every run.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read(4096).decode("ascii", "replace")
    except OSError:
        return None
    # The command name (field 2) is parenthesized and may hold spaces or parentheses.
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if started is None:
        return True
    current = _start_time(pid)
    return current is None or current == started


def _run_tag() -> str:
    """``PID-STARTTIME``: what names this run's staging directories."""
    return f"{os.getpid()}-{_start_time(os.getpid()) or 0}"


def clean_stale(out: Path) -> list[Path]:
    """Remove staging/old directories left next to ``out`` by runs that were killed."""
    removed: list[Path] = []
    pattern = re.compile(
        rf"^\.{re.escape(out.name)}(?:{re.escape(STAGING_MARK)}|{re.escape(OLD_MARK)})"
        r"(\d+)-(\d+)-[^/]*$"
    )
    try:
        with os.scandir(out.parent) as it:
            entries = list(it)
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        started = match.group(2)
        if _alive(int(match.group(1)), None if started == "0" else started):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


# --- single files and whole directories written by another library ------------------------------


def write_file_atomic(
    path: str | os.PathLike[str],
    content: bytes | Callable[[Path], None],
    what: str,
    *,
    mode: int = 0o644,
) -> None:
    """One file, so that readers see the old file or the whole new one, never a part.

    ``content``: the bytes, or a function that writes the file at the path it is given (a
    library's own writer, e.g. ``safetensors.torch.save_file``). The temporary file lives in the
    target directory (``os.replace`` is atomic only within one file system); missing parent
    directories are created (report paths are often new); ``mode`` (mkstemp makes 0600) lets
    others read what a CI job publishes. ``what`` names the file in errors.
    """
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"{target}: is a directory")
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        tmp = Path(name)
        if isinstance(content, bytes):
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
        else:
            os.close(fd)
            content(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
        fsync_dir(target.parent)
    except OSError as exc:
        raise OutputError(f"{target}: cannot write {what}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def write_directory_atomic(out: str | os.PathLike[str], fill: Callable[[Path], None]) -> Path:
    """A new directory that another library writes (``save_pretrained``): ``fill`` writes into a
    staging sibling, which is renamed to ``out`` only when complete; ``out`` must not exist (an
    existing one is never replaced). Modes are those a plain ``mkdir``/``open`` give under the
    umask (``mkdtemp`` would leave the directory 0700)."""
    target = Path(out)
    if os.path.lexists(target):
        raise OutputError(f"{target} already exists; choose a new directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}{STAGING_MARK}{_run_tag()}"
    try:
        staging.mkdir()
        fill(staging)
        _plain_modes(staging)
        if not renameat2(staging, target, _RENAME_NOREPLACE):
            if os.path.lexists(target):
                raise OutputError(f"{target} appeared while it was written; nothing replaced")
            os.rename(staging, target)
        fsync_dir(target.parent)
    except OSError as exc:
        raise OutputError(f"{target}: cannot write: {exc.strerror or exc}") from None
    finally:
        remove_staging(staging)
    return target


def _plain_modes(directory: Path) -> None:
    """Give ``directory`` and everything in it the modes a plain ``mkdir``/``open`` give under
    the umask (read off a probe of each, without touching the process umask)."""
    probe = directory / ".kvscale-mode-probe"
    probe.mkdir()
    dir_mode = stat.S_IMODE(probe.stat().st_mode)
    probe.rmdir()
    probe.touch()
    file_mode = stat.S_IMODE(probe.stat().st_mode)
    probe.unlink()
    os.chmod(directory, dir_mode)
    for path in directory.rglob("*"):
        if path.is_symlink():
            continue
        os.chmod(path, dir_mode if path.is_dir() else file_mode)


# --- writing -------------------------------------------------------------------------------------


_libc: object = None


def renameat2(src: Path, dst: Path, flags: int) -> bool:
    """Linux renameat2 (RENAME_NOREPLACE=1, RENAME_EXCHANGE=2); False if not supported."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        func = _libc.renameat2  # type: ignore[attr-defined]
    except (OSError, AttributeError):
        return False
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd = -100
    rc = func(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), flags)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(dst))


def describe_os_error(exc: OSError, what: str, out: Path) -> str:
    code = exc.errno
    reason = exc.strerror or str(exc)
    if code == errno.ENOSPC:
        why = "no space left on the output filesystem"
    elif code == errno.EDQUOT:
        why = "disk quota exceeded on the output filesystem"
    elif code == errno.EROFS:
        why = "the output filesystem is read-only"
    elif code in (errno.EACCES, errno.EPERM):
        why = f"permission denied ({reason})"
    elif code == errno.ENOENT:
        why = "the output directory vanished while kvscale was writing it"
    else:
        why = reason
    return f"{what}: {why}; nothing was written to {out}"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        buffer = bytearray(8 << 20)
        view = memoryview(buffer)
        while True:
            n = fh.readinto(buffer)
            if not n:
                break
            digest.update(view[:n])
    return digest.hexdigest()


def inside(root: Path, rel: str) -> Path:
    """``root/rel`` for a relative path that cannot leave ``root``."""
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") or "\0" in p for p in parts) or os.path.isabs(rel):
        raise OutputError(f"refusing to write outside the output directory: {rel!r}")
    return root.joinpath(*parts)


def manifest_bytes(files: Sequence[str]) -> bytes:
    doc = {"schema": MANIFEST_SCHEMA, "files": sorted(files)}
    return (json.dumps(doc, indent=2) + "\n").encode()


@dataclass(frozen=True)
class WriteOptions:
    force: bool = False
    digests: bool = False
    """sha256 of every file (reads every copied byte back); else only of generated files."""
    workers: int = 0
    """Files written at once; 0 = ``DEFAULT_WORKERS``."""
    fsync: bool = True
    """Make every file durable before the final rename (never turn off outside tests)."""


def write_output(
    out: Path,
    jobs: Sequence[FileJob],
    options: WriteOptions,
    progress: ProgressFn | None = None,
    *,
    source: str = "the input",
    check: Callable[[Path], None] | None = None,
) -> tuple[tuple[WrittenFile, ...], bool]:
    """Write ``jobs`` as the directory ``out``, atomically; returns the files and whether an
    existing directory was replaced. ``OutputError`` (exit 2) when writing fails: the staging
    directory is removed and ``out`` is as it was.

    ``check(staging_dir)`` runs on the complete files before they become ``out``; whatever it
    raises leaves ``out`` as it was (e.g. calibrate inspects the checkpoint copy it wrote).
    """
    existing = check_out(out, options.force)
    clean_stale(out)
    parent = out.parent
    try:
        staging = Path(
            tempfile.mkdtemp(prefix=f".{out.name}{STAGING_MARK}{_run_tag()}-", dir=parent)
        )
    except OSError as exc:
        raise OutputError(
            describe_os_error(exc, f"cannot create a directory in {parent}", out)
        ) from None
    umask = os.umask(0)
    os.umask(umask)
    committed = False
    manifest = manifest_bytes([j.path for j in jobs])
    try:
        os.chmod(staging, 0o777 & ~umask)
        results = _write_files(jobs, staging, options, umask, progress)
        if check is not None:
            check(staging)
        write_bytes(staging / MANIFEST_NAME, manifest, fsync=options.fsync)
        results[MANIFEST_NAME] = WrittenFile(
            MANIFEST_NAME,
            "generated",
            len(manifest),
            hashlib.sha256(manifest).hexdigest(),
            "written",
        )
        if options.fsync:
            for dirpath, _, _ in sorted(os.walk(staging), key=lambda t: -len(t[0])):
                fsync_dir(Path(dirpath))
        _commit(staging, out, existing)
        committed = True
    except OSError as exc:
        what = f"writing {exc.filename}" if exc.filename else "writing the output"
        raise OutputError(describe_os_error(exc, what, out)) from None
    except SourceChangedError as exc:
        raise InputError(source, f"a file changed while it was copied ({exc})") from None
    finally:
        if not committed:
            remove_staging(staging)
    files = (*(results[job.path] for job in jobs), results[MANIFEST_NAME])
    return files, existing is not None


ABORT_GRACE_SECONDS = 2.0
"""How long an interrupted write waits for its copy threads to stop before it cleans up."""

REMOVE_RETRY_SECONDS = 2.0
"""How long removing an abandoned staging directory keeps retrying (see ``remove_staging``)."""


def remove_staging(staging: Path) -> None:
    """Remove an abandoned staging directory. A copy thread that outlived the abort's grace
    period (a loaded machine, a slow disk) can create or extend a file while ``rmtree`` runs,
    whose last ``rmdir`` then fails with ENOTEMPTY; so retry briefly until the directory is gone.
    What a thread stuck in the kernel leaves is removed by the next run (``clean_stale``)."""
    deadline = time.monotonic() + REMOVE_RETRY_SECONDS
    while True:
        shutil.rmtree(staging, ignore_errors=True)
        if not os.path.lexists(staging) or time.monotonic() >= deadline:
            return
        time.sleep(0.05)


def _write_files(
    jobs: Sequence[FileJob],
    staging: Path,
    options: WriteOptions,
    umask: int,
    progress: ProgressFn | None,
) -> dict[str, WrittenFile]:
    total = sum(job.size for job in jobs)
    files_total = len(jobs)
    lock = threading.Lock()
    abort = threading.Event()
    state = {"done": 0, "files": 0}
    results: dict[str, WrittenFile] = {}

    def report(label: str) -> None:
        if progress is not None:
            progress(
                ProgressEvent(
                    "write",
                    state["done"],
                    total,
                    label,
                    files_done=state["files"],
                    files_total=files_total,
                )
            )

    def on_bytes_for(label: str) -> Callable[[int], None]:
        def on_bytes(n: int) -> None:
            if abort.is_set():
                raise _Aborted()
            with lock:
                state["done"] += n
                report(label)

        return on_bytes

    # Directories first (sorted, so creation order is deterministic).
    for d in sorted({str(Path(job.path).parent) for job in jobs} - {"."}):
        (staging / d).mkdir(parents=True, exist_ok=True)

    def run(job: FileJob) -> WrittenFile:
        try:
            return run_one(job)
        except OSError as exc:
            # Name the output file (relative to --out), not the hidden staging path.
            raise OSError(exc.errno, exc.strerror or str(exc), job.path) from exc

    def run_one(job: FileJob) -> WrittenFile:
        dst = inside(staging, job.path)
        on_bytes = on_bytes_for(job.path)
        digest: str | None = None
        if job.data is not None:
            write_bytes(dst, job.data, fsync=options.fsync)
            on_bytes(len(job.data))
            digest = hashlib.sha256(job.data).hexdigest()
            method = "written"
        elif job.layout is not None:
            method = write_layout(job.layout, job.source, dst, on_bytes, fsync=options.fsync)
        else:
            assert job.source is not None
            size, method = copy_file(job.source, dst, on_bytes, fsync=options.fsync)
            if size != job.size:
                raise SourceChangedError(f"{job.source} is {size} bytes, was {job.size}")
        if job.mode is not None:
            os.chmod(dst, job.mode & 0o666 & ~umask)
        if digest is None and options.digests:
            digest = _sha256_file(dst)
        with lock:
            state["files"] += 1
            report(job.path)
        return WrittenFile(job.path, job.action, job.size, digest, method)

    # Copies spend their time in the kernel and waiting for the disk, not in Python: a few
    # threads keep both the CPU (page-cache copies) and the disk queue (writeback, fsync) busy
    # even on small machines. Largest first, so that one big shard does not start last.
    workers = options.workers or DEFAULT_WORKERS
    order = sorted(jobs, key=lambda j: (-j.size, j.path))
    if workers <= 1:
        for job in order:
            results[job.path] = run(job)
        return results
    # Daemon threads, not a ThreadPoolExecutor: an interrupt (Ctrl-C, SIGTERM) must end the run
    # even while a copy is stuck in the kernel (a hung network filesystem); an executor's
    # shutdown, and the interpreter's exit, would join that thread and hang.
    pending = iter(order)
    errors: list[BaseException] = []

    def worker() -> None:
        while not abort.is_set():
            with lock:
                job = next(pending, None)
            if job is None:
                return
            try:
                written = run(job)
            except BaseException as exc:  # reported by the main thread
                with lock:
                    errors.append(exc)
                abort.set()
                return
            with lock:
                results[job.path] = written

    threads = [
        threading.Thread(target=worker, name=f"kvscale-copy-{i}", daemon=True)
        for i in range(min(workers, len(order)))
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)  # a timed join lets the main thread take the interrupt
    except BaseException:
        abort.set()
        # Workers stop at their next chunk: wait for them (briefly), so that none creates a
        # file in the staging directory while it is removed; one stuck in the kernel is left.
        deadline = time.monotonic() + ABORT_GRACE_SECONDS
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        raise
    if errors:
        real = [e for e in errors if not isinstance(e, _Aborted)]
        raise (real or errors)[0]
    return results


class OutputChangedError(OutputError):
    """``--out`` changed while kvscale was writing (another run, or another program)."""


def _commit(staging: Path, out: Path, existing: ExistingOutput | None) -> None:
    """Make the staged output visible under ``out`` in one step."""
    parent = out.parent
    if existing is None:
        if not renameat2(staging, out, _RENAME_NOREPLACE):
            if os.path.lexists(out):
                raise OutputChangedError(
                    f"--out {out} appeared while kvscale was writing it (another run?); "
                    "nothing was written"
                )
            os.rename(staging, out)
        fsync_dir(parent)
        return
    # Swap both names atomically: a crash leaves the old or the new output. What was swapped
    # out (now at the staging name) must be the very directory that was checked (same device
    # and inode: not another run's output) and still what it was (empty, or exactly a kvscale
    # output); otherwise swap back and refuse, so that exactly one racing run wins.
    if renameat2(staging, out, _RENAME_EXCHANGE):
        if not _unchanged(staging, existing):
            renameat2(staging, out, _RENAME_EXCHANGE)
            raise OutputChangedError(
                f"--out {out} changed while kvscale was writing it (another run, or new "
                "files); it was left as it is and nothing was written"
            )
        fsync_dir(parent)
        _remove_old(staging)
        return
    # Filesystems without RENAME_EXCHANGE: move the old output aside first. A crash between
    # the two renames leaves both complete outputs under hidden names, none under ``out``.
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}{OLD_MARK}{_run_tag()}-", dir=parent))
    os.rmdir(old)
    os.rename(out, old)
    if not _unchanged(old, existing):
        os.rename(old, out)
        raise OutputChangedError(
            f"--out {out} changed while kvscale was writing it; it was left as it is"
        )
    os.rename(staging, out)
    fsync_dir(parent)
    _remove_old(old)


def _unchanged(old: Path, existing: ExistingOutput) -> bool:
    if _identity(old) != existing.identity:
        return False
    return _is_empty(old) if existing.empty else is_own_output(old)


def _is_empty(path: Path) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _remove_old(old: Path) -> None:
    """Delete a replaced output: only what its manifest lists (files written into it after the
    check stay, in the hidden directory, rather than being lost)."""
    files = read_manifest(old) or []
    for rel in [*files, MANIFEST_NAME]:
        try:
            os.unlink(inside(old, rel) if rel != MANIFEST_NAME else old / MANIFEST_NAME)
        except (OSError, OutputError):
            pass
    for dirpath, _, _ in sorted(os.walk(old), key=lambda t: -len(t[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass
