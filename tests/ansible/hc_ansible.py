"""Run the collection the way a person or a Job does: real ansible-playbook / ansible-runner processes."""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# ansible-core lines meta/runtime.yml claims besides the project's own (pyproject.toml's, which every test runs);
# test_ansible_core_lines.py runs sanity, units and the playbooks on each (docs/collection.md)
OLDER_ANSIBLE_CORE_LINES = ("2.17", "2.18")
VENV_BIN = Path(sys.executable).parent
COLLECTIONS = REPO / "build" / "collections"
LINK = COLLECTIONS / "ansible_collections" / "homecluster" / "infra"


def collection_ready() -> None:
    """The link `make collection` creates; made here too so the tests run from a fresh checkout."""
    if not LINK.exists():
        LINK.parent.mkdir(parents=True, exist_ok=True)
        LINK.symlink_to(REPO)


def ansible_env(tmp_path: Path, **extra) -> dict:
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ANSIBLE_RETRY_FILES_ENABLED="false",
        PATH="%s:%s" % (VENV_BIN, env.get("PATH", "/usr/bin:/bin")),
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_playbook(tmp_path: Path, playbook: str, extravars: dict | None = None, args=(), timeout: float = 120,
                 **env) -> tuple:
    """ansible-playbook PLAYBOOK -e @vars.json ARGS; returns (CompletedProcess, wall seconds). The test's own
    vars, rendered as extra vars; a lifecycle Job's vars go through test_playbooks.job_args instead."""
    vars_file = tmp_path / ("vars-%d.json" % time.monotonic_ns())
    vars_file.write_text(json.dumps(extravars or {}))
    cmd = [str(VENV_BIN / "ansible-playbook"), playbook, "-e", "@%s" % vars_file, *args]
    started = time.monotonic()
    proc = subprocess.run(cmd, env=ansible_env(tmp_path, **env), capture_output=True, text=True, timeout=timeout,
                          cwd=tmp_path)
    return proc, time.monotonic() - started


SINGLE_PLAY = """---
- name: Run one module and keep its result
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The module under test
      {module}: "{{{{ module_args }}}}"
      register: module_result
      ignore_errors: true
    - name: Keep the result for the test
      ansible.builtin.debug:
        msg: "HCRESULT:{{{{ [module_result] | to_json | b64encode }}}}:HCRESULT"
"""

MODULE_PLAY = """---
- name: Run one module and keep its result
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The module under test
      {module}: "{{{{ item }}}}"
      loop: "{{{{ module_args_list }}}}"
      loop_control:
        label: "{{{{ item.method | default('') }}}} {{{{ item.state | default('') }}}}"
      register: module_result
      ignore_errors: true
    - name: Keep the results for the test
      ansible.builtin.debug:
        msg: "HCRESULT:{{{{ module_result.results | to_json | b64encode }}}}:HCRESULT"
"""


def run_module(tmp_path: Path, module: str, module_args: dict, check: bool = False, verbosity: int = 0,
               timeout: float = 120) -> tuple:
    """Run one module through ansible-playbook, without a loop (a loop would print its item, secrets
    included, at -vvv: the harness's output, not the module's); returns (result, CompletedProcess, wall)."""
    results, proc, wall = _run(tmp_path, SINGLE_PLAY.format(module=module), {"module_args": module_args},
                               check, verbosity, timeout)
    return results[0], proc, wall


def run_modules(tmp_path: Path, module: str, args_list: list, check: bool = False, verbosity: int = 0,
                timeout: float = 120) -> tuple:
    """Run a module once per args in ``args_list``, in order, in one ansible-playbook process (ansible's
    own start-up costs about a second on a busy machine). Returns (results, CompletedProcess, wall)."""
    return _run(tmp_path, MODULE_PLAY.format(module=module), {"module_args_list": args_list}, check, verbosity, timeout)


# The plays hand the registered result back through the debug action (it runs in ansible-playbook itself, base64 so
# the callback's quoting cannot touch it), not a copy to a file: copy is two more module processes (stat, copy) per
# play, 2-5 s each play on this machine (docs/testing.md#where-the-time-goes).
RESULT = re.compile(r"HCRESULT:([A-Za-z0-9+/=]*):HCRESULT")


