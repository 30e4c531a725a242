"""ansible-test's copy of the collection is one per machine, not one per checkout (hc_ansible.ansible_test_copy):
its tests/output holds ansible-test's delegation virtualenv, which a clean clone at a new path used to make again."""
from __future__ import annotations

from pathlib import Path

import hc_ansible
import pytest


def test_a_clean_clone_elsewhere_finds_the_same_copy_and_its_virtualenv(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    monkeypatch.setattr(hc_ansible, "ANSIBLE_TEST_CACHE", tmp_path / "cache", raising=False)
    with hc_ansible.ansible_test_copy("main") as dest:
        venv = dest / "tests" / "output" / ".tmp" / "delegation" / "python3.11" / "pyvenv.cfg"
        venv.parent.mkdir(parents=True)
        venv.write_text("home = /usr/bin\n")  # what ansible-test sanity --venv leaves
        assert (dest / "galaxy.yml").is_file()
    monkeypatch.setattr(hc_ansible, "REPO", tmp_path / "another-clone")  # the same content, another path
    monkeypatch.setattr(hc_ansible, "COLLECTION_CONTENT", ())
    with hc_ansible.ansible_test_copy("main") as again:
        assert again == dest and venv.is_file(), "the next checkout's copy lost ansible-test's virtualenv"
        assert not (again / "galaxy.yml").exists(), "the previous checkout's content was left in the copy"
