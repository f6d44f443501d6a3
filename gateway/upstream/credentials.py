"""The credential one upstream server gets: headers from the config, and headers read from files.

Files (`bearer_token_file`, `headers_from_files`) suit secrets mounted by Kubernetes or a
vault agent. Each is read at start (the loader checks it), then re-read whenever its
`stat` changes, so a rotated secret is used without a restart; if a later read fails,
the last good value stays in use and the failure is logged (path only).

Nothing here ever puts a value into a message, a log line or an exception.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gateway.logs import get_logger

log = get_logger("gateway.upstream")

MAX_SECRET_BYTES = 16 * 1024


class SecretFileError(Exception):
    """A secret file that cannot be used; the message names the problem, never the content."""

    def __init__(self, problem: str, *, missing: bool = False) -> None:
        super().__init__(problem)
        self.problem = problem
        self.missing = missing


def read_secret(path: Path) -> str:
    """The file's text without one trailing newline (`\\n` or `\\r\\n`): what `echo` and
    `kubectl create secret --from-file` leave. Anything else in it is kept as is."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_SECRET_BYTES + 1)
    except FileNotFoundError:
        raise SecretFileError(f"secret file not found: {path}", missing=True) from None
    except OSError as exc:
        raise SecretFileError(f"cannot read secret file {path}: {exc.strerror or type(exc).__name__}") from None
    if len(raw) > MAX_SECRET_BYTES:
        raise SecretFileError(f"secret file {path} is larger than {MAX_SECRET_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SecretFileError(f"secret file {path} is not UTF-8 text") from None
    text = text.removesuffix("\n").removesuffix("\r")
    if not text:
        raise SecretFileError(f"secret file {path} is empty")
    if any(c in text for c in "\r\n\0") or any(ord(c) < 0x20 and c != "\t" for c in text):
        raise SecretFileError(f"secret file {path} holds a line break or a control character (one trailing "
                              "newline is allowed)")
    if any(ord(c) > 0xFF for c in text):
        raise SecretFileError(f"secret file {path} holds characters an HTTP header cannot carry")
    return text


@dataclass
class HeaderFile:
    """One header whose value comes from a file; `prefix` is `Bearer ` for a bearer token file."""

    header: str
    path: Path
    prefix: str = ""
    _value: str | None = None
    _stamp: tuple[int, int, int] | None = None
    _failed: bool = False

    def value(self, server: str) -> str | None:
        try:
            st = os.stat(self.path)
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            if stamp != self._stamp or self._value is None:
                self._value, self._stamp = self.prefix + read_secret(self.path), stamp
                if self._failed:
                    log.info("upstream.credential_file_readable", server=server, header=self.header,
                             path=str(self.path))
                self._failed = False
        except (OSError, SecretFileError) as exc:
            if not self._failed:
                problem = exc.problem if isinstance(exc, SecretFileError) else (exc.strerror or type(exc).__name__)
                log.warning("upstream.credential_file_unreadable", server=server, header=self.header,
                            path=str(self.path), problem=problem, kept_previous=self._value is not None)
            self._failed = True
        return self._value


class UpstreamCredentials:
    """The headers that authenticate the gateway to one upstream server (and nothing of the host's)."""

    def __init__(self, server: str, static: Mapping[str, str], files: tuple[HeaderFile, ...] = ()) -> None:
        self.server = server
        self._static = dict(static)
        self._files = files

    def headers(self) -> dict[str, str]:
        if not self._files:
            return self._static
        out = dict(self._static)
        for f in self._files:
            value = f.value(self.server)
            if value is not None:
                out[f.header] = value
        return out

    def __repr__(self) -> str:  # never the values
        names = [*self._static, *(f.header for f in self._files)]
        return f"UpstreamCredentials({self.server!r}, headers={names!r})"


def header_files(base: Path, bearer_token_file: str | None, headers_from_files: Mapping[str, str]) -> tuple[
    HeaderFile, ...
]:
    """The config's file-backed headers, paths resolved against the config file's folder."""
    # Absolute, but symlinks not resolved: Kubernetes rotates a mounted secret by swapping a symlink.
    files = [HeaderFile(name, Path(os.path.abspath(base / path))) for name, path in headers_from_files.items()]
    if bearer_token_file is not None:
        files.append(HeaderFile("Authorization", Path(os.path.abspath(base / bearer_token_file)), "Bearer "))
    return tuple(files)


def as_credentials(server: str, credentials: Mapping[str, str] | UpstreamCredentials) -> UpstreamCredentials:
    """A connector's credentials: given as they are, or built from plain headers (tests, the SDK probe)."""
    return credentials if isinstance(credentials, UpstreamCredentials) else UpstreamCredentials(server, credentials)
