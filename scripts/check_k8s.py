"""Renders deploy/k8s's overlays with kustomize and checks what they would apply.

Run by scripts/check-deploy in a virtualenv with pykustomize (the kustomize Go library,
sigs.k8s.io/kustomize/api, behind a Python binding), kubernetes-validate (Kubernetes'
OpenAPI schemas, offline) and jsonschema. For each overlay:

* every rendered object validates, strictly (unknown fields refused), against the
  Kubernetes schemas of the oldest and newest versions checked; CloudNativePG's Cluster
  against deploy/k8s/schemas/cnpg-cluster.schema.json and its admission webhook's rule on
  synchronous replicas; any other kind fails;
* secrets are referenced, never written: no Secret objects, no literal value for a
  variable that holds a credential;
* Pods in the namespace `berth` meet Pod Security's "restricted" profile; the worker is the
  only privileged Pod and its namespace is the only one that admits it; no Pod mounts a
  service account token;
* the pieces fit: probes on the port the config's `listen` names, Services, HPAs and PDBs
  select existing Pods, the database Secrets are the ones the Cluster makes, images are
  named by the overlay;
* with --berth BINARY, every container's arguments parse with that binary
  (`berth ARGS --help`, which clap refuses on an unknown flag or value).

Prints one line per overlay and exits 1 with every problem found.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import kubernetes_validate
from pykustomize import build_json

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
# The oldest Kubernetes the manifests claim to support, and the newest schemas at hand.
KUBERNETES_VERSIONS = ["1.30", kubernetes_validate.utils.latest_version()]
# Variables that carry credentials: only ever from a Secret.
SECRET_NAME = re.compile(r"(^DATABASE_URL$|SECRET|TOKEN|PASSWORD|_KEY$)")
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet"}


def render(overlay: Path) -> list[dict]:
    return asyncio.run(build_json(overlay)).resources


class Check:
    def __init__(self, overlay: str):
        self.overlay = overlay
        self.problems: list[str] = []

    def fail(self, what: str, message: str) -> None:
        self.problems.append(f"{self.overlay}: {what}: {message}")


def name_of(obj: dict) -> str:
    meta = obj.get("metadata", {})
    return f"{obj.get('kind')}/{meta.get('namespace', '-')}/{meta.get('name')}"


def validate_schemas(check: Check, objects: list[dict], cnpg: dict) -> None:
    for obj in objects:
        what = name_of(obj)
        if obj.get("apiVersion") == "postgresql.cnpg.io/v1" and obj.get("kind") == "Cluster":
            for error in jsonschema.Draft202012Validator(cnpg).iter_errors(obj):
                path = ".".join(str(p) for p in error.absolute_path)
                check.fail(what, f"{path}: {error.message}")
            spec = obj.get("spec", {})
            sync = spec.get("postgresql", {}).get("synchronous")
            # CloudNativePG's webhook (validateSynchronousReplicaConfiguration): fewer
            # synchronous standbys than instances.
            if sync and sync.get("number", 0) >= spec.get("instances", 1):
                check.fail(what, "postgresql.synchronous.number must be below instances")
            continue
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                path = ".".join(str(p) for p in e.absolute_path)
                check.fail(what, f"Kubernetes {version}: {path}: {e.message}")
            except kubernetes_validate.SchemaNotFoundError as e:
                check.fail(what, e.message)


def pod_specs(objects: list[dict]):
    for obj in objects:
        if obj.get("kind") in WORKLOADS:
            yield obj, obj["spec"]["template"]


def check_secrets(check: Check, objects: list[dict]) -> None:
    for obj in objects:
        if obj.get("kind") == "Secret":
            check.fail(name_of(obj), "a Secret in the manifests: create it outside them")
    for obj, template in pod_specs(objects):
        for container in template["spec"].get("containers", []):
            for env in container.get("env", []):
                if SECRET_NAME.search(env["name"]):
                    ref = env.get("valueFrom", {}).get("secretKeyRef")
                    if "value" in env or not ref:
                        check.fail(name_of(obj), f"{env['name']} must come from a secretKeyRef")
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    check.fail(name_of(obj), "envFrom a ConfigMap: secrets could slip in")


def restricted_problems(spec: dict) -> list[str]:
    """Pod Security Standards, "restricted" (the fields these manifests could break)."""
    found = []
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            found.append(f"{key} is set")
    for volume in spec.get("volumes", []):
        if "hostPath" in volume:
            found.append(f"volume {volume['name']} is a hostPath")
    pod_sc = spec.get("securityContext", {})
    for container in spec.get("containers", []) + spec.get("initContainers", []):
        sc = container.get("securityContext", {})
        who = f"container {container['name']}"
        if sc.get("privileged"):
            found.append(f"{who} is privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f"{who}: allowPrivilegeEscalation must be false")
        if sc.get("capabilities", {}).get("drop") != ["ALL"]:
            found.append(f"{who}: capabilities must drop ALL")
        if sc.get("capabilities", {}).get("add"):
            found.append(f"{who}: adds capabilities")
        if not sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")):
            found.append(f"{who}: runAsNonRoot must be true")
        if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
            found.append(f"{who}: runs as uid 0")
        seccomp = sc.get("seccompProfile", pod_sc.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{who}: seccompProfile must be RuntimeDefault")
        if not sc.get("readOnlyRootFilesystem"):
            found.append(f"{who}: readOnlyRootFilesystem must be true")
    return found


def check_pod_security(check: Check, objects: list[dict]) -> None:
    levels = {
        obj["metadata"]["name"]: obj["metadata"]
        .get("labels", {})
        .get("pod-security.kubernetes.io/enforce")
        for obj in objects
        if obj.get("kind") == "Namespace"
    }
    if levels.get("berth") != "restricted":
        check.fail("Namespace/berth", "must enforce the restricted Pod Security level")
    privileged = []
    for obj, template in pod_specs(objects):
        spec = template["spec"]
        namespace = obj["metadata"].get("namespace")
        if namespace not in levels:
            check.fail(name_of(obj), f"namespace {namespace} is not in the manifests")
        if spec.get("automountServiceAccountToken") is not False:
            check.fail(name_of(obj), "automountServiceAccountToken must be false")
        if any(c.get("securityContext", {}).get("privileged") for c in spec["containers"]):
            privileged.append(obj)
            if levels.get(namespace) != "privileged":
                check.fail(name_of(obj), "privileged in a namespace that does not admit it")
            if namespace == "berth":
                check.fail(name_of(obj), "privileged Pods belong in berth-node")
        elif namespace == "berth":
            for problem in restricted_problems(spec):
                check.fail(name_of(obj), problem)
    names = [(o["kind"], o["metadata"]["name"]) for o in privileged]
    if names != [("DaemonSet", "berth-worker")]:
        check.fail("privileged Pods", f"only the worker DaemonSet may be privileged: {names}")
    for obj in privileged:
        for container in obj["spec"]["template"]["spec"]["containers"]:
            # The image's user is 10001; the worker must say it runs as root.
            if container.get("securityContext", {}).get("runAsUser") != 0:
                check.fail(name_of(obj), f"container {container['name']} must set runAsUser: 0")


def selects(selector: dict, labels: dict) -> bool:
    wanted = selector.get("matchLabels", {})
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def check_wiring(check: Check, objects: list[dict], production: bool) -> None:
    by_kind: dict[str, list[dict]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    pods = [(obj, template["metadata"].get("labels", {})) for obj, template in pod_specs(objects)]
    for kind in ("Service", "PodDisruptionBudget"):
        for obj in by_kind.get(kind, []):
            selector = obj["spec"]["selector"]
            selector = selector if kind == "PodDisruptionBudget" else {"matchLabels": selector}
            ns = obj["metadata"]["namespace"]
            if not any(
                selects(selector, labels) and w["metadata"]["namespace"] == ns for w, labels in pods
            ):
                check.fail(name_of(obj), "selects no Pod of the manifests")
    deployments = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        target = hpa["spec"]["scaleTargetRef"]
        if target["kind"] != "Deployment" or target["name"] not in deployments:
            check.fail(
                name_of(hpa), f"scales {target['kind']}/{target['name']}, not in the manifests"
            )
        elif "replicas" in deployments[target["name"]]["spec"]:
            check.fail(name_of(hpa), "its Deployment sets replicas too (they would fight)")

    clusters = by_kind.get("Cluster", [])
    if len(clusters) != 1:
        check.fail("Cluster", f"expected one CloudNativePG Cluster, found {len(clusters)}")
        return
    cluster = clusters[0]
    db = cluster["metadata"]["name"]
    if production:
        spec = cluster["spec"]
        if spec.get("instances", 0) < 3 or not spec.get("postgresql", {}).get("synchronous"):
            check.fail(
                name_of(cluster), "production needs 3+ instances and synchronous replication"
            )

    configs = {c["metadata"]["name"]: c for c in by_kind.get("ConfigMap", [])}
    for obj, template in pod_specs(objects):
        spec = template["spec"]
        for container in spec["containers"]:
            image = container.get("image", "")
            if image == "berth" or (":" not in image.rsplit("/", 1)[-1] and "@" not in image):
                check.fail(name_of(obj), f"image {image!r}: the overlay must name and tag it")
            if production and image.endswith((":latest", ":dev")):
                check.fail(name_of(obj), f"image {image!r}: pin a version or digest")
            env = {e["name"]: e for e in container.get("env", [])}
            if "DATABASE_URL" in env:
                ref = env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]
                if (ref["name"], ref["key"]) != (f"{db}-app", "uri"):
                    check.fail(name_of(obj), f"DATABASE_URL must be {db}-app/uri, not {ref}")
                if env.get("PGSSLMODE", {}).get("value") != "verify-full":
                    check.fail(name_of(obj), "PGSSLMODE must be verify-full")
            for volume in spec.get("volumes", []):
                secret = volume.get("secret", {})
                if secret.get("secretName") == f"{db}-ca":
                    keys = [i["key"] for i in secret.get("items", [])]
                    if keys != ["ca.crt"]:
                        check.fail(
                            name_of(obj), f"mount only ca.crt of {db}-ca (it holds the CA key)"
                        )
            args = container.get("args", [])
            if args[:2] == ["server", "--role"] and args[2] == "api":
                check_api_container(check, obj, container, spec, configs)


def check_api_container(
    check: Check, obj: dict, container: dict, spec: dict, configs: dict
) -> None:
    what = name_of(obj)
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    probes = {
        kind: container.get(kind, {}).get("httpGet", {})
        for kind in ("readinessProbe", "livenessProbe", "startupProbe")
    }
    if probes["readinessProbe"].get("path") != "/readyz":
        check.fail(what, "readiness must probe /readyz")
    if probes["livenessProbe"].get("path") != "/healthz":
        check.fail(what, "liveness must probe /healthz")
    config_map = next(
        (
            v["configMap"]["name"]
            for v in spec.get("volumes", [])
            if "configMap" in v
            and any(
                m["name"] == v["name"] and m["mountPath"] == "/etc/berth"
                for m in container.get("volumeMounts", [])
            )
        ),
        None,
    )
    if config_map not in configs:
        check.fail(what, f"/etc/berth is not a ConfigMap of the manifests ({config_map})")
        return
    config = tomllib.loads(configs[config_map]["data"]["berth.toml"])
    port = int(config.get("listen", "127.0.0.1:8750").rsplit(":", 1)[1])
    tls = "tls_cert" in config.get("api", {})
    for kind, probe in probes.items():
        if ports.get(probe.get("port")) != port:
            check.fail(what, f"{kind} port {probe.get('port')} is not the listen port {port}")
        if (probe.get("scheme", "HTTP") == "HTTPS") != tls:
            check.fail(what, f"{kind} scheme does not match the api's TLS setting")
    if not config.get("listen", "").startswith("0.0.0.0:"):
        check.fail(what, "the config's listen must be 0.0.0.0:PORT inside a Pod")


def check_arguments(check: Check, objects: list[dict], berth: str) -> None:
    for obj, template in pod_specs(objects):
        for container in template["spec"]["containers"]:
            args = [re.sub(r"\$\(\w+\)", "placeholder", a) for a in container.get("args", [])]
            run = subprocess.run(
                [berth, *args, "--help"], capture_output=True, text=True, check=False
            )
            if run.returncode != 0:
                check.fail(name_of(obj), f"berth {' '.join(args)}: {run.stderr.strip()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--berth", help="the berth binary, to check containers' arguments")
    parser.add_argument("--k8s", type=Path, default=K8S, help="the manifests (deploy/k8s)")
    options = parser.parse_args()
    problems = []
    cnpg = json.loads((options.k8s / "schemas" / "cnpg-cluster.schema.json").read_text())
    overlays = sorted(p for p in (options.k8s / "overlays").iterdir() if p.is_dir())
    if not overlays:
        problems.append(f"no overlays under {options.k8s}/overlays")
    for overlay in overlays:
        check = Check(f"overlays/{overlay.name}")
        objects = render(overlay)
        validate_schemas(check, objects, cnpg)
        check_secrets(check, objects)
        check_pod_security(check, objects)
        check_wiring(check, objects, production=overlay.name == "production")
        if options.berth:
            check_arguments(check, objects, options.berth)
        kinds = sorted({o["kind"] for o in objects})
        print(
            f"k8s {check.overlay}: {len(objects)} objects ({', '.join(kinds)}): "
            + ("ok" if not check.problems else f"{len(check.problems)} problems")
        )
        problems += check.problems
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
