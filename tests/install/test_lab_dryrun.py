"""The rendered install is accepted by an API server: the real kubectl, `apply --dry-run=server`, against the lab.

The lab's API server validates our custom resources fully (schema, CEL) but built-in kinds only by name
(see homecluster_lab.apiserver); test_render covers built-in schemas offline. It does not serve
cert-manager's kinds (Certificate, Issuer) or the Prometheus Operator's (ServiceMonitor): those objects
are left out here and checked by hand in test_render.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from install_helpers import CONFIG, dump, kubectl_env, render

NOT_SERVED_BY_LAB = ("cert-manager.io/", "monitoring.coreos.com/")


async def _kubectl(api, home: Path, *args: str, input: str | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--cache-dir", str(home / "cache"), *args,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=kubectl_env(api, home))
    out, err = await asyncio.wait_for(proc.communicate(input.encode() if input is not None else None), 60)
    return proc.returncode or 0, out.decode(), err.decode()


def _served(objects):
    return [o for o in objects if not o["apiVersion"].startswith(NOT_SERVED_BY_LAB)]


@pytest.mark.lab
@pytest.mark.parametrize("directory", ["default", "autoscaler", "samples"])
async def test_server_side_dry_run_accepts_everything(lab_api, tmp_path, directory):
    objects = _served(render(CONFIG / directory))
    home = tmp_path / "home"
    # Namespaced objects need their namespace to exist, even in a dry run (as on a real server).
    rc, _, err = await _kubectl(lab_api, home, "create", "namespace", "homecluster-system")
    assert rc == 0, err
    rc, out, err = await _kubectl(lab_api, home, "apply", "--dry-run=server", "-f", "-", input=dump(objects))
    assert rc == 0, f"the lab refused config/{directory}:\n{err}\n{out}"
    assert out.count("(server dry run)") == len(objects), out
    # nothing was stored by the dry run
    assert lab_api.get("deployments.apps", "homecluster-controller", "homecluster-system") is None


@pytest.mark.lab
async def test_server_side_dry_run_refuses_an_invalid_claim(lab_api, tmp_path):
    """The same path refuses what a real server refuses: the dry run is a check, not a formality."""
    home = tmp_path / "home"
    claim = ("apiVersion: infra.homecluster.dev/v2alpha1\nkind: NodeClaim\nmetadata: {name: c}\n"
             "spec: {requestedAt: not-a-time}\n")
    rc, out, err = await _kubectl(lab_api, home, "apply", "--dry-run=server", "-f", "-", input=claim)
    assert rc != 0, out
    assert "slotRef" in err and "requestedAt" in err, err
