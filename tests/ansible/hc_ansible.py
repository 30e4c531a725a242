"""Run the collection the way a person or a Job does: real ansible-playbook / ansible-runner processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
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
      ansible.builtin.copy:
        content: "{{{{ [module_result] | to_json }}}}"
        dest: "{{{{ result_file }}}}"
        mode: "0600"
      check_mode: false
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
      ansible.builtin.copy:
        content: "{{{{ module_result.results | to_json }}}}"
        dest: "{{{{ result_file }}}}"
        mode: "0600"
      check_mode: false
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


def _run(tmp_path: Path, play_text: str, extravars: dict, check: bool, verbosity: int, timeout: float) -> tuple:
    play = tmp_path / "module-play.yml"
    play.write_text(play_text)
    result_file = tmp_path / ("result-%d.json" % time.monotonic_ns())
    args = (["--check"] if check else []) + (["-" + "v" * verbosity] if verbosity else [])
    proc, wall = run_playbook(tmp_path, str(play), dict(extravars, result_file=str(result_file)),
                              args, timeout=timeout)
    assert result_file.exists(), "the play did not reach the result task:\n%s\n%s" % (proc.stdout, proc.stderr)
    return json.loads(result_file.read_text()), proc, wall


# What ansible-test sees as the collection: the collection's own content, not the Python package,
# the virtualenv or the other parts' tests that share this repository.
COLLECTION_CONTENT = ("galaxy.yml", "meta", "plugins", "roles", "playbooks", "extensions", "tests/unit/plugins",
                      "tests/sanity", "docs/collection.md", "docs/job-contract.md", "execution-environment.yml",
                      "images/runner")


def copy_collection(root: Path) -> Path:
    """Copy the collection to ROOT/ansible_collections/homecluster/infra (ansible-test resolves symlinks,
    so it needs a real directory of that shape); returns that directory."""
    import shutil
    dest = root / "ansible_collections" / "homecluster" / "infra"
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
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
    # the README galaxy.yml names
    (dest / "README.md").write_text((REPO / "README.md").read_text() if (REPO / "README.md").exists() else "homecluster.infra\n")
    return dest
