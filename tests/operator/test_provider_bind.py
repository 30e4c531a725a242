"""A plaintext provider listens on loopback unless an address is given (issue 15, the low on --provider-insecure).

Parsed by `homecluster run`'s own argument parser, flags and environment as a Deployment gives them; the
address is what main() hands the provider's server. (Binding the default port itself is left out: tests
pick free ports.)
"""
from __future__ import annotations

import argparse

import pytest

from homecluster.operator import main as operator_main


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    operator_main.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for name in ("HOMECLUSTER_PROVIDER_ADDRESS", "HOMECLUSTER_PROVIDER_INSECURE"):
        monkeypatch.delenv(name, raising=False)


def test_plaintext_without_an_address_listens_on_loopback_only():
    assert operator_main.provider_address(parse("--provider-insecure")) == "127.0.0.1:50051"


def test_plaintext_from_the_environment_listens_on_loopback_only(monkeypatch):
    monkeypatch.setenv("HOMECLUSTER_PROVIDER_INSECURE", "true")
    assert operator_main.provider_address(parse()) == "127.0.0.1:50051"


def test_an_address_given_is_used_as_given():
    assert operator_main.provider_address(parse("--provider-insecure", "--provider-address", ":6000")) == ":6000"


def test_mtls_without_an_address_listens_on_every_interface():
    assert operator_main.provider_address(parse()) == ":50051"
