"""The operator's image runs as the Deployment runs it: user 65532, read-only root filesystem, no
capabilities, /tmp an emptyDir (config/manager/manager.yaml)."""
from __future__ import annotations

import pytest

import runc_container as rc

NAME = "controller"
UID = 65532  # the Deployment's runAsUser and the Containerfile's USER


@pytest.fixture(autouse=True)
def _runnable():
    reason = rc.why_not_runnable(NAME)
    if reason:
        pytest.skip(reason)


def _homecluster(tmp_path, *args):
    config = rc.confined_config(NAME, ["homecluster", *args], uid=UID, gid=UID, tmpfs={"/tmp": UID})
    return rc.run(config, tmp_path, timeout=60)


def test_version_is_the_projects(tmp_path):
    done = _homecluster(tmp_path, "--version")
    assert done.returncode == 0, done.stderr[-2000:]
    assert rc.version() in done.stdout, done.stdout


def test_run_help_names_the_flags_the_chart_sets(tmp_path):
    done = _homecluster(tmp_path, "run", "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    for flag in ("--job-image", "--managed-node-selector", "--log-format"):
        assert flag in done.stdout, f"`homecluster run --help` in the image lacks {flag}:\n{done.stdout}"


def test_the_process_is_confined(tmp_path):
    """What the tests above run under: not root, no capabilities, the root filesystem refuses a write."""
    config = rc.confined_config(NAME, ["python", "-c", PROBE], uid=UID, gid=UID, tmpfs={"/tmp": UID})
    probe = rc.run(config, tmp_path, timeout=60)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.split() == [str(UID), "0000000000000000", "EROFS", "tmp-writable"], probe.stdout


PROBE = """
import errno, os
print(os.getuid())
print([l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0])
try:
    open('/opt/x', 'w')
except OSError as e:
    print(errno.errorcode[e.errno])
open('/tmp/x', 'w').write('x'); print('tmp-writable')
"""
