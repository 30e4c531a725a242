"""The product's layers and the imports it must never make, as .importlinter states them.

import-linter (what `lint-imports` runs, called in-process) builds the import graph of the installed
package and checks each contract: a module that imports from a layer above its own, a product module
that imports the lab or a second Kubernetes client, or a new top-level module no layer names (the layers
contract is exhaustive) fails this test, with import-linter's report as the message.

import-linter's CLI configures logging with `dictConfig`, which disables every logger that exists at that
moment (`disable_existing_loggers`): in a process that runs more tests afterwards (an xdist worker, mutmut's
runs) the operator's own loggers went silent and a test that reads them failed. The test puts them back.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from importlinter.cli import EXIT_STATUS_SUCCESS, lint_imports

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def loggers_kept():
    """Every logger enabled before the test is enabled after it (see the module's docstring)."""
    enabled = [lg for lg in logging.root.manager.loggerDict.values()
               if isinstance(lg, logging.Logger) and not lg.disabled]
    yield
    for lg in enabled:
        lg.disabled = False


def test_the_import_contracts_are_kept(capsys, monkeypatch, loggers_kept):
    monkeypatch.chdir(ROOT)
    status = lint_imports(config_filename=os.fspath(ROOT / ".importlinter"), no_cache=True, no_logo=True)
    report = capsys.readouterr().out
    assert status == EXIT_STATUS_SUCCESS, report
    assert "0 broken" in report, report
