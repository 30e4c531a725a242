"""What can be checked of images/runner/Containerfile without building it (no container engine here): it
copies only files that exist or that `ansible-galaxy collection build` makes, and it runs as a non-root user
with everything it writes under /runner. The ansible-builder definition: test_execution_environment.py."""
from __future__ import annotations

import re

from hc_ansible import REPO

CONTAINERFILE = REPO / "images" / "runner" / "Containerfile"
PRODUCED_BY_BUILD = {"build/homecluster-infra.tar.gz"}  # the collection tarball, renamed (see the Containerfile)


def test_containerfile_copies_only_existing_files_and_runs_as_non_root():
    text = CONTAINERFILE.read_text()
    sources = re.findall(r"^COPY\s+(\S+)\s+\S+", text, re.M)
    assert sources, "the Containerfile copies nothing?"
    for src in sources:
        assert src in PRODUCED_BY_BUILD or (REPO / src).exists(), "COPY %s: no such file" % src
    assert "requirements.txt" in sources, "the image installs the collection's requirements.txt"
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert users and users[-1] not in ("0", "root")
    assert re.search(r"ANSIBLE_HOME=/runner", text) and re.search(r"^WORKDIR /runner", text, re.M)
