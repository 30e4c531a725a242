"""Let ``ansible-test sanity --venv`` run without ci-files.testing.ansible.com.

ansible-test bootstraps pip in each test virtualenv with a get-pip script it downloads from
Ansible's CI file server (not a package registry), and uses a cached copy if one exists at
``~/.ansible/test/cache/get_pip_<version>.py``. This writes a stand-in there: it installs pip
from the interpreter's own ``ensurepip`` and then installs the packages ansible-test asked for
from the normal package index (PyPI, through the machine's pip configuration).

Run:  python tests/ansible/ansible_test_offline.py   (idempotent; prints the paths it wrote)
"""
from __future__ import annotations

import os
from pathlib import Path

PIP_VERSIONS = ("23.1.2", "24.2")  # what ansible-test bootstraps: 23.1.2 in ansible-core 2.17, 24.2 in 2.18 and 2.19

STAND_IN = '''"""Stand-in for get-pip.py written by homecluster's tests/ansible/ansible_test_offline.py."""
import os
import subprocess
import sys

# ensurepip points PIP_CONFIG_FILE at /dev/null; clear it so the install below honours the
# machine's pip configuration (index, certificates, find-links).
env = {k: v for k, v in os.environ.items() if k != "PIP_CONFIG_FILE"}
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"], env=env)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
if args:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check"] + args, env=env)
'''


def install(home: str | None = None) -> list:
    cache = Path(home or os.path.expanduser("~")) / ".ansible" / "test" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    written = []
    for version in PIP_VERSIONS:
        path = cache / ("get_pip_%s.py" % version.replace(".", "_"))
        if not path.exists() or path.read_text() != STAND_IN:
            path.write_text(STAND_IN)
        written.append(path)
    return written


if __name__ == "__main__":
    for p in install():
        print(p)
