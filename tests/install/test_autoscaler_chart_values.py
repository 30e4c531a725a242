"""docs/autoscaler.md's values for the upstream cluster-autoscaler Helm chart, rendered by that chart with the
built helm when the chart is at hand, against what homecluster's chart expects of the autoscaler: the
externalgrpc provider reading the cloud-config our ConfigMap holds, the client Secret where that cloud-config
says the files are, a --startup-taint for each of our chart's startupTaints, pods our NetworkPolicy admits to
the provider, and the rights config/autoscaler/rbac.yaml grants.

The upstream chart is not ours to ship: give its folder (or .tgz) in HOMECLUSTER_AUTOSCALER_CHART (several,
separated by `:`), or put it in ~/.cache/homecluster/cluster-autoscaler-chart/<chart version>/ (the folder
cluster-autoscaler/charts/cluster-autoscaler of the autoscaler repository at its tag
cluster-autoscaler-chart-<version> -- charts/cluster-autoscaler before 9.52.0 --, or `helm pull
autoscaler/cluster-autoscaler --untar`). Without one the tests skip saying so.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from helm_chart import NAMESPACE, helm, parse, template
from install_helpers import REPO

ENV = "HOMECLUSTER_AUTOSCALER_CHART"
CACHE = Path.home() / ".cache" / "homecluster" / "cluster-autoscaler-chart"
DOC = REPO / "docs" / "autoscaler.md"


def charts() -> list[Path]:
    named = [Path(p).expanduser() for p in os.environ.get(ENV, "").split(os.pathsep) if p.strip()]
    return named + sorted(p.parent for p in CACHE.glob("*/Chart.yaml"))


def documented_values() -> str:
    text = DOC.read_text()
    section = text[text.index("## With the upstream cluster-autoscaler Helm chart"):]
    (block,) = re.findall(r"```yaml\n(.*?)```", section[:section.index("\n## ", 5)], re.S)
    return block


@pytest.fixture(scope="module", params=charts() or [None], ids=lambda p: p.name if p else "no-chart")
def rendered(request, tmp_path_factory) -> list[dict]:
    if request.param is None:
        pytest.skip(f"no upstream cluster-autoscaler chart: set {ENV} or fill {CACHE}/<version>/ (this module's "
                    "docstring says how)")
    values = tmp_path_factory.mktemp("ca") / "values.yaml"
    values.write_text(documented_values())
    done = helm("template", "cluster-autoscaler", str(request.param), "--namespace", NAMESPACE, "-f", str(values))
    assert done.returncode == 0, f"the upstream chart refused docs/autoscaler.md's values: {done.stderr}"
    return parse(done.stdout)


def _pod(rendered: list[dict]) -> dict:
    (deployment,) = [o for o in rendered if o["kind"] == "Deployment"]
    return deployment["spec"]["template"]


def _ours(*sets: str) -> list[dict]:
    return parse(template(*sets))


def test_the_autoscaler_reads_our_cloud_config_with_the_client_secret_where_it_says(rendered):
    pod = _pod(rendered)
    (container,) = pod["spec"]["containers"]
    argv = container.get("command", []) + container.get("args", [])
    assert "--cloud-provider=externalgrpc" in argv
    (ours,) = [o for o in _ours("autoscaler.cloudConfig.enabled=true") if o["kind"] == "ConfigMap"]
    (key,) = ours["data"]
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
    config_dir = next(path for path, v in mounts.items()
                      if v.get("configMap", {}).get("name") == ours["metadata"]["name"])
    assert f"--cloud-config={config_dir}/{key}" in argv
    cloud_config = yaml.safe_load(ours["data"][key])
    secret_dir = next(path for path, v in mounts.items()
                      if v.get("secret", {}).get("secretName") == "homecluster-provider-client")
    for field in ("cert", "key", "cacert"):
        assert os.path.dirname(cloud_config[field]) == secret_dir, (field, cloud_config[field], secret_dir)


def test_every_startup_taint_of_our_chart_is_a_flag(rendered):
    (container,) = _pod(rendered)["spec"]["containers"]
    argv = container.get("command", []) + container.get("args", [])
    ours = yaml.safe_load((REPO / "charts" / "homecluster" / "values.yaml").read_text())["autoscaler"]["startupTaints"]
    assert ours and {f"--startup-taint={key}" for key in ours} <= set(argv)


def test_our_network_policy_admits_its_pods_to_the_provider(rendered):
    labels = _pod(rendered)["metadata"]["labels"]
    (policy,) = [o for o in _ours("networkPolicy.enabled=true") if o["kind"] == "NetworkPolicy"]
    grpc = [rule for rule in policy["spec"]["ingress"] if any(p["port"] in (50051, "grpc") for p in rule["ports"])]
    selectors = [peer["podSelector"].get("matchLabels", {}) for rule in grpc for peer in rule["from"]
                 if "podSelector" in peer]
    assert any(all(labels.get(k) == v for k, v in wanted.items()) for wanted in selectors), (
        f"the autoscaler's pods carry {labels}; the provider's port admits only {selectors}")


def test_it_has_the_rights_config_autoscaler_grants(rendered):
    """Every (group, resource, verb) config/autoscaler's ClusterRole grants on any name, the upstream chart's
    ClusterRole or its Role in the namespace grants too; `get` is met by `list` (the same objects: the
    autoscaler reads through informers; the upstream chart grants poddisruptionbudgets list and watch only)."""
    def grants(rules: list[dict]) -> set[tuple[str, str, str]]:
        return {(g, r, v) for rule in rules if not rule.get("resourceNames")
                for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    (ours,) = [d for d in yaml.safe_load_all((REPO / "config" / "autoscaler" / "rbac.yaml").read_text())
               if d and d["kind"] == "ClusterRole"]
    theirs = grants([r for o in rendered if o["kind"] in ("ClusterRole", "Role") for r in o["rules"]])
    theirs |= {(g, r, "get") for g, r, v in theirs if v == "list"}
    missing = sorted(grants(ours["rules"]) - theirs)
    assert not missing, f"the upstream chart does not grant {missing}: add them with rbac.additionalRules"
