"""Config and policy loading: frozen models, ${ENV}, one clear error naming file, key path and problem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.config import load_config
from gateway.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def write(tmp: Path, config: str, policies: dict[str, str] | None = None) -> Path:
    for name, text in (policies or {}).items():
        (tmp / name).write_text(text)
    path = tmp / "gateway.yaml"
    path.write_text(config)
    return path


CONTRACT_EXAMPLE = """
listen: {host: 127.0.0.1, port: 8808}
state:
  backend: memory
servers:
  crm:
    url: http://127.0.0.1:9101/mcp
    policy: policies/default.yaml
  tickets:
    url: http://127.0.0.1:9102/mcp
    headers: {Authorization: "Bearer ${TICKETS_TOKEN}"}
    policy: policies/strict.yaml
  files:
    command: python
    args: [-m, files_server]
    env: {FILES_ROOT: /srv/files}
    cwd: /srv
    policy: policies/default.yaml
"""


def test_contract_example_loads_with_env_expansion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "policies").mkdir()
    for name in ("default.yaml", "strict.yaml"):
        (tmp_path / "policies" / name).write_text((REPO / "policies" / name).read_text())
    monkeypatch.setenv("TICKETS_TOKEN", "s3cret")
    cfg = load_config(write(tmp_path, CONTRACT_EXAMPLE))
    assert cfg.gateway.servers["tickets"].headers["Authorization"] == "Bearer s3cret"
    assert cfg.gateway.servers["files"].command == "python"
    assert cfg.policies["tickets"].elicitation.url_mode.allowed_hosts == ("auth.example.com", "*.login.example.org")
    assert cfg.policies["crm"] is cfg.policies["files"]  # one file, loaded once
    with pytest.raises(ValidationError):
        cfg.gateway.listen.port = 1  # type: ignore[misc]  # frozen


@pytest.mark.parametrize(
    ("config", "path", "problem"),
    [
        ("servers: {a: {url: http://x/mcp, colour: red}}", "servers.a.colour", "unknown key"),
        ("servers: {a: {url: ftp://x}}", "servers.a", "http://"),
        ("servers: {a: {url: http://x, command: y}}", "servers.a", "exactly one"),
        ("servers: {}", "servers", "at least 1"),
        ("listen: {port: 99999}\nservers: {a: {url: http://x}}", "listen.port", "less than or equal"),
        ("state: {backend: redis}\nservers: {a: {url: http://x}}", "state", "needs url"),
        ("servers: {a: {url: 'http://x/${NOPE_NOT_SET}'}}", "servers.a.url", "NOPE_NOT_SET is not set"),
        ("servers: {a: {url: http://x, policy: missing.yaml}}", "servers.a.policy", "not found"),
        ("servers: [1, 2]", "servers", "dictionary"),
        ("servers: {crm__eu: {url: http://x}}", "", "must not contain '__'"),
        ("servers: {a: {url: http://x}}\naggregate: {list_timeout_seconds: 0}", "aggregate.list_timeout_seconds",
         "greater than 0"),
        ("- 1", "", "mapping"),
        ("servers: {a: {url: http://x}\n", "", "invalid YAML: line"),
    ],
)
def test_bad_config_names_file_key_and_problem(tmp_path: Path, config: str, path: str, problem: str) -> None:
    cfg_path = write(tmp_path, config)
    with pytest.raises(ConfigError) as info:
        load_config(cfg_path)
    assert info.value.file == str(cfg_path)
    assert info.value.path == path
    assert problem in info.value.problem


@pytest.mark.parametrize(
    ("policy", "path", "problem"),
    [
        ("elicitation: {modes: [form, sms]}", "elicitation.modes.1", "'form' or 'url'"),
        ("elicitation: {rate_limit: lots}", "elicitation.rate_limit", "limits notation"),
        ("elicitation: {sensitive_fields: maybe}", "elicitation.sensitive_fields", "'block' or 'allow'"),
        ("elicitation: {url_mode: {allowed_hosts: ['https://x.com/']}}", "elicitation.url_mode.allowed_hosts", "host name"),
        ("elicitation: {tag_origin: true, extra: 1}", "elicitation.extra", "unknown key"),
        ("elicitation: {modes: [form, form]}", "elicitation.modes", "repeat"),
    ],
)
def test_bad_policy_names_policy_file(tmp_path: Path, policy: str, path: str, problem: str) -> None:
    cfg_path = write(tmp_path, "servers: {a: {url: http://x, policy: p.yaml}}", {"p.yaml": policy})
    with pytest.raises(ConfigError) as info:
        load_config(cfg_path)
    assert info.value.file == str((tmp_path / "p.yaml").resolve())
    assert info.value.path == path
    assert problem in info.value.problem


def test_env_default_syntax(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "servers: {a: {url: 'http://${GW_TEST_HOST:-127.0.0.1}:1/mcp'}}"))
    assert cfg.gateway.servers["a"].url == "http://127.0.0.1:1/mcp"


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args], capture_output=True, text=True, input=stdin, cwd=REPO, timeout=60
    )


def test_check_command_exit_codes(tmp_path: Path) -> None:
    good = run_cli("check", "--config", "examples/demo.yaml")
    assert good.returncode == 0, good.stderr
    assert "demo" in good.stdout
    bad = write(tmp_path, "servers: {a: {url: http://x, policy: p.yaml}}", {"p.yaml": "elicitation: {modes: nope}"})
    result = run_cli("check", "--config", str(bad))
    assert result.returncode == 2
    assert str((tmp_path / "p.yaml").resolve()) in result.stderr
    assert "elicitation.modes" in result.stderr
    missing = run_cli("check", "--config", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "cannot read file" in missing.stderr


def test_shipped_policies_are_valid(tmp_path: Path) -> None:
    lines = "\n".join(
        f"  {p.stem}: {{url: http://127.0.0.1:1/mcp, policy: {p}}}" for p in sorted((REPO / "policies").glob("*.yaml"))
    )
    cfg = load_config(write(tmp_path, "servers:\n" + lines))
    assert {"default", "strict", "monitor"} <= set(cfg.policies)
    assert cfg.policies["monitor"].elicitation.enforce is False


def test_policy_schema_json_is_fresh() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gateway.policy.schema_export", "--check", "policies/schema.json"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_a_server_generation_changes_with_its_upstream_not_with_its_credential_or_policy() -> None:
    from gateway.config import ServerConfig
    from gateway.http.servers import generation

    base = ServerConfig(url="http://crm/mcp", headers={"Authorization": "Bearer one"}, policy="a.yaml")
    assert generation(base) == generation(base.model_copy(update={"headers": {"Authorization": "Bearer two"}}))
    assert generation(base) == generation(base.model_copy(update={"policy": "b.yaml"}))
    assert generation(base) != generation(base.model_copy(update={"url": "http://crm2/mcp"}))
    assert "one" not in generation(base)
