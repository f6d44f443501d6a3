"""Upstream credentials from the environment and from secret files: loading, checking, rotation, no leaks."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.config import load_config
from gateway.errors import ConfigError
from gateway.upstream.credentials import UpstreamCredentials, header_files, read_secret

SECRET = "s3cr3t-value-that-must-not-leak"


def write(tmp: Path, config: str) -> Path:
    path = tmp / "gateway.yaml"
    path.write_text(config)
    return path


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Ran]:
    """The CLI in this process (fast); every case here ends before `serve` would listen."""

    def run(*args: str, env: dict[str, str] | None = None) -> Ran:
        with monkeypatch.context() as patched:
            for key, value in (env or {}).items():
                patched.setenv(key, value)
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = int(exc.code or 0)
        out = capsys.readouterr()
        return Ran(code, out.out, out.err)

    return run


def test_secret_file_loses_one_trailing_newline_only(tmp_path: Path) -> None:
    for content, expected in ((f"{SECRET}\n", SECRET), (f"{SECRET}\r\n", SECRET), (SECRET, SECRET),
                              (f" {SECRET}\t", f" {SECRET}\t")):
        (tmp_path / "t").write_text(content, newline="")
        assert read_secret(tmp_path / "t") == expected


@pytest.mark.parametrize(("content", "problem"), [
    ("", "is empty"), ("\n", "is empty"), (f"{SECRET}\n\n", "line break"), ("a\nb", "line break"),
    ("a\x00b", "control character"), ("ключ", "cannot carry"),
])
def test_unusable_secret_files_name_the_problem_never_the_content(tmp_path: Path, content: str, problem: str) -> None:
    (tmp_path / "token").write_text(content, newline="")
    cfg = write(tmp_path, "servers: {a: {url: 'http://127.0.0.1:1/mcp', bearer_token_file: token}}")
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert info.value.path == "servers.a.bearer_token_file"
    assert problem in info.value.problem
    if content.strip():
        assert content.strip() not in str(info.value)


def test_file_headers_are_relative_to_the_config_and_rotate_without_restart(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "token").write_text(f"{SECRET}\n")
    (tmp_path / "secrets" / "key").write_text("key-1\n")
    cfg = load_config(write(tmp_path, """
servers:
  a:
    url: http://127.0.0.1:1/mcp
    headers: {X-Static: plain}
    bearer_token_file: secrets/token
    headers_from_files: {X-Api-Key: secrets/key}
"""))
    server = cfg.gateway.servers["a"]
    creds = UpstreamCredentials("a", server.headers, header_files(
        cfg.path.parent, server.bearer_token_file, server.headers_from_files))
    assert creds.headers() == {"X-Static": "plain", "Authorization": f"Bearer {SECRET}", "X-Api-Key": "key-1"}
    assert SECRET not in repr(creds) and SECRET not in repr(cfg)
    # Kubernetes rotates a mounted secret by swapping files: the new value is used at once.
    (tmp_path / "secrets" / "key.new").write_text("key-2\n")
    os.replace(tmp_path / "secrets" / "key.new", tmp_path / "secrets" / "key")
    assert creds.headers()["X-Api-Key"] == "key-2"
    # A file that goes away (or turns bad) keeps the last good value in use.
    (tmp_path / "secrets" / "key").unlink()
    assert creds.headers()["X-Api-Key"] == "key-2"


@pytest.mark.parametrize(("server", "problem"), [
    ("{command: x, bearer_token_file: t}", "for url servers"),
    ("{url: 'http://h/mcp', bearer_token_file: t, headers: {authorization: x}}", "given twice"),
    ("{url: 'http://h/mcp', headers_from_files: {X-K: t}, headers: {x-k: v}}", "given twice"),
    ("{url: 'http://h/mcp', headers_from_files: {'Bad Name': t}}", "not a valid HTTP header name"),
    ("{url: 'http://h/mcp', headers: {X-K: \"a\\r\\nInjected: 1\"}}", "line break"),
])
def test_header_config_mistakes_are_errors(tmp_path: Path, server: str, problem: str) -> None:
    (tmp_path / "t").write_text("x\n")
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, f"servers: {{a: {server}}}"))
    assert info.value.path.startswith("servers.a")
    assert problem in info.value.problem
    assert "Injected" not in str(info.value)


def test_check_names_a_missing_variable_or_file_and_allow_missing_env_makes_them_warnings(
    tmp_path: Path, run_cli: Callable[..., Ran]
) -> None:
    cfg = write(tmp_path, """
servers:
  a:
    url: http://127.0.0.1:1/mcp
    headers: {Authorization: "Bearer ${GW_TEST_UNSET_TOKEN}"}
  b:
    url: http://127.0.0.1:1/mcp
    bearer_token_file: secrets/b-token
""")
    assert "GW_TEST_UNSET_TOKEN" not in os.environ
    strict = run_cli("check", "--config", str(cfg))
    assert strict.returncode == 2
    assert f"{cfg}: servers.a.headers.Authorization: environment variable GW_TEST_UNSET_TOKEN is not set" in (
        strict.stderr)
    assert "servers.b.bearer_token_file" in strict.stderr  # the second problem is named too
    lint = run_cli("check", "--config", str(cfg), "--allow-missing-env")
    assert lint.returncode == 0, lint.stderr
    assert "config warning:" in lint.stderr and "GW_TEST_UNSET_TOKEN" in lint.stderr
    assert "secret file not found" in lint.stderr and lint.stdout.startswith("ok:")
    # serve refuses to start, naming the variable (it never gets to listen)
    serve = run_cli("serve", "--config", str(cfg), "--port", "0")
    assert serve.returncode == 2 and "GW_TEST_UNSET_TOKEN is not set" in serve.stderr
    # with the variable set, only the missing file stops it
    set_env = run_cli("serve", "--config", str(cfg), "--port", "0", env={"GW_TEST_UNSET_TOKEN": SECRET})
    assert set_env.returncode == 2
    assert "servers.b.bearer_token_file: secret file not found" in set_env.stderr
    assert SECRET not in set_env.stderr + set_env.stdout


def test_check_and_explain_never_print_a_secret(tmp_path: Path, run_cli: Callable[..., Ran]) -> None:
    (tmp_path / "token").write_text(f"{SECRET}\n")
    cfg = write(tmp_path, """
servers:
  a:
    url: http://127.0.0.1:1/mcp
    headers: {X-Env: "${GW_TEST_SECRET_ENV}"}
    bearer_token_file: token
""")
    env = {"GW_TEST_SECRET_ENV": SECRET + "-env"}
    check = run_cli("check", "--config", str(cfg), env=env)
    assert check.returncode == 0, check.stderr
    (tmp_path / "ask.json").write_text('{"message": "hi", "requestedSchema": {"type": "object", "properties": {}}}')
    explain = run_cli("explain", "--config", str(cfg), "--server", "a", str(tmp_path / "ask.json"), env=env)
    assert explain.returncode == 0, explain.stderr
    for out in (check.stdout, check.stderr, explain.stdout, explain.stderr):
        assert SECRET not in out
