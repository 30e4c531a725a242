"""The lab starts `homecluster run` through homecluster_lab.operator_boot: the product as its image runs it,
without the client libraries the lab's virtualenv adds (kubernetes, kubernetes_asyncio), which kopf would
otherwise import at every operator start."""
from __future__ import annotations

import json
import subprocess
import sys

from homecluster_lab.operator_boot import NOT_IN_THE_IMAGE
from homecluster_lab.operator_proc import OperatorOptions, command

PROBE = """
import json, sys
{prelude}
import kopf
from kopf._cogs.helpers import thirdparty
print(json.dumps({{"sync": thirdparty.V1ObjectMetaSync is None, "async": thirdparty.V1ObjectMetaAsync is None,
                  "loaded": sorted(m for m, mod in sys.modules.items()
                                   if mod is not None and m.split(".")[0] in {names!r})}}))
"""


def probe(prelude: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE.format(prelude=prelude, names=NOT_IN_THE_IMAGE)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_kopf_started_through_the_boot_imports_no_client_library():
    hidden = probe("from homecluster_lab.operator_boot import hide; hide()")
    assert hidden == {"sync": True, "async": True, "loaded": []}


def test_without_the_boot_kopf_would_import_both_clients():
    """The point of the boot: in the lab's virtualenv both clients are importable and kopf takes them."""
    plain = probe("")
    assert plain["sync"] is False and plain["async"] is False
    assert {"kubernetes", "kubernetes_asyncio"} <= {m.split(".")[0] for m in plain["loaded"]}


def test_the_boot_runs_the_products_command_line():
    argv = command(OperatorOptions(kubeconfig="/lab/kubeconfig", namespace="ns", provider_address="127.0.0.1:1"))
    assert argv[1:4] == ["-m", "homecluster_lab.operator_boot", "run"]
    done = subprocess.run([sys.executable, "-m", "homecluster_lab.operator_boot", "run", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--provider-address" in done.stdout and "--webhook-address" in done.stdout
