"""docker/: both Dockerfiles (hadolint and their shape), .dockerignore and compose.yaml."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.deploy_files import (
    COMPOSE,
    REPO,
    dockerfile_instructions,
    find_tool,
    known_env_names,
    load_yaml_documents,
)

DOCKERFILES = {
    "cpu": REPO / "docker" / "Dockerfile.cpu",
    "gpu": REPO / "docker" / "Dockerfile.gpu",
}
TOOLS = "scripts/install.sh installs it from requirements/tools.lock"


@pytest.fixture(scope="module")
def env_names() -> set[str]:
    return known_env_names()


@pytest.mark.parametrize("kind", sorted(DOCKERFILES))
def test_hadolint_is_clean(kind: str) -> None:
    hadolint = find_tool("hadolint", TOOLS)
    done = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILES[kind])], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def values(instructions: list[tuple[str, str]], keyword: str) -> list[str]:
    return [rest for key, rest in instructions if key == keyword]


def env_of(instructions: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for rest in values(instructions, "ENV"):
        env.update(re.findall(r"(\w+)=(\S+)", rest))
    return env


@pytest.mark.parametrize("kind", sorted(DOCKERFILES))
def test_image_shape(kind: str, env_names: set[str]) -> None:
    steps = dockerfile_instructions(DOCKERFILES[kind])
    user = values(steps, "USER")[-1]
    assert user not in ("0", "root"), "the image must not run as root"
    assert f"--uid {user}" in " ".join(values(steps, "RUN"))
    [health] = values(steps, "HEALTHCHECK")
    assert '"-m", "app.healthcheck"]' in health and "--start-period=" in health
    assert values(steps, "VOLUME") == ['["/models"]']
    assert values(steps, "EXPOSE") == ["8000"]
    assert values(steps, "ENTRYPOINT") == ['["vllm-gateway"]']
    env = env_of(steps)
    assert env["GATEWAY_PORT"] == "8000" and env["GATEWAY_MODELS_DIR"] == "/models"
    assert env["GATEWAY_HOST"] == "0.0.0.0"
    unknown = {n for n in env if n.startswith("GATEWAY_")} - env_names
    assert not unknown, f"not gateway settings: {unknown}"


def test_cpu_image_installs_the_lock_like_install_sh() -> None:
    steps = dockerfile_instructions(DOCKERFILES["cpu"])
    runs = values(steps, "RUN")
    lock_install = [r for r in runs if "-r requirements/cpu.lock" in r]
    assert lock_install and "--no-deps" in lock_install[0]
    script = (REPO / "scripts" / "install.sh").read_text()
    assert "install -q --no-deps -r requirements/cpu.lock" in script
    assert any("--no-deps ." in r for r in runs)
    assert values(steps, "FROM")[0] == "${PYTHON_IMAGE}"
    assert "python:3.11" in " ".join(values(steps, "ARG"))  # the lock's torch is cp311


def test_gpu_image_is_built_on_cuda_vllm() -> None:
    args = " ".join(values(dockerfile_instructions(DOCKERFILES["gpu"]), "ARG"))
    assert re.search(r"BASE_IMAGE=(vllm/vllm-openai|nvidia/cuda):\S+", args)


def ignore_patterns() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule, simplified: the last matching pattern wins, `!` re-includes."""
    result = False
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        if pattern.startswith("**/"):
            hit = any(fnmatch.fnmatch(p, pattern[3:]) for p in parts)
        else:
            hit = any(fnmatch.fnmatch(p, pattern) for p in prefixes)
        if hit:
            result = not negate
    return result


def test_dockerignore_keeps_what_the_images_copy_and_drops_the_rest() -> None:
    patterns = ignore_patterns()
    for dockerfile in DOCKERFILES.values():
        for rest in values(dockerfile_instructions(dockerfile), "COPY"):
            *sources, _ = rest.split()
            for source in sources:
                assert (REPO / source).exists(), source
                assert not ignored(source, patterns), f"{source} is in .dockerignore"
    for path in (".venv", ".git", "models", "tests", ".env", "app/__pycache__"):
        assert ignored(path, patterns), f"{path} would be sent to the daemon"
    assert not ignored("app/cli.py", patterns)


def test_compose_matches_the_compose_spec() -> None:
    checker = find_tool("check-jsonschema", TOOLS)
    done = subprocess.run(
        [checker, "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_services(env_names: set[str]) -> None:
    [compose] = load_yaml_documents(COMPOSE)
    services = compose["services"]
    assert set(services) == {"gateway", "gateway-cpu", "prometheus", "grafana"}
    dockerfiles = {services[s]["build"]["dockerfile"] for s in ("gateway", "gateway-cpu")}
    assert dockerfiles == {"docker/Dockerfile.gpu", "docker/Dockerfile.cpu"}
    for name in ("gateway", "gateway-cpu"):
        service = services[name]
        assert (COMPOSE.parent / service["build"]["context"] / "pyproject.toml").is_file()
        assert any(v.endswith(":/models") for v in service["volumes"])
        assert service["healthcheck"]["test"][-1] == "app.healthcheck"
        assert service["ports"] == ["${GATEWAY_PUBLISH_PORT:-8000}:8000"]
        env = service["environment"]
        assert env["GATEWAY_PORT"] == "8000" and env["GATEWAY_MODELS_DIR"] == "/models"
        unknown = {n for n in env if n not in env_names}
        assert not unknown, f"{name}: not gateway settings: {unknown}"
    gpu = services["gateway"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia" and gpu["capabilities"] == ["gpu"]
    assert "gateway" in services["gateway-cpu"]["networks"]["default"]["aliases"]
    for service in ("prometheus", "grafana"):
        for volume in services[service]["volumes"]:
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (COMPOSE.parent / source).exists(), source


def test_grafana_provisioning_points_at_the_mounted_dashboards() -> None:
    [compose] = load_yaml_documents(COMPOSE)
    mounts = dict(v.split(":")[:2] for v in compose["services"]["grafana"]["volumes"])
    [provider] = load_yaml_documents(
        REPO / "docker" / "grafana" / "provisioning" / "dashboards" / "vllm-gateway.yml"
    )
    assert provider["providers"][0]["options"]["path"] == mounts["./grafana/dashboards"]
    [sources] = load_yaml_documents(
        REPO / "docker" / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
    )
    [prometheus] = sources["datasources"]
    assert prometheus["type"] == "prometheus" and prometheus["url"] == "http://prometheus:9090"
    grafana_env = compose["services"]["grafana"]["environment"]
    home = Path(grafana_env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    in_repo = home.relative_to(mounts["./grafana/dashboards"])
    assert (REPO / "docker" / "grafana" / "dashboards" / in_repo).is_file()
    board = json.loads((REPO / "docker/grafana/dashboards/vllm-gateway.json").read_text())
    default = next(v for v in board["templating"]["list"] if v["name"] == "datasource")
    assert default["current"]["value"] == prometheus["uid"]
