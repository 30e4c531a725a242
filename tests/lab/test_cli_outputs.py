"""What scripts and people get from the CLI against the lab API server: `status -o json|yaml|wide` and
`--watch`, `claim`/`release -o name|json`, and the exit codes that tell failed (1), usage (2), timed out (3),
unreachable (4) and forbidden (5) apart, each with one line naming the fix (docs/cli.md).

Every verb runs as the user runs it: `python -m homecluster` in a subprocess, over HTTP to the lab's server.
No operator runs here, so a claim stays pending (which is what the timed-out case needs).
"""
from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest
import yaml
from test_claimcli import GROUP, SLOT

from homecluster_lab.apiserver import LabAPIServer

CLAIMS = "nodeclaims.infra.homecluster.dev"


async def homecluster(*args: str, kubeconfig=None, timeout: float = 60) -> tuple[int, str, str]:
    more = ("--kubeconfig", str(kubeconfig)) if kubeconfig else ()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "homecluster", *args, *more,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ})
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
async def pool(lab_api):
    await lab_api.create(GROUP)
    await lab_api.create(SLOT)
    return lab_api


async def test_status_as_json_yaml_and_wide(pool):
    rc, out, err = await homecluster("claim", "worker-01", "--requested-by", "alice", "-o", "name",
                                     kubeconfig=pool.kubeconfig_path)
    assert rc == 0, err
    kind_and_name = out.strip()
    assert kind_and_name.startswith(f"nodeclaim.infra.homecluster.dev/worker-01-") and out.count("\n") == 1, out
    name = kind_and_name.split("/")[1]
    assert pool.get(CLAIMS, name)["spec"]["requestedBy"] == "alice"

    rc, out, err = await homecluster("status", "-o", "json", kubeconfig=pool.kubeconfig_path)
    assert rc == 0, err
    doc = json.loads(out)
    assert [s["name"] for s in doc["slots"]] == ["worker-01"]
    assert doc["slots"][0]["group"] == "workers" and doc["slots"][0]["powerMethod"] == "wol"
    claim = doc["claims"][0]
    assert (claim["name"], claim["slot"], claim["phase"], claim["requestedBy"]) == (name, "worker-01", "pending",
                                                                                   "alice")
    assert claim["deadlineAt"] == pool.get(CLAIMS, name)["spec"]["deadlineAt"]  # the API's value, not "in 20m"
    assert doc["jobs"] == [] and doc["jobsReadable"] is True and doc["endedClaimsHidden"] == 0

    rc, out, err = await homecluster("status", "-o", "yaml", kubeconfig=pool.kubeconfig_path)
    assert rc == 0 and yaml.safe_load(out) == doc, err

    rc, out, err = await homecluster("status", "-o", "wide", kubeconfig=pool.kubeconfig_path)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[1].split() == ["NAME", "GROUP", "POWER", "PHASE", "CLAIM", "ATTEMPT", "AGE", "NODE", "METHOD"]
    assert lines[2].split()[-2:] == ["worker-01", "wol"]
    header = next(line for line in lines if line.startswith("NAME") and "SLOT" in line)
    assert header.split()[-2:] == ["REQUESTED-BY", "MESSAGE"]


async def test_status_watch_prints_again_on_a_change(pool):
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "homecluster", "status", "--watch", "-o", "json", "--interval", "0.2",
        "--kubeconfig", str(pool.kubeconfig_path), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        first = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
        assert first["claims"] == []
        rc, out, err = await homecluster("claim", "worker-01", "-o", "json", kubeconfig=pool.kubeconfig_path)
        assert rc == 0, err
        created = json.loads(out)
        second = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
        assert [c["name"] for c in second["claims"]] == [created["metadata"]["name"]]
    finally:
        proc.terminate()
        await proc.wait()


async def test_release_as_name_and_json(pool):
    rc, out, err = await homecluster("claim", "worker-01", "-o", "json", kubeconfig=pool.kubeconfig_path)
    name = json.loads(out)["metadata"]["name"]
    rc, out, err = await homecluster("release", "worker-01", "--no-wait", "-o", "json",
                                     kubeconfig=pool.kubeconfig_path)
    assert rc == 0, err
    assert json.loads(out) == {"slot": "worker-01", "claims": [name], "released": False}
    assert "deleted; the operator reverses it" in err  # the sentence goes to stderr, stdout stays parseable
    rc, out, err = await homecluster("release", "worker-01", "-o", "name", kubeconfig=pool.kubeconfig_path)
    assert (rc, out) == (0, ""), err  # nothing live: nothing to name