def _run(tmp_path: Path, play_text: str, extravars: dict, check: bool, verbosity: int, timeout: float) -> tuple:
    play = tmp_path / "module-play.yml"
    play.write_text(play_text)
    args = (["--check"] if check else []) + (["-" + "v" * verbosity] if verbosity else [])
    proc, wall = run_playbook(tmp_path, str(play), extravars, args, timeout=timeout)
    found = RESULT.findall(proc.stdout)
    assert len(found) == 1, "the play did not reach the result task:\n%s\n%s" % (proc.stdout, proc.stderr)
    # the harness's own copy of the result leaves the output the tests read (as the copy task's no_log content did)
    proc.stdout = RESULT.sub("HCRESULT:(the result, %d bytes):HCRESULT" % len(found[0]), proc.stdout)
    return json.loads(base64.b64decode(found[0])), proc, wall


# What ansible-test sees as the collection: the collection's own content, not the Python package,
# the virtualenv or the other parts' tests that share this repository.
COLLECTION_CONTENT = ("galaxy.yml", "README.rst", "LICENSE", "meta", "plugins", "roles", "playbooks", "molecule",
                      "tests/unit/plugins",
                      "tests/sanity", "docs/collection.md", "docs/job-contract.md", "execution-environment.yml",
                      "images/runner")


# ansible-test's copies of the collection, one per NAME ("main", or an older ansible-core line), outside the
# checkout and shared by every checkout on the machine: see ansible_test_copy.
ANSIBLE_TEST_CACHE = Path(os.environ.get("HOMECLUSTER_ANSIBLE_TEST_CACHE",
                                         Path.home() / ".cache" / "homecluster" / "ansible-test"))


def ansible_test_root(name: str) -> Path:
    """Where ansible-test's copy of the collection for NAME lives; use it through ansible_test_copy."""
    return ANSIBLE_TEST_CACHE / name


@contextmanager
def ansible_test_copy(name: str) -> Iterator[Path]:
    """The collection copied to ansible_test_root(NAME) (copy_collection), held under an exclusive lock until
    the block ends. One copy per NAME on the machine, not one per checkout: ansible-test keeps its delegation
    virtualenv in the copy's tests/output, and a clean clone at a new path used to make it again (about 45 s
    of each sanity run, docs/testing.md); two checkouts (or workers) tested at once take turns instead of
    replacing each other's copy while ansible-test reads it."""
    import fcntl
    ANSIBLE_TEST_CACHE.mkdir(parents=True, exist_ok=True)
    with open(ANSIBLE_TEST_CACHE / (name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield copy_collection(ansible_test_root(name))


def copy_collection(root: Path) -> Path:
    """Copy the collection to ROOT/ansible_collections/homecluster/infra (ansible-test resolves symlinks,
    so it needs a real directory of that shape); returns that directory. A previous copy is replaced, except
    ansible-test's tests/output: `sanity --venv` keeps its delegation virtualenv there, and rebuilding it on
    every run cost about 50 s of the sanity test (docs/collection.md#supported-ansible-core-versions)."""
    import shutil
    dest = root / "ansible_collections" / "homecluster" / "infra"
    keep = dest / "tests" / "output"
    for path in [*dest.glob("*"), *dest.glob("tests/*")] if dest.exists() else []:
        if path != keep and path != keep.parent and path.exists():
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    dest.mkdir(parents=True, exist_ok=True)
    for item in COLLECTION_CONTENT:
        src = REPO / item
        if src.is_dir():
            shutil.copytree(src, dest / item, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
        elif src.exists():
            (dest / item).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / item)
    # the unit tests' loopback peers stay in the work tree (see tests/unit/plugins/conftest.py)
    if (dest / "tests" / "unit" / "plugins").is_dir():
        (dest / "tests" / "unit" / "plugins" / "peers_path.txt").write_text(str(REPO / "tests" / "ansible") + "\n")
    return dest


def build_collection(out: Path) -> Path:
    """`ansible-galaxy collection build` of the work tree into OUT (galaxy.yml's manifest decides what goes in);
    returns the tarball."""
    env = ansible_env(out)
    env.pop("ANSIBLE_COLLECTIONS_PATH")
    proc = subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out),
                           str(REPO)], env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return next(out.glob("homecluster-infra-*.tar.gz"))


def install_collection(tarball: Path, collections: Path, env: dict) -> None:
    """`ansible-galaxy collection install` of TARBALL into the collections directory COLLECTIONS (the only one
    on the collection path, or ansible-galaxy finds the work tree's link and installs nothing)."""
    proc = subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "-p",
                           str(collections), str(tarball)], env=dict(env, ANSIBLE_COLLECTIONS_PATH=str(collections)),
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
