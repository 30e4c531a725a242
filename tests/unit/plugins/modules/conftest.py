"""Puts this folder on sys.path so the tests import their helper `module_run` under ansible-test units too."""
from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
