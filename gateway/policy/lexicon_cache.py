"""The bundled lexicon kept on disk between starts (opt-in: `ELICITATION_GATEWAY_LEXICON_CACHE=<dir>`).

Building the lexicon is most of a start (about a second; several under a line tracer). A built one is
pickled to `<dir>/lexicon-<key>.pickle` and read back in about half that. The key hashes everything the
build reads: every file of `gateway/policy` (code and data) and the Python version, so a changed lexicon,
detector or interpreter never meets an old file.

A cache file is read only if it can do nothing but hold a lexicon:
- the unpickler resolves two names only, the lexicon's own classes; anything else refuses the file;
- the file and its directory must belong to this user and be writable by no one else (as ssh does with
  its keys): a file someone else could have written is not read;
- a digest of the pickle in the file's header catches a truncated or damaged file.

A file that fails any of these is ignored and the lexicon is built as without a cache; a cache that
cannot be written is skipped. Either is noted (`take_notes`): the lexicon loads before logging is set
up, and `explain` writes JSON on stdout, so the caller reports them (`serve` logs them, the CLI prints
them to stderr).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import os
import pickle
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any, Final, TypeVar

ENV_VAR: Final = "ELICITATION_GATEWAY_LEXICON_CACHE"
_MAGIC: Final = b"elicitation-gateway lexicon 1\n"
_ALLOWED: Final = frozenset({("gateway.policy.secret_lexicon", "Lexicon"), ("gateway.policy.secret_lexicon", "_Entry")})

T = TypeVar("T")
_notes: list[tuple[str, str, dict[str, str]]] = []


def take_notes() -> list[tuple[str, str, dict[str, str]]]:
    """What the cache did since the last call, as (level, event, fields), for the caller to log."""
    notes = list(_notes)
    _notes.clear()
    return notes


class _LexiconUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a lexicon")
        return super().find_class(module, name)


def build_key() -> str:
    """A digest of every input of the build: the policy package's files and the interpreter."""
    digest = hashlib.sha256(_MAGIC + sys.version.encode())
    root = Path(str(resources.files("gateway.policy")))
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:32]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Building or reading the lexicon makes some 85,000 tuples and dicts, none of them garbage: each pass of
    the cyclic collector on the way walks them all again. Paused, a read from the cache takes 0.6 s instead of
    1.0 s and a build 1.45 s instead of 2.0 (docs/performance.md). Reference counting still frees as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def cached_lexicon(build: Callable[[], T], kind: type[T], folder: str | None = None) -> T:
    """The lexicon (a `kind`) from the cache folder (`ELICITATION_GATEWAY_LEXICON_CACHE`) if a good one is
    there, else `build()`, written there for the next start. Without the variable, just `build()`."""
    with _collector_paused():
        return _cached_lexicon(build, kind, folder)


def _cached_lexicon(build: Callable[[], T], kind: type[T], folder: str | None) -> T:
    folder = folder if folder is not None else os.environ.get(ENV_VAR)
    if not folder:
        return build()
    path = Path(folder) / f"lexicon-{build_key()}.pickle"
    if path.exists():
        try:
            lexicon = _read(path, kind)
        except Exception as exc:  # whatever a bad file raises, the lexicon is built instead
            _notes.append(("warning", "lexicon.cache_ignored", {"path": str(path), "reason": str(exc)[:200]}))
        else:
            _notes.append(("info", "lexicon.cache_read", {"path": str(path)}))
            return lexicon
    lexicon = build()
    try:
        _write(path, lexicon)
    except (OSError, ValueError) as exc:
        _notes.append(("warning", "lexicon.cache_not_written", {"path": str(path), "reason": str(exc)[:200]}))
    else:
        _notes.append(("info", "lexicon.cache_written", {"path": str(path)}))
    return lexicon


def _private(st: os.stat_result, what: str) -> None:
    if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ValueError(f"{what} belongs to another user or others can write it")


def _read(path: Path, kind: type[T]) -> T:
    _private(os.stat(path.parent), "the cache folder")
    with open(path, "rb") as f:
        _private(os.fstat(f.fileno()), "the cache file")
        data = f.read()
    if not data.startswith(_MAGIC):
        raise ValueError("not a lexicon cache file")
    digest, _, payload = data[len(_MAGIC):].partition(b"\n")
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        raise ValueError("the cache file is damaged (digest mismatch)")
    lexicon = _LexiconUnpickler(io.BytesIO(payload)).load()
    if type(lexicon) is not kind:
        raise ValueError("the cache file holds no lexicon")
    return lexicon


def _write(path: Path, lexicon: object) -> None:
    payload = pickle.dumps(lexicon, protocol=pickle.HIGHEST_PROTOCOL)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _private(os.stat(path.parent), "the cache folder")  # never written where another user could swap it
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".lexicon-", suffix=".tmp")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
        os.replace(tmp, path)  # atomic: replicas starting together never read half a file
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    for old in path.parent.glob("lexicon-*.pickle"):  # earlier builds' files: one file per folder
        if old != path:
            old.unlink(missing_ok=True)

