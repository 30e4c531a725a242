"""Every mention of an ansible-core version in the collection and its docs, read against the two statements:
meta/runtime.yml's requires_ansible (the oldest line the collection supports: the oldest the tests run,
test_collection_metadata.py) and playbooks/tasks/job_inputs.yml's job_inputs_min_ansible_core (the line a
lifecycle Job needs, the one the runner image and the project (lab/pyproject.toml) install). No subprocesses: these read files."""
from __future__ import annotations

import re
import tomllib

import yaml

from hc_ansible import OLDER_ANSIBLE_CORE_LINES, REPO

JOB_INPUTS = REPO / "playbooks" / "tasks" / "job_inputs.yml"
# where a version of ansible-core may be named: the collection's files, its docs, the Job's image
MENTIONS = ("README.rst", "README.md", "docs", "roles", "playbooks", "plugins", "meta", "galaxy.yml",
            "execution-environment.yml", "images/runner/Containerfile")
# "ansible-core 2.19", "ansible-core** 2.17", "ansible-core>=2.19", "min_ansible_version: "2.16"", "version('2.19'"
VERSION = re.compile(r"(?:ansible-core[^0-9\n]{0,30}|min_ansible_version:\s*\"?|version\(')(2\.\d+)")


def collection_floor() -> str:
    requires = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    match = re.fullmatch(r">=(2\.\d+)\.0", requires)
    assert match, "meta/runtime.yml's requires_ansible %r is not >=2.N.0" % requires
    return match.group(1)


def job_floor() -> str:
    assert_task = yaml.safe_load(JOB_INPUTS.read_text())[0]
    return assert_task["vars"]["job_inputs_min_ansible_core"]


def files():
    for name in MENTIONS:
        path = REPO / name
        yield from (sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])


def test_every_role_claims_the_collections_oldest_line():
    claims = {p.parent.parent.name: yaml.safe_load(p.read_text())["galaxy_info"]["min_ansible_version"]
              for p in sorted((REPO / "roles").glob("*/meta/main.yml"))}
    assert claims
    wrong = {role: claim for role, claim in claims.items() if str(claim) != collection_floor()}
    assert not wrong, "roles whose min_ansible_version is not meta/runtime.yml's %s: %s" % (collection_floor(), wrong)


def test_the_job_playbooks_state_their_line_once():
    asserting = sorted(str(p.relative_to(REPO)) for p in (REPO / "playbooks").rglob("*.yml")
                       if "ansible_version" in p.read_text())
    assert asserting == ["playbooks/tasks/job_inputs.yml"], asserting
    reading = sorted(p.name for p in (REPO / "playbooks").glob("*.yml") if "job_vars_file" in p.read_text())
    including = sorted(p.name for p in (REPO / "playbooks").glob("*.yml") if "tasks/job_inputs.yml" in p.read_text())
    assert reading == including == ["drain.yml", "shutdown.yml", "startup.yml"], (reading, including)


def test_the_job_line_is_the_line_the_image_and_the_project_install():
    floor = job_floor()
    installs = {
        "lab/pyproject.toml": " ".join(d for d in tomllib.loads((REPO / "lab" / "pyproject.toml").read_text())
                                       ["project"]["dependencies"] if d.startswith("ansible-core")),
        "execution-environment.yml": (REPO / "execution-environment.yml").read_text(),
        "images/runner/Containerfile": (REPO / "images" / "runner" / "Containerfile").read_text(),
    }
    for where, text in installs.items():
        assert "ansible-core>=%s," % floor in text, "%s does not install ansible-core %s (the Job's line)" % (where, floor)


def test_every_mention_names_a_line_the_statements_give():
    tested = sorted({*OLDER_ANSIBLE_CORE_LINES, job_floor()}, key=lambda line: tuple(map(int, line.split("."))))
    assert tested[0] == collection_floor(), (tested, collection_floor())
    stray = []
    for path in files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            stray += ["%s:%d %s" % (path.relative_to(REPO), number, v) for v in VERSION.findall(line) if v not in tested]
    assert not stray, "ansible-core versions neither claimed nor tested (%s): %s" % (", ".join(tested), stray)
    for doc in ("README.rst", "docs/collection.md"):
        text = (REPO / doc).read_text()
        assert all(line in text for line in tested), "%s does not name every tested line %s" % (doc, tested)
    assert "Lifecycle Jobs need %s" % job_floor() in (REPO / "docs" / "collection.md").read_text()
