"""deploy/k8s: Kubernetes' own schemas (bundled, offline) and consistency with the app."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.deploy_files import K8S, REPO, known_env_names, load_yaml_documents

kubernetes_validate = pytest.importorskip(
    "kubernetes_validate", reason="scripts/install.sh installs it from requirements/tools.lock"
)
BUILTIN_KINDS = {"Deployment", "Service", "PodDisruptionBudget"}
VERSIONS = ("1.28.0", "1.33.0")  # an older cluster and a recent one


def resources() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in load_yaml_documents(path):
            if doc.get("kind") != "Kustomization":
                found[doc["kind"]] = doc
    return found


@pytest.fixture(scope="module")
def k8s() -> dict[str, dict[str, Any]]:
    return resources()


def container(k8s: dict[str, dict[str, Any]]) -> dict[str, Any]:
    [gateway] = k8s["Deployment"]["spec"]["template"]["spec"]["containers"]
    return dict(gateway)


def test_kinds(k8s: dict[str, dict[str, Any]]) -> None:
    assert set(k8s) == BUILTIN_KINDS | {"ScaledObject", "ServiceMonitor"}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", sorted(BUILTIN_KINDS))
def test_builtin_kinds_match_kubernetes_schemas(
    k8s: dict[str, dict[str, Any]], kind: str, version: str
) -> None:
    kubernetes_validate.validate(k8s[kind], version, strict=True)


def test_kustomization_lists_every_manifest() -> None:
    [kustomization] = load_yaml_documents(K8S / "kustomization.yaml")
    listed = set(kustomization["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_probes_hit_the_health_route_on_the_served_port(k8s: dict[str, dict[str, Any]]) -> None:
    from app.routes.health import router

    routes = {getattr(r, "path", None) for r in router.routes}
    gateway = container(k8s)
    ports = {p["name"]: p["containerPort"] for p in gateway["ports"]}
    env = {e["name"]: e["value"] for e in gateway["env"]}
    assert ports == {"http": int(env["GATEWAY_PORT"])}
    assert env["GATEWAY_HOST"] == "0.0.0.0"
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = gateway[probe]["httpGet"]
        assert get["path"] in routes and get["path"] == "/health"
        assert get["port"] in ports
    startup = gateway["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300  # model load time


def test_gpu_request_and_shared_memory(k8s: dict[str, dict[str, Any]]) -> None:
    gateway = container(k8s)
    resources_ = gateway["resources"]
    assert resources_["requests"]["nvidia.com/gpu"] == resources_["limits"]["nvidia.com/gpu"]
    tp = next(e["value"] for e in gateway["env"] if e["name"] == "GATEWAY_TENSOR_PARALLEL_SIZE")
    assert int(resources_["limits"]["nvidia.com/gpu"]) == int(tp)
    mounts = {m["mountPath"]: m["name"] for m in gateway["volumeMounts"]}
    volumes = {v["name"]: v for v in k8s["Deployment"]["spec"]["template"]["spec"]["volumes"]}
    assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"
    assert "/models" in mounts


def test_env_names_are_gateway_settings(k8s: dict[str, dict[str, Any]]) -> None:
    known = known_env_names()
    spec = k8s["Deployment"]["spec"]["template"]["spec"]
    for item in [*spec["containers"], *spec.get("initContainers", [])]:
        unknown = {e["name"] for e in item.get("env", [])} - known
        assert not unknown, f"{item['name']}: {unknown}"
    [init] = spec["initContainers"]
    assert init["command"] == ["vllm-gateway", "download"]


def test_runs_as_the_images_user(k8s: dict[str, dict[str, Any]]) -> None:
    context = k8s["Deployment"]["spec"]["template"]["spec"]["securityContext"]
    dockerfile = (REPO / "docker" / "Dockerfile.gpu").read_text()
    assert context["runAsNonRoot"] is True
    assert re.search(rf"USER {context['runAsUser']}\b", dockerfile)


def test_selectors_match_the_pods(k8s: dict[str, dict[str, Any]]) -> None:
    pod_labels = k8s["Deployment"]["spec"]["template"]["metadata"]["labels"]
    selectors = [
        k8s["Deployment"]["spec"]["selector"]["matchLabels"],
        k8s["Service"]["spec"]["selector"],
        k8s["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
    ]
    for selector in selectors:
        assert selector.items() <= pod_labels.items()
    service_labels = k8s["Service"]["metadata"]["labels"].items()
    assert k8s["ServiceMonitor"]["spec"]["selector"]["matchLabels"].items() <= service_labels


def test_service_and_monitor_ports(k8s: dict[str, dict[str, Any]]) -> None:
    [port] = k8s["Service"]["spec"]["ports"]
    assert port["targetPort"] in {p["name"] for p in container(k8s)["ports"]}
    [endpoint] = k8s["ServiceMonitor"]["spec"]["endpoints"]
    assert endpoint["port"] == port["name"] and endpoint["path"] == "/metrics"
    assert k8s["ServiceMonitor"]["apiVersion"] == "monitoring.coreos.com/v1"


def test_pdb_leaves_room_to_drain(k8s: dict[str, dict[str, Any]]) -> None:
    spec = k8s["PodDisruptionBudget"]["spec"]
    scaled = k8s["ScaledObject"]["spec"]
    assert spec["minAvailable"] < scaled["maxReplicaCount"]


def test_keda_scales_the_deployment_on_the_engine_queue(k8s: dict[str, dict[str, Any]]) -> None:
    scaled = k8s["ScaledObject"]
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    spec = scaled["spec"]
    target = spec["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", k8s["Deployment"]["metadata"]["name"])
    assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
    [trigger] = spec["triggers"]
    assert trigger["type"] == "prometheus"
    meta = trigger["metadata"]
    assert "vllm:num_requests_waiting" in meta["query"]
    assert meta["serverAddress"].startswith("http")
    assert float(meta["threshold"]) > 0 and isinstance(meta["threshold"], str)
