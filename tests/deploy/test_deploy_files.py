"""The deployment files in deploy/ say what the issue asks, and keep saying it.

Each rule is a function that returns the problems it finds (empty = fine). The
tests run every rule on the real files, and run the same rules on copies broken
on purpose, so a rule that stopped finding anything would fail too.

Compose and Kubernetes gateway configs are checked with the real CLI
(`elicitation-gateway check`) on a copy of the file tree the container sees,
rebuilt from the compose volumes / the Deployment's ConfigMap items.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "kubernetes"
COMPOSE_FILE = DEPLOY / "docker-compose.yaml"
HAPROXY_CFG = DEPLOY / "haproxy.cfg"
BIN = Path(sys.executable).parent

Doc = dict[str, Any]


# ---------------------------------------------------------------- loading


def load_compose() -> Doc:
    data = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def load_manifests() -> list[Doc]:
    docs: list[Doc] = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                doc.setdefault("metadata", {})["__file__"] = path.name
                docs.append(doc)
    return docs


def haproxy_lines(text: str) -> list[str]:
    """Config lines without comments and blank lines, whitespace normalised."""
    out = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            out.append(" ".join(line.split()))
    return out


def haproxy_sections(text: str) -> dict[str, list[str]]:
    """{"backend gateways": [lines...], "defaults": [...], ...}"""
    sections: dict[str, list[str]] = {}
    current = ""
    for line in haproxy_lines(text):
        word = line.split()[0]
        if word in {"global", "defaults", "frontend", "backend", "listen", "resolvers", "peers", "userlist"}:
            current = line
            sections[current] = []
        else:
            sections.setdefault(current, []).append(line)
    return sections


def of_kind(docs: list[Doc], kind: str) -> list[Doc]:
    return [d for d in docs if d.get("kind") == kind]


def gateway_deployment(docs: list[Doc]) -> Doc:
    found = [
        d
        for d in of_kind(docs, "Deployment")
        if any("serve" in (c.get("args") or []) for c in d["spec"]["template"]["spec"]["containers"])
    ]
    assert len(found) == 1, f"expected one gateway Deployment (container args include 'serve'), found {len(found)}"
    return found[0]


def gateway_container(dep: Doc) -> Doc:
    (container,) = [c for c in dep["spec"]["template"]["spec"]["containers"] if "serve" in (c.get("args") or [])]
    return container


def config_arg(argv: list[str]) -> str:
    assert "--config" in argv, f"no --config in {argv}"
    return argv[argv.index("--config") + 1]


def compose_gateways(compose: Doc) -> dict[str, Doc]:
    """Services that run `serve` (the gateway replicas)."""
    return {
        name: svc
        for name, svc in compose.get("services", {}).items()
        if isinstance(svc.get("command"), list) and svc["command"][:1] == ["serve"]
    }


def compose_mounts(svc: Doc) -> list[tuple[str, str]]:
    """(host source, container target) of every bind mount of a service."""
    mounts = []
    for vol in svc.get("volumes", []):
        if isinstance(vol, str):
            parts = vol.split(":")
            if len(parts) >= 2 and parts[0].startswith((".", "/", "~")):
                mounts.append((parts[0], parts[1]))
        elif vol.get("type") == "bind":
            mounts.append((vol["source"], vol["target"]))
    return mounts


# ---------------------------------------------------------------- gateway CLI


def materialize(root: Path, files: dict[str, Path | str]) -> None:
    """Lay out {container path: host file/dir or text} under root."""
    for target, source in files.items():
        dest = root / target.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, str):
            dest.write_text(source, encoding="utf-8")
        elif source.is_dir():
            shutil.copytree(source, dest, dirs_exist_ok=True)
        else:
            shutil.copyfile(source, dest)


def gateway_check(config: Path) -> subprocess.CompletedProcess[str]:
    exe = BIN / "elicitation-gateway"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "gateway"]
    env = dict(os.environ)
    # ${VAR} without a default must be set for the config to load; any value will do here.
    for var in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", config.read_text(encoding="utf-8")):
        env.setdefault(var, "placeholder")
    return subprocess.run(
        [*cmd, "check", "--config", str(config)], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def compose_container_config(compose: Doc, service: str, root: Path) -> Path:
    svc = compose["services"][service]
    materialize(root, {target: (DEPLOY / source).resolve() for source, target in compose_mounts(svc)})
    return root / config_arg(svc["command"]).lstrip("/")


def k8s_container_config(docs: list[Doc], root: Path) -> Path:
    dep = gateway_deployment(docs)
    pod = dep["spec"]["template"]["spec"]
    container = gateway_container(dep)
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    configmaps = {d["metadata"]["name"]: d for d in of_kind(docs, "ConfigMap")}
    for mount in container.get("volumeMounts", []):
        source = volumes[mount["name"]].get("configMap")
        if not source:
            continue
        data = configmaps[source["name"]]["data"]
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        materialize(root, {f"{mount['mountPath']}/{item['path']}": data[item["key"]] for item in items})
    return root / config_arg(container["args"]).lstrip("/")


# ---------------------------------------------------------------- rules: compose + load balancer

AFFINITY = [
    (re.compile(r"\bstick(-table|\s+on|\s+match|\s+store)?\b"), "HAProxy stick table"),
    (re.compile(r"\bbalance\s+(source|hdr\(|rdp-cookie|url_param|uri)"), "HAProxy hash-based balance"),
    (re.compile(r"^(cookie\s|.*\bcookie\s+\S+\s+(insert|rewrite|prefix))"), "cookie persistence"),
    (re.compile(r"\bappsession\b|\bpersist\b"), "HAProxy persistence"),
    (re.compile(r"\bip_hash\b|\bsticky\b|^\s*hash\s"), "nginx affinity"),
]


def compose_problems(compose: Doc) -> list[str]:
    problems = []
    services = compose.get("services", {})
    gateways = compose_gateways(compose)
    if len(gateways) != 2:
        problems.append(f"expected 2 gateway replicas, found {sorted(gateways)}")
    configs = {
        name: [t for s, t in compose_mounts(svc) if t == config_arg(svc["command"])] for name, svc in gateways.items()
    }
    for name, mounted in configs.items():
        if not mounted:
            problems.append(f"{name}: its --config file is not mounted")
    sources = {
        name: sorted(s for s, t in compose_mounts(svc) if t == config_arg(svc["command"]))
        for name, svc in gateways.items()
    }
    if len({tuple(v) for v in sources.values()}) > 1:
        problems.append(f"replicas mount different configs: {sources}")
    for name, svc in gateways.items():
        for source, _ in compose_mounts(svc):
            if source.endswith(".yaml") and (DEPLOY / source).is_file():
                cfg = yaml.safe_load((DEPLOY / source).read_text(encoding="utf-8"))
                state = cfg.get("state", {})
                if state.get("backend") != "redis":
                    problems.append(f"{name}: state.backend is {state.get('backend')!r}, not redis")
                    continue
                url = urlsplit(state.get("url", ""))
                if url.hostname not in services or "redis" not in str(services[url.hostname].get("image", "")):
                    problems.append(f"{name}: state.url host {url.hostname!r} is not the compose Redis service")
                if (url.port or 6379) != 6379:
                    problems.append(f"{name}: state.url port {url.port} is not Redis' 6379")
        if "redis" not in (svc.get("depends_on") or {}):
            problems.append(f"{name}: does not depend on redis")
    lbs = [name for name, svc in services.items() if "haproxy" in str(svc.get("image", ""))]
    if len(lbs) != 1:
        problems.append(f"expected one HAProxy load balancer service, found {lbs}")
    else:
        lb = services[lbs[0]]
        if not any(s.endswith("haproxy.cfg") for s, _ in compose_mounts(lb)):
            problems.append("the load balancer does not mount deploy/haproxy.cfg")
        if not lb.get("ports"):
            problems.append("the load balancer publishes no port")
    for name in gateways:
        if services[name].get("ports"):
            problems.append(f"{name}: publishes ports, bypassing the load balancer")
    return problems


def compose_reference_problems(compose: Doc, base: Path = DEPLOY) -> list[str]:
    """Every file or directory the compose file points at exists."""
    problems = []
    for name, svc in compose.get("services", {}).items():
        for source, _ in compose_mounts(svc):
            if not (base / source).exists():
                problems.append(f"{name}: volume source {source} does not exist")
        build = svc.get("build")
        if build:
            context = base / (build if isinstance(build, str) else build.get("context", "."))
            if not context.is_dir():
                problems.append(f"{name}: build context {context} does not exist")
            elif isinstance(build, dict) and not (context / build.get("dockerfile", "Dockerfile")).is_file():
                problems.append(f"{name}: dockerfile {build.get('dockerfile')} not found in {context}")
        env_files = svc.get("env_file") or []
        for env_file in [env_files] if isinstance(env_files, str) else env_files:
            path = env_file if isinstance(env_file, str) else env_file["path"]
            if not (base / path).is_file():
                problems.append(f"{name}: env_file {path} does not exist")
    return problems


def haproxy_problems(text: str, compose: Doc) -> list[str]:
    problems = []
    for line in haproxy_lines(text):
        for pattern, what in AFFINITY:
            if pattern.search(line):
                problems.append(f"{what}: {line!r}")
    sections = haproxy_sections(text)
    backends = {k: v for k, v in sections.items() if k.startswith("backend ")}
    if len(backends) != 1:
        return [*problems, f"expected one backend, found {sorted(backends)}"]
    (lines,) = backends.values()
    if "balance roundrobin" not in lines:
        problems.append("backend is not 'balance roundrobin'")
    gateways = compose_gateways(compose)
    ports = set()
    for svc in gateways.values():
        for source, target in compose_mounts(svc):
            if target == config_arg(svc["command"]):
                cfg = yaml.safe_load((DEPLOY / source).read_text(encoding="utf-8"))
                ports.add(cfg.get("listen", {}).get("port", 8808))
    servers = {}
    for line in lines:
        words = line.split()
        if words[0] == "server":
            servers[words[1]] = words[2]
    expected = {f"{name}:{port}" for name in gateways for port in ports}
    if set(servers.values()) != expected:
        problems.append(f"backend servers {sorted(servers.values())} are not the gateway replicas {sorted(expected)}")
    checked = any(line.startswith("default-server") and " check" in f" {line} " for line in lines)
    for name in servers:
        own = next(line for line in lines if line.split()[:2] == ["server", name])
        if not checked and " check" not in f" {own} ":
            problems.append(f"server {name} is not health-checked")
    readyz = any(
        re.match(r"(option httpchk (GET )?/readyz\b|http-check send .*\buri /readyz\b)", line) for line in lines
    )
    if "option httpchk" not in " ".join(lines) or not readyz:
        problems.append("health check does not GET /readyz")
    # Streams: no compression or request buffering, idle timeouts long enough for a user to answer.
    everything = haproxy_lines(text)
    for line in everything:
        if line.startswith(("compression ", "option http-buffer-request")):
            problems.append(f"buffers or compresses streams: {line!r}")
    timeouts = {}
    for section in ("defaults", *backends, *(k for k in sections if k.startswith("frontend "))):
        for line in sections.get(section, []):
            words = line.split()
            if words[0] == "timeout" and len(words) == 3:
                timeouts[words[1]] = words[2]
    for name in ("client", "server", "tunnel"):
        if seconds(timeouts.get(name, "0")) < 600:
            problems.append(f"timeout {name} is {timeouts.get(name)!r}: SSE streams need >= 10m")
    return problems


def seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+)(us|ms|s|m|h|d)?", value)
    if not match:
        return 0.0
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1e-3}[match.group(2)]
    return int(match.group(1)) * scale


# ---------------------------------------------------------------- rules: Kubernetes


def selects(selector: Doc, labels: Doc) -> bool:
    match = selector.get("matchLabels", selector)
    return bool(match) and all(labels.get(k) == v for k, v in match.items())


def container_port(container: Doc, port: int | str) -> int | None:
    for p in container.get("ports", []):
        if port in (p.get("name"), p["containerPort"]):
            return int(p["containerPort"])
    return None


def k8s_problems(docs: list[Doc]) -> list[str]:
    problems = []
    dep = gateway_deployment(docs)
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    if not selects(dep["spec"]["selector"], pod_labels):
        problems.append("Deployment selector does not select its own pods")
    container = gateway_container(dep)
    pod = dep["spec"]["template"]["spec"]

    # Probes: /healthz for liveness (and startup), /readyz for readiness, on the gateway's port.
    cfg_map = {d["metadata"]["name"]: d for d in of_kind(docs, "ConfigMap")}
    listen_port = 8808
    for cm in cfg_map.values():
        if "config.yaml" in cm.get("data", {}):
            listen_port = yaml.safe_load(cm["data"]["config.yaml"]).get("listen", {}).get("port", 8808)
    want = {"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"}
    for probe_name, path in want.items():
        probe = container.get(probe_name)
        if probe is None:
            if probe_name != "startupProbe":
                problems.append(f"no {probe_name}")
            continue
        get = probe.get("httpGet") or {}
        if get.get("path") != path:
            problems.append(f"{probe_name} checks {get.get('path')!r}, not {path}")
        if container_port(container, get.get("port", -1)) != listen_port:
            problems.append(f"{probe_name} port {get.get('port')!r} is not the container port {listen_port}")

    # Resources and security context.
    resources = container.get("resources", {})
    for part in ("requests", "limits"):
        for res in ("cpu", "memory"):
            if res not in resources.get(part, {}):
                problems.append(f"no {part}.{res}")
    sc = {**pod.get("securityContext", {}), **container.get("securityContext", {})}
    if sc.get("runAsNonRoot") is not True:
        problems.append("runAsNonRoot is not true")
    if sc.get("readOnlyRootFilesystem") is not True:
        problems.append("readOnlyRootFilesystem is not true")
    if sc.get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation is not false")

    # Replicas: the HPA owns the count (>= 2); a fixed count would fight it on every apply.
    hpas = [
        h
        for h in of_kind(docs, "HorizontalPodAutoscaler")
        if h["spec"]["scaleTargetRef"].get("kind") == "Deployment"
        and h["spec"]["scaleTargetRef"].get("name") == dep["metadata"]["name"]
    ]
    if len(hpas) != 1:
        problems.append(f"expected one HPA targeting Deployment {dep['metadata']['name']}, found {len(hpas)}")
    else:
        hpa = hpas[0]
        if hpa["apiVersion"] != "autoscaling/v2":
            problems.append(f"HPA apiVersion {hpa['apiVersion']}")
        if hpa["spec"].get("minReplicas", 1) < 2:
            problems.append(f"HPA minReplicas {hpa['spec'].get('minReplicas', 1)} < 2")
        if hpa["spec"]["maxReplicas"] < hpa["spec"].get("minReplicas", 1):
            problems.append("HPA maxReplicas < minReplicas")
        if not any(m.get("resource", {}).get("name") == "cpu" for m in hpa["spec"].get("metrics", [])):
            problems.append("HPA does not scale on CPU")
        if "cpu" not in resources.get("requests", {}):
            problems.append("CPU utilization needs a CPU request")
    if "replicas" in dep["spec"]:
        problems.append(f"Deployment sets replicas: {dep['spec']['replicas']} although the HPA owns the count")

    # PodDisruptionBudget.
    pdbs = [p for p in of_kind(docs, "PodDisruptionBudget") if selects(p["spec"].get("selector", {}), pod_labels)]
    if len(pdbs) != 1:
        problems.append(f"expected one PodDisruptionBudget selecting the gateway pods, found {len(pdbs)}")
    else:
        pdb = pdbs[0]
        if pdb["apiVersion"] != "policy/v1":
            problems.append(f"PDB apiVersion {pdb['apiVersion']}")
        if pdb["spec"].get("minAvailable") != 1:
            problems.append(f"PDB minAvailable is {pdb['spec'].get('minAvailable')!r}, not 1")
    for d in of_kind(docs, "Deployment"):
        if d is not dep and any(
            selects(p["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"]) for p in pdbs
        ):
            problems.append(f"the gateway PDB also selects the pods of {d['metadata']['name']}")

    # Service: no affinity, selects the gateway pods, reaches the container port.
    services = [s for s in of_kind(docs, "Service") if selects(s["spec"].get("selector", {}), pod_labels)]
    if len(services) != 1:
        problems.append(f"expected one Service for the gateway pods, found {len(services)}")
    for svc in services:
        if svc["spec"].get("sessionAffinity", "None") != "None":
            problems.append(f"Service sessionAffinity is {svc['spec']['sessionAffinity']}")
        for port in svc["spec"]["ports"]:
            if container_port(container, port.get("targetPort", port["port"])) != listen_port:
                problems.append(f"Service targetPort {port.get('targetPort')!r} is not the gateway port")

    # State: Redis, the in-cluster Redis Service (or an external one named in the config).
    for cm in cfg_map.values():
        if "config.yaml" not in cm.get("data", {}):
            continue
        state = yaml.safe_load(cm["data"]["config.yaml"]).get("state", {})
        if state.get("backend") != "redis":
            problems.append(f"ConfigMap {cm['metadata']['name']}: state.backend is {state.get('backend')!r}")
            continue
        url = urlsplit(state.get("url", ""))
        named = {s["metadata"]["name"]: s for s in of_kind(docs, "Service")}
        redis_svc = named.get(url.hostname or "")
        if redis_svc is None:
            problems.append(f"state.url host {url.hostname!r} is no Service here")
        elif (url.port or 6379) not in [p["port"] for p in redis_svc["spec"]["ports"]]:
            problems.append(f"state.url port {url.port} is not a port of Service {url.hostname}")
    return problems


def kustomization_problems() -> list[str]:
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))
    listed = set(kust.get("resources", []))
    present = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    problems = [f"{name} is not in kustomization.yaml" for name in sorted(present - listed)]
    problems += [f"kustomization.yaml lists missing {name}" for name in sorted(listed - present)]
    return problems


# ---------------------------------------------------------------- the real files


def test_compose_has_two_redis_replicas_behind_one_load_balancer() -> None:
    assert compose_problems(load_compose()) == []


def test_every_file_compose_references_exists() -> None:
    assert compose_reference_problems(load_compose()) == []


def test_haproxy_round_robin_without_affinity_checks_readyz() -> None:
    assert haproxy_problems(HAPROXY_CFG.read_text(encoding="utf-8"), load_compose()) == []


def test_kubernetes_manifests() -> None:
    assert k8s_problems(load_manifests()) == []


def test_kustomization_lists_every_manifest() -> None:
    assert kustomization_problems() == []


@pytest.mark.parametrize("service", sorted(compose_gateways(load_compose())))
def test_compose_gateway_config_passes_check(service: str, tmp_path: Path) -> None:
    config = compose_container_config(load_compose(), service, tmp_path)
    result = gateway_check(config)
    assert result.returncode == 0, result.stdout + result.stderr


def test_configmap_gateway_config_passes_check(tmp_path: Path) -> None:
    config = k8s_container_config(load_manifests(), tmp_path)
    result = gateway_check(config)
    assert result.returncode == 0, result.stdout + result.stderr


def test_kubernetes_schemas() -> None:
    files = [str(p) for p in sorted(K8S.glob("*.yaml")) if p.name != "kustomization.yaml"]
    result = subprocess.run(
        [str(BIN / "kubernetes-validate"), "--strict", "--quiet", *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_schema() -> None:
    result = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy not installed (make deploy-check installs it)")
def test_haproxy_accepts_the_config() -> None:
    result = subprocess.run(
        ["haproxy", "-c", "-f", str(HAPROXY_CFG)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------- the rules catch broken copies


def _compose_mutations() -> Iterator[tuple[str, Callable[[Doc], None]]]:
    def one_replica(c: Doc) -> None:
        del c["services"]["gateway-2"]

    def memory_state(c: Doc) -> None:
        for svc in compose_gateways(c).values():
            svc["volumes"] = [v.replace("./config.yaml", "../examples/demo.yaml") for v in svc["volumes"]]

    def different_configs(c: Doc) -> None:
        c["services"]["gateway-2"]["volumes"] = ["./other.yaml:/etc/elicitation-gateway/config.yaml:ro"]

    def no_lb(c: Doc) -> None:
        del c["services"]["lb"]

    def published_replica(c: Doc) -> None:
        c["services"]["gateway-1"]["ports"] = ["127.0.0.1:8809:8808"]

    def other_redis(c: Doc) -> None:
        c["services"]["cache"] = c["services"].pop("redis")

    yield from [
        ("one replica", one_replica),
        ("memory state", memory_state),
        ("different configs", different_configs),
        ("no load balancer", no_lb),
        ("published replica", published_replica),
        ("redis renamed", other_redis),
    ]


@pytest.mark.parametrize(("what", "mutate"), list(_compose_mutations()), ids=[m[0] for m in _compose_mutations()])
def test_compose_rules_catch(what: str, mutate: Callable[[Doc], None]) -> None:
    compose = copy.deepcopy(load_compose())
    mutate(compose)
    assert compose_problems(compose), what


def test_reference_rule_catches_missing_files() -> None:
    compose = copy.deepcopy(load_compose())
    # A new list: the replicas share theirs through the YAML anchor.
    gateway = compose["services"]["gateway-1"]
    gateway["volumes"] = [*gateway["volumes"], "./no-such-file.yaml:/x.yaml:ro"]
    compose["services"]["demo"]["build"]["dockerfile"] = "deploy/Nope"
    compose["services"]["redis"]["env_file"] = ["./secrets.env"]
    assert len(compose_reference_problems(compose)) == 3


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("balance roundrobin", "balance source"),
        ("balance roundrobin", "balance roundrobin\n    stick-table type ip size 100k expire 30m\n    stick on src"),
        ("balance roundrobin", "balance roundrobin\n    cookie SRV insert indirect nocache"),
        ("balance roundrobin", "balance roundrobin\n    hash-type consistent\n    balance hdr(Mcp-Session-Id)"),
        ("uri /readyz", "uri /healthz"),
        ("    option httpchk\n", ""),
        ("timeout server 1h", "timeout server 30s"),
        ("timeout tunnel 1h", ""),
        ("server gateway-2 gateway-2:8808", ""),
        ("server gateway-1 gateway-1:8808", "server gateway-1 gateway-1:9000"),
        ("default-server check", "default-server"),
        ("mode http", "mode http\n    compression algo gzip"),
    ],
)
def test_haproxy_rules_catch(old: str, new: str) -> None:
    text = HAPROXY_CFG.read_text(encoding="utf-8")
    assert old in text
    assert haproxy_problems(text.replace(old, new), load_compose())


def _k8s_mutations() -> Iterator[tuple[str, Callable[[list[Doc]], None]]]:
    def dep(docs: list[Doc]) -> Doc:
        return gateway_deployment(docs)

    def kind(docs: list[Doc], k: str) -> Doc:
        return (
            of_kind(docs, k)[0]
            if k != "Service"
            else next(s for s in of_kind(docs, "Service") if s["metadata"]["name"] == "elicitation-gateway")
        )

    yield "liveness on readyz", lambda d: gateway_container(dep(d))["livenessProbe"]["httpGet"].update(path="/readyz")
    yield (
        "readiness on healthz",
        lambda d: gateway_container(dep(d))["readinessProbe"]["httpGet"].update(path="/healthz"),
    )
    yield "probe wrong port", lambda d: gateway_container(dep(d))["readinessProbe"]["httpGet"].update(port=9999)
    yield "no readiness", lambda d: gateway_container(dep(d)).pop("readinessProbe")
    yield "fixed replicas", lambda d: dep(d)["spec"].update(replicas=2)
    yield "hpa min 1", lambda d: kind(d, "HorizontalPodAutoscaler")["spec"].update(minReplicas=1)
    yield "hpa other target", lambda d: kind(d, "HorizontalPodAutoscaler")["spec"]["scaleTargetRef"].update(name="x")
    yield "hpa v1", lambda d: kind(d, "HorizontalPodAutoscaler").update(apiVersion="autoscaling/v1")
    yield (
        "pdb other pods",
        lambda d: kind(d, "PodDisruptionBudget")["spec"].update(
            selector={"matchLabels": {"app.kubernetes.io/name": "other"}}
        ),
    )
    yield "pdb minAvailable 0", lambda d: kind(d, "PodDisruptionBudget")["spec"].update(minAvailable=0)
    yield "client ip affinity", lambda d: kind(d, "Service")["spec"].update(sessionAffinity="ClientIP")
    yield "service wrong port", lambda d: kind(d, "Service")["spec"]["ports"][0].update(targetPort=9000)
    yield "root", lambda d: gateway_container(dep(d))["securityContext"].update(runAsNonRoot=False)
    yield (
        "writable root fs",
        lambda d: gateway_container(dep(d))["securityContext"].update(readOnlyRootFilesystem=False),
    )
    yield "no limits", lambda d: gateway_container(dep(d))["resources"].pop("limits")
    yield (
        "memory state",
        lambda d: kind(d, "ConfigMap")["data"].update(
            {"config.yaml": kind(d, "ConfigMap")["data"]["config.yaml"].replace("backend: redis", "backend: memory")}
        ),
    )
    yield (
        "other redis",
        lambda d: kind(d, "ConfigMap")["data"].update(
            {"config.yaml": kind(d, "ConfigMap")["data"]["config.yaml"].replace("redis://redis:", "redis://cache:")}
        ),
    )


@pytest.mark.parametrize(("what", "mutate"), list(_k8s_mutations()), ids=[m[0] for m in _k8s_mutations()])
def test_kubernetes_rules_catch(what: str, mutate: Callable[[list[Doc]], None]) -> None:
    docs = copy.deepcopy(load_manifests())
    mutate(docs)
    assert k8s_problems(docs), what


def test_check_catches_a_broken_configmap(tmp_path: Path) -> None:
    docs = copy.deepcopy(load_manifests())
    cm = next(d for d in of_kind(docs, "ConfigMap") if "config.yaml" in d["data"])
    cm["data"]["strict.yaml"] = cm["data"]["strict.yaml"].replace("form_urls: strip", "form_urls: sometimes")
    result = gateway_check(k8s_container_config(docs, tmp_path))
    assert result.returncode == 2 and "form_urls" in result.stderr + result.stdout


def test_check_catches_a_compose_replica_without_policies(tmp_path: Path) -> None:
    compose = copy.deepcopy(load_compose())
    svc = compose["services"]["gateway-1"]
    svc["volumes"] = [v for v in svc["volumes"] if "policies" not in v]
    result = gateway_check(compose_container_config(compose, "gateway-1", tmp_path))
    assert result.returncode == 2 and "policy" in result.stderr + result.stdout
