"""The chart as README.md and docs/install.md walk a newcomer through it, on the real control plane.

- README.md's typo'd install, run as written: `helm install` stops before anything is made and prints the lines
  README.md shows, naming the key.
- The CRD upgrade path of docs/install.md ("Upgrading"). An install of the previous chart (its CRDs as first
  published, commit 5c9f7f7: tests/fixtures/crds-5c9f7f7) holds a pool, a Redfish slot and a claim. `helm
  upgrade` to this chart leaves the CRDs as they were (Helm never touches crds/ after the install); `helm show
  crds charts/homecluster | kubectl apply --server-side --force-conflicts -f -` then replaces them: every object
  is still there with its spec, the stored version is v2alpha1 alone, and what the new schema adds
  (spec.power.redfish.insecure, defaulted; its http:// rule) is in effect.

The webhook has no pod behind it here (no kubelet), so the releases set webhook.failurePolicy=Ignore.
"""
from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from support.waits import until

from homecluster_lab.k8s import binaries
from homecluster_lab.k8s.controlplane import RealControlPlane

from k8s_objects import KubectlReader, established, run
from helm_chart import CHART, SELF_SIGNED, helm_env, helm_or_skip

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.asyncio(loop_scope="module")

PREVIOUS_CRDS = REPO / "tests" / "fixtures" / "crds-5c9f7f7"
NAMESPACE = "homecluster-system"
SETS = ("--set", "webhook.failurePolicy=Ignore", "--set", SELF_SIGNED[0])
OBJECTS = """
apiVersion: infra.homecluster.dev/v2alpha1
kind: Group
metadata: {name: workers}
spec: {minSize: 0, maxSize: 2, template: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}}
---
apiVersion: infra.homecluster.dev/v2alpha1
kind: Node
metadata: {name: worker-02}
spec:
  groupRef: workers
  power:
    method: redfish
    redfish: {endpoint: "https://192.168.10.22", credentialsSecretRef: {name: worker-02-bmc,
              namespace: homecluster-system}}
---
apiVersion: infra.homecluster.dev/v2alpha1
kind: NodeClaim
metadata: {name: worker-02-manual}
spec: {slotRef: worker-02, requestedBy: alice}
"""
UPGRADE = "helm show crds charts/homecluster | kubectl apply --server-side --force-conflicts -f -"
KINDS = "groups.infra.homecluster.dev,nodes.infra.homecluster.dev,nodeclaims.infra.homecluster.dev"


@pytest.fixture(scope="module")
def kubectl() -> str:
    return str(binaries.find("kubectl"))