async def test_a_wait_that_runs_out_exits_3_and_the_claim_goes_on(pool):
    rc, out, err = await homecluster("claim", "worker-01", "--wait", "--timeout", "1",
                                     kubeconfig=pool.kubeconfig_path)
    assert rc == 3, err + out
    assert "is not ready after 1s; it keeps going" in err
    name = out.splitlines()[0].split('"')[1]
    assert pool.get(CLAIMS, name) is not None


async def test_forbidden_exits_5_naming_the_request(pool):
    pool.faults.fail_next(CLAIMS, code=403, verbs=("list",))
    rc, out, err = await homecluster("status", kubeconfig=pool.kubeconfig_path)
    assert rc == 5, err
    assert err.startswith("error: forbidden: list nodeclaims: ask for the view role") and err.count("\n") == 1, err
    pool.faults.fail_next("nodes.infra.homecluster.dev", code=401, verbs=("get",))
    rc, out, err = await homecluster("release", "worker-01", kubeconfig=pool.kubeconfig_path)
    assert rc == 5 and "refused your credentials" in err and "renew the token" in err, err


async def test_a_missing_crd_names_the_kind_and_the_install(tmp_path):
    async with LabAPIServer(workdir=tmp_path / "bare") as bare:  # no CRDs
        for verb in (("status",), ("claim", "worker-01"), ("release", "worker-01")):
            rc, out, err = await homecluster(*verb, kubeconfig=bare.kubeconfig_path)
            assert rc == 1, err
            assert err.count("\n") == 1 and "404" not in err, err
            assert "does not serve Node (nodes.infra.homecluster.dev/v2alpha1)" in err or \
                "does not serve NodeClaim" in err, err
            assert "homecluster crds | kubectl apply --server-side -f -" in err, err


async def test_run_with_a_bad_kubeconfig_is_one_line(tmp_path):
    bad = tmp_path / "config"
    bad.write_text("clusters: [")
    rc, out, err = await homecluster("run", "--no-webhook", "--no-provider", kubeconfig=bad)
    assert rc == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [f"homecluster run: error: no usable kubeconfig: {bad}: not YAML: "
                     + lines[0].split("not YAML: ")[1]], err
    assert "Traceback" not in err


@pytest.mark.parametrize("verb", [("status",), ("claim", "worker-01"), ("run", "--no-webhook", "--no-provider")])
async def test_no_kubeconfig_anywhere_gives_the_hint_once(verb, tmp_path):
    """No --kubeconfig, no KUBECONFIG, no ~/.kube/config, not in a pod: one line, saying where it looked and the
    fix once (the hint used to be printed twice)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST",
                                                            "KUBERNETES_SERVICE_PORT")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "homecluster", *verb, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**env, "HOME": str(tmp_path)})
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    except TimeoutError:
        proc.kill()  # `run` that went on without credentials is not left behind
        await proc.wait()
        raise
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, err
    assert f"{tmp_path}/.kube/config does not exist and this is not a pod" in lines[0], lines
    assert lines[0].count("pass --kubeconfig or set KUBECONFIG") == 1, lines


async def test_release_as_name_prints_the_deleted_claim_as_kubectl_would(pool):
    rc, out, err = await homecluster("claim", "worker-01", "-o", "name", kubeconfig=pool.kubeconfig_path)
    assert rc == 0, err
    rc, released, err = await homecluster("release", "worker-01", "--no-wait", "-o", "name",
                                          kubeconfig=pool.kubeconfig_path)
    assert (rc, released) == (0, out), err  # the name `claim -o name` printed, alone on stdout
    assert released.startswith("nodeclaim.infra.homecluster.dev/worker-01-") and released.count("\n") == 1


async def test_a_claim_that_ends_failed_exits_1_naming_the_claim(pool):
    """`claim --wait` follows the claim; when it ends failed (here set as the operator would, none runs) the
    verb ends with exit 1 (docs/cli.md: failed), telling it apart from a wait that ran out (3)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "homecluster", "claim", "worker-01", "--wait", "-o", "name",
        "--kubeconfig", str(pool.kubeconfig_path), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        name = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip().split("/")[1]
        await pool.patch(CLAIMS, name, {"status": {"phase": "failed", "reason": "StartupJobFailed"}},
                         subresource="status")
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 1, err
    assert f"error: nodeclaim {name} ended failed before ready" in err.decode(), err
