"""The real operator (`homecluster run`, a subprocess) against the whole lab: see integration_pool.py."""
from __future__ import annotations

import pytest
from integration_pool import Pool, lab_settings

from homecluster_lab.cluster import LabCluster, LabConfig


@pytest.fixture
async def pool(tmp_path):
    cfg = LabConfig(slots=2, driver="ipmi", boot_seconds=1.0, ready_taints_clear_seconds=0.5,
                    provider_address="127.0.0.1:0", workdir=tmp_path / "lab", settings=lab_settings(),
                    require_operator=True)
    async with LabCluster(cfg) as lab:
        yield Pool(lab)