@pytest.fixture(scope="module")
def env(real_k8s: RealControlPlane, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return helm_env(real_k8s.kubeconfig_path, tmp_path_factory.mktemp("helm-home"))


async def _ok(argv: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    code, out, err = await run(argv, env, stdin=stdin)
    assert code == 0, f"{' '.join(argv[:4])} failed:\n{out}{err}"
    return out


async def _redfish_schema(kubectl: str, env: dict[str, str]) -> dict:
    crd = json.loads(await _ok([kubectl, "get", "crd", "nodes.infra.homecluster.dev", "-o", "json"], env))
    (version,) = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    return spec["power"]["properties"]["redfish"]["properties"]


async def _served_with(kubectl: str, env: dict[str, str], field: str, present: bool) -> None:
    """Until the nodes CRD's schema has (or lacks) spec.power.redfish.<field> and every CRD is Established."""
    async def schema_is_so() -> bool:
        return (field in await _redfish_schema(kubectl, env)) == present
    await until(schema_is_so, f"the nodes CRD {'with' if present else 'without'} spec.power.redfish.{field}", 60)
    await established(KubectlReader(kubectl, env), *KINDS.split(","))


async def test_helm_show_crds_over_the_previous_releases_crds_keeps_every_object(kubectl, env, tmp_path):
    helm = str(helm_or_skip())
    previous = tmp_path / "homecluster"
    shutil.copytree(CHART, previous)
    shutil.rmtree(previous / "crds")
    shutil.copytree(PREVIOUS_CRDS, previous / "crds")
    # a cluster that never had ours (the refused install of the other test leaves the CRDs: Helm makes crds/
    # before it reads the values)
    await _ok([kubectl, "delete", "crd", "--ignore-not-found", "--wait", *KINDS.split(",")], env)
    await _ok([helm, "install", "homecluster", str(previous), "-n", NAMESPACE, "--create-namespace", *SETS], env)
    await _served_with(kubectl, env, "insecure", present=False)
    await _ok([kubectl, "apply", "--server-side", "--field-manager=admin", "-f", "-"], env, stdin=OBJECTS)
    before = json.loads(await _ok([kubectl, "get", KINDS, "-o", "json"], env))["items"]
    assert len(before) == 3

    await _ok([helm, "upgrade", "homecluster", str(CHART), "-n", NAMESPACE, *SETS], env)
    assert "insecure" not in await _redfish_schema(kubectl, env), "helm upgrade changed crds/ (it never does)"

    assert UPGRADE in (REPO / "docs" / "install.md").read_text(), "docs/install.md no longer says the upgrade tested here"
    crds = await _ok([helm, "show", "crds", str(CHART)], env)
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(crds) if d] == [
        f"{k}.infra.homecluster.dev" for k in ("groups", "nodeclaims", "nodes")], "one YAML document per CRD"
    await _ok([kubectl, "apply", "--server-side", "--force-conflicts", "-f", "-"], env, stdin=crds)
    await _served_with(kubectl, env, "insecure", present=True)
    for name in ("groups", "nodes", "nodeclaims"):
        crd = json.loads(await _ok([kubectl, "get", "crd", f"{name}.infra.homecluster.dev", "-o", "json"], env))
        assert crd["status"]["storedVersions"] == ["v2alpha1"], crd["status"]
        assert crd["metadata"]["labels"]["app.kubernetes.io/version"] == yaml.safe_load(
            (CHART / "Chart.yaml").read_text())["appVersion"], "the CRDs do not say they are this chart's"
        assert crd["spec"] == next(d for d in yaml.safe_load_all(crds) if d and d["metadata"]["name"] ==
                                   f"{name}.infra.homecluster.dev")["spec"] | {"conversion": crd["spec"]["conversion"]}
    after = json.loads(await _ok([kubectl, "get", KINDS, "-o", "json"], env))["items"]
    assert {(o["kind"], o["metadata"]["uid"]) for o in after} == {(o["kind"], o["metadata"]["uid"]) for o in before}
    specs = {o["kind"]: o["spec"] for o in after}
    assert specs["Node"]["power"]["redfish"]["insecure"] is False, "the new schema's default, applied on read"
    for old in before:
        assert {k: v for k, v in specs[old["kind"]].items() if k != "power"} == {
            k: v for k, v in old["spec"].items() if k != "power"}, old["kind"]
    # the new CRD's rule is in force: an http:// endpoint without insecure is refused, naming the fix
    code, _, err = await run([kubectl, "apply", "--server-side", "--field-manager=admin", "-f", "-"], env,
                             stdin=OBJECTS.replace("https://192.168.10.22", "http://192.168.10.23")
                             .replace("name: worker-02}", "name: worker-03}"))
    assert code != 0 and "spec.power.redfish.insecure: true" in err, err
    # the release goes (its CRDs and objects stay, as Helm does): the name is free for the module's other test
    await _ok([helm, "uninstall", "homecluster", "-n", NAMESPACE, "--wait"], env)


async def test_readmes_typod_install_is_refused_naming_the_key(kubectl, env):
    text = (REPO / "README.md").read_text()
    block = text[text.index("$ helm install homecluster charts/homecluster"):]
    block = block[:block.index("```")].splitlines()
    command, shown = shlex.split(block[0].removeprefix("$ ")), [line for line in block[1:] if line.strip()]
    assert command[:3] == ["helm", "install", "homecluster"] and "certificates.mod=self-signed" in command
    command[0], command[3] = str(helm_or_skip()), str(CHART)
    code, out, err = await run(command, env)
    assert code != 0, out
    assert [line for line in err.splitlines() if line.strip()] == shown, f"README.md shows {shown}; helm said {err}"
    # no release and none of its objects; the CRDs are there (Helm makes crds/ before it reads the values)
    code, out, err = await run([kubectl, "get", "deployments,serviceaccounts", "-n", NAMESPACE, "-o", "name"], env)
    assert "homecluster-controller" not in out, "the refused install made its objects"
    assert (await _ok([str(helm_or_skip()), "list", "-A", "-q"], env)).strip() == ""
    await _ok([kubectl, "get", "crd", *KINDS.split(",")], env)
