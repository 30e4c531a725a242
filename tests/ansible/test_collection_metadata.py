"""The collection's metadata as Galaxy and its users read it: the license it ships, the links galaxy.yml
gives, and the ansible-core versions meta/runtime.yml claims. No subprocesses: these read files."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from hc_ansible import OLDER_ANSIBLE_CORE_LINES, REPO

# Debian's copy of the GNU GPL version 3 (package base-files), the text the collection ships.
DEBIAN_GPL3 = Path("/usr/share/common-licenses/GPL-3")
GPL_HEADER = "# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)"


def galaxy():
    return yaml.safe_load((REPO / "galaxy.yml").read_text())


def test_license_file_is_the_full_gpl3_text_the_metadata_and_headers_name():
    assert galaxy()["license"] == ["GPL-3.0-or-later"]
    assert (REPO / "LICENSE").read_text() == DEBIAN_GPL3.read_text()
    plugins = sorted((REPO / "plugins").glob("*/*.py"))
    assert plugins
    unlicensed = [str(p.relative_to(REPO)) for p in plugins if GPL_HEADER not in p.read_text()]
    assert not unlicensed, "plugin files without the GPL-3.0-or-later header: %s" % unlicensed


def test_collection_readme_shows_install_and_an_example_of_every_module_and_role():
    readme = (REPO / "README.rst").read_text()
    assert galaxy()["readme"] == "README.rst"
    assert "ansible-galaxy collection install homecluster.infra" in readme
    examples = "\n".join(block for block in readme.split(".. code-block:: yaml")[1:])
    modules = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py"))
    roles = sorted(p.name for p in (REPO / "roles").iterdir() if p.is_dir())
    shown = set(re.findall(r"homecluster\.infra\.(\w+)", examples))
    assert not set(modules + roles) - shown, "README.rst has no example of %s" % sorted(set(modules + roles) - shown)
    for link in ("https://github.com/homecluster-dev/homecluster/issues", "LICENSE", "GPL-3.0-or-later"):
        assert link in readme, link


def test_collection_readme_renders_without_warnings():
    # Galaxy renders README.rst with docutils; a markup error would show as raw text or an error box there
    import docutils.core  # comes with antsibull-changelog (test extras)
    docutils.core.publish_string((REPO / "README.rst").read_text(), writer="html",
                                 settings_overrides={"halt_level": 2, "report_level": 2, "warning_stream": False})


def test_requires_ansible_starts_at_the_oldest_line_the_tests_run_and_has_no_upper_bound():
    # Every test of the collection runs the venv's ansible-core, installed from pyproject.toml's range;
    # test_ansible_core_lines.py runs sanity, units and the playbooks on the older lines. No upper bound: Ansible's
    # guidance for collections (a cap makes every newer ansible-core warn); the tested lines are stated instead.
    from ansible.release import __version__ as project_version
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    requires = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    claim = SpecifierSet(requires)
    assert all(spec.operator in (">=", ">") for spec in claim), "meta/runtime.yml caps ansible-core: %s" % requires
    project_line = Version(project_version).release[:2]
    tested = {project_line} | {tuple(int(x) for x in line.split(".")) for line in OLDER_ANSIBLE_CORE_LINES}
    for minor in range(9, 30):
        claimed = any(Version("2.%d.%d" % (minor, patch)) in claim for patch in (0, 5, 99))
        assert claimed == ((2, minor) >= min(tested)), (
            "meta/runtime.yml claims %s; the oldest line the tests run is %s" % (requires, min(tested)))
    assert project_line == max(tested), "pyproject.toml's ansible-core should be the newest line tested"
    # the ansible-core the venv gets comes from the lab's package (the root pyproject.toml names none)
    project = [d for d in tomllib.loads((REPO / "lab" / "pyproject.toml").read_text())["project"]["dependencies"]
               if d.startswith("ansible-core")]
    assert len(project) == 1, "lab/pyproject.toml should install ansible-core once: %s" % project
    pinned = SpecifierSet(project[0][len("ansible-core"):])
    assert any(Version("2.%d.0" % m) in pinned for m in range(9, 30)), "lab/pyproject.toml installs no 2.x line"
    assert all(Version("2.%d.0" % m) in claim for m in range(9, 30) if Version("2.%d.0" % m) in pinned), (
        "lab/pyproject.toml installs %s, outside meta/runtime.yml's claim %s" % (project, requires))
    readme = (REPO / "README.rst").read_text()
    lines = sorted("%d.%d" % line for line in tested)
    assert all(line in readme for line in lines), "README.rst does not state the tested lines %s" % lines
    assert "``%s``" % requires in readme or requires in readme, "README.rst does not state %s" % requires


def test_module_docs_say_when_to_use_the_general_modules_instead():
    """seealso in each module's documentation: the community.general and kubernetes.core modules a reader
    already knows, each with a description of when to use which."""
    import re

    wanted = {"machine_power": {"community.general.ipmi_power", "community.general.redfish_command"},
              "node_drain": {"kubernetes.core.k8s_drain"}, "node_cordon": {"kubernetes.core.k8s_drain"}}
    for module, refs in wanted.items():
        source = (REPO / "plugins" / "modules" / ("%s.py" % module)).read_text()
        doc = yaml.safe_load(re.search(r'DOCUMENTATION = r"""(.*?)"""', source, re.S).group(1))
        seen = {entry["module"]: entry.get("description", "") for entry in doc.get("seealso") or []}
        assert refs <= set(seen), "%s: seealso %s" % (module, sorted(seen))
        for ref in refs:
            assert "use" in seen[ref].lower() and len(seen[ref]) > 60, (module, ref, seen[ref])
