"""operator/certificates.py's file writes: the key file's mode never comes from a leftover temporary file."""
from __future__ import annotations

import datetime as dt
import os
import stat

from homecluster.certs import plan as p
from homecluster.certs.inspect import Held, inspect_secret
from homecluster.certs.issue import issue_leaf, make_ca, secret_data
from homecluster.operator.certificates import ServingFiles, write_files

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)


def _held() -> Held:
    ca = make_ca(NOW, dt.timedelta(days=30))
    leaf = p.leaves("ns", p.WEBHOOK_SERVICE, p.PROVIDER_SERVICE)[0]
    pair = issue_leaf(ca, leaf, NOW, dt.timedelta(days=3))
    held = inspect_secret({"type": "kubernetes.io/tls", "data": secret_data(pair, ca)}, want_ca=True)
    assert isinstance(held, Held)
    return held


def test_a_leftover_world_readable_tmp_file_does_not_make_the_key_world_readable(tmp_path):
    files = ServingFiles(tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt")
    leftover = tmp_path / ".tls.key.tmp"  # an earlier pass killed between open and rename
    leftover.write_bytes(b"stale")
    os.chmod(leftover, 0o644)
    held = _held()
    assert write_files(files, held)
    assert stat.S_IMODE(files.key.stat().st_mode) == 0o600
    assert files.key.read_bytes() == held.key_pem
    assert stat.S_IMODE(files.cert.stat().st_mode) == 0o644
    assert not leftover.exists()

