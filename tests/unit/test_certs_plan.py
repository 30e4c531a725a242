"""The certificate plan (homecluster.certs): what the operator makes or renews in self-signed mode.

Real certificates made by certs/issue.py at chosen times, read back through inspect_secret as the
operator reads a Secret; the clock is the `now` passed in (no sleeping, no patched time).
"""
from __future__ import annotations

import base64
import datetime as dt

import pytest

from homecluster.certs import plan as p
from homecluster.certs.cabundle import bundle_patch
from homecluster.certs.inspect import Bad, Held, inspect_secret
from homecluster.certs.issue import issue_leaf, make_ca, secret_data

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
LIFE = p.Lifetimes(ca=dt.timedelta(days=3650), leaf=dt.timedelta(days=90))
WANTED = p.leaves("homecluster-system")


def tls_secret(data: dict) -> dict:
    return {"type": "kubernetes.io/tls", "data": data}


def made_at(when: dt.datetime, life: p.Lifetimes = LIFE, namespace: str = "homecluster-system"):
    """Secrets as the operator writes them, all made at `when`; returns (secrets by name, the CA pair)."""
    ca = make_ca(when, life.ca)
    secrets = {p.CA_SECRET: tls_secret({"tls.crt": b64(ca.cert_pem), "tls.key": b64(ca.key_pem)})}
    for leaf in p.leaves(namespace):
        secrets[leaf.secret] = tls_secret(secret_data(issue_leaf(ca, leaf, when, life.leaf), ca))
    return secrets, ca


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def held(secrets: dict) -> dict:
    return {name: inspect_secret(s, want_ca=name != p.CA_SECRET) for name, s in secrets.items()}


def test_nothing_present_makes_a_ca_and_every_leaf():
    out = p.plan({}, WANTED, T0, LIFE)
    assert out.new_ca == p.Make(p.CA_SECRET, "missing")
    assert [m.secret for m in out.issue] == [p.WEBHOOK_SECRET, p.PROVIDER_SECRET, p.CLIENT_SECRET]
    assert out.complaints == ()


def test_a_fresh_set_is_kept_and_the_next_check_is_at_two_thirds_of_the_leaf_lifetime():
    secrets, _ = made_at(T0)
    out = p.plan(held(secrets), WANTED, T0 + dt.timedelta(days=1), LIFE)
    assert out.empty and out.complaints == ()
    start = T0 - dt.timedelta(minutes=5)  # notBefore is backdated
    assert out.next_check == start + (T0 + LIFE.leaf - start) * 2 / 3


def test_renewal_edge_one_microsecond_before_and_at_two_thirds():
    secrets, _ = made_at(T0)
    due = p.plan(held(secrets), WANTED, T0, LIFE).next_check
    before = p.plan(held(secrets), WANTED, due - dt.timedelta(microseconds=1), LIFE)
    assert before.empty
    at = p.plan(held(secrets), WANTED, due, LIFE)
    assert at.new_ca is None
    assert {m.secret for m in at.issue} == {p.WEBHOOK_SECRET, p.PROVIDER_SECRET, p.CLIENT_SECRET}
    assert all("renewal due" in m.reason for m in at.issue)


def test_only_the_leaf_that_is_due_is_renewed():
    secrets, ca = made_at(T0)
    later = T0 + dt.timedelta(days=30)
    webhook = next(leaf for leaf in WANTED if leaf.secret == p.WEBHOOK_SECRET)
    secrets[p.WEBHOOK_SECRET] = tls_secret(secret_data(issue_leaf(ca, webhook, later, LIFE.leaf), ca))
    out = p.plan(held(secrets), WANTED, T0 + dt.timedelta(days=61), LIFE)
    assert [m.secret for m in out.issue] == [p.PROVIDER_SECRET, p.CLIENT_SECRET]


def test_expired_and_not_yet_valid_leaves_are_replaced():
    secrets, _ = made_at(T0)
    expired = p.plan(held(secrets), WANTED, T0 + dt.timedelta(days=91), LIFE)
    assert all("expired" in m.reason for m in expired.issue) and len(expired.issue) == 3
    future, _ = made_at(T0 + dt.timedelta(hours=1))
    assert "not valid until" in p.plan(held(future), WANTED, T0, LIFE).issue[0].reason
    # within the tolerated skew: kept
    near, _ = made_at(T0 + dt.timedelta(minutes=9))
    assert p.plan(held(near), WANTED, T0, LIFE).empty


def test_a_ca_due_for_renewal_reissues_every_leaf():
    short = p.Lifetimes(ca=dt.timedelta(days=30), leaf=dt.timedelta(days=3))
    secrets, _ = made_at(T0, short)
    out = p.plan(held(secrets), WANTED, T0 + dt.timedelta(days=21), short)
    assert out.new_ca is not None and "renewal due" in out.new_ca.reason
    assert len(out.issue) == 3 and all("new CA" in m.reason for m in out.issue)


def test_a_leaf_never_outlives_its_ca():
    short = p.Lifetimes(ca=dt.timedelta(days=10), leaf=dt.timedelta(days=10))
    ca = make_ca(T0, short.ca)
    leaf = issue_leaf(ca, WANTED[0], T0 + dt.timedelta(days=5), short.leaf)
    got = inspect_secret(tls_secret(secret_data(leaf, ca)), want_ca=True)
    assert isinstance(got, Held) and got.cert.not_valid_after_utc == T0 + dt.timedelta(days=10)


def test_a_leaf_of_another_ca_is_reissued():
    secrets, _ = made_at(T0)
    other, _ = made_at(T0)
    secrets[p.PROVIDER_SECRET] = other[p.PROVIDER_SECRET]
    out = p.plan(held(secrets), WANTED, T0, LIFE)
    assert [(m.secret, m.reason.split(" (")[0]) for m in out.issue] == [(p.PROVIDER_SECRET, "the CA changed")]


def test_a_leaf_whose_ca_crt_is_stale_is_reissued():
    secrets, ca = made_at(T0)
    other, _ = made_at(T0)
    stale = dict(secrets[p.WEBHOOK_SECRET]["data"], **{"ca.crt": other[p.WEBHOOK_SECRET]["data"]["ca.crt"]})
    secrets[p.WEBHOOK_SECRET] = tls_secret(stale)
    assert [m.secret for m in p.plan(held(secrets), WANTED, T0, LIFE).issue] == [p.WEBHOOK_SECRET]


def test_serving_certificates_name_the_services_and_a_namespace_change_reissues_them():
    secrets, _ = made_at(T0)
    got = held(secrets)
    assert got[p.WEBHOOK_SECRET].dns_names == ("homecluster-webhook-service.homecluster-system.svc",
                                               "homecluster-webhook-service.homecluster-system.svc.cluster.local")
    assert got[p.CLIENT_SECRET].dns_names == ()
    out = p.plan(got, p.leaves("other-ns"), T0, LIFE)
    assert [m.secret for m in out.issue] == [p.WEBHOOK_SECRET, p.PROVIDER_SECRET]
    assert "are not" in out.issue[0].reason


def test_a_client_certificate_with_the_wrong_usage_is_reissued():
    secrets, ca = made_at(T0)
    wrong = p.Leaf(p.CLIENT_SECRET, p.CLIENT_COMMON_NAME, (), server=True)
    secrets[p.CLIENT_SECRET] = tls_secret(secret_data(issue_leaf(ca, wrong, T0, LIFE.leaf), ca))
    out = p.plan(held(secrets), WANTED, T0, LIFE)
    assert [(m.secret, m.reason) for m in out.issue] == [(p.CLIENT_SECRET, "it lacks the client auth usage")]


@pytest.mark.parametrize("mangle, words", [
    (lambda d: dict(d, **{"tls.crt": "!!not base64!!"}), "not base64"),
    (lambda d: dict(d, **{"tls.crt": b64(b"garbage")}), "not a PEM certificate"),
    (lambda d: dict(d, **{"tls.key": b64(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")}),
     "not an unencrypted PEM private key"),
    (lambda d: {k: v for k, v in d.items() if k != "ca.crt"}, "missing or empty"),
    (lambda d: dict(d, **{"ca.crt": "A" * (64 * 1024)}), "larger than"),
])
def test_a_leaf_secret_with_garbage_is_replaced_with_a_complaint_naming_it(mangle, words):
    secrets, _ = made_at(T0)
    secrets[p.WEBHOOK_SECRET] = tls_secret(mangle(secrets[p.WEBHOOK_SECRET]["data"]))
    got = held(secrets)
    assert isinstance(got[p.WEBHOOK_SECRET], Bad) and words in got[p.WEBHOOK_SECRET].reason
    out = p.plan(got, WANTED, T0, LIFE)
    assert [m.secret for m in out.issue] == [p.WEBHOOK_SECRET]
    assert len(out.complaints) == 1
    assert out.complaints[0].startswith(f"Secret {p.WEBHOOK_SECRET}: unusable") and words in out.complaints[0]


def test_a_key_that_is_not_the_certificates_is_refused():
    secrets, _ = made_at(T0)
    other, _ = made_at(T0)
    data = dict(secrets[p.CLIENT_SECRET]["data"], **{"tls.key": other[p.CLIENT_SECRET]["data"]["tls.key"]})
    assert inspect_secret(tls_secret(data), want_ca=True) == Bad("data['tls.key'] is not the key of data['tls.crt']")


def test_a_garbage_ca_makes_a_new_ca_and_every_leaf():
    secrets, _ = made_at(T0)
    secrets[p.CA_SECRET] = {"type": "Opaque", "data": {}}
    out = p.plan(held(secrets), WANTED, T0, LIFE)
    assert out.new_ca is not None and "not kubernetes.io/tls" in out.new_ca.reason
    assert len(out.issue) == 3
    assert out.complaints == (f"Secret {p.CA_SECRET}: unusable: has type 'Opaque', not kubernetes.io/tls; "
                              f"replacing it",)


def test_a_leaf_in_the_ca_secret_is_no_ca():
    secrets, _ = made_at(T0)
    secrets[p.CA_SECRET] = {"type": "kubernetes.io/tls", "data": {k: v for k, v in secrets[p.CLIENT_SECRET]["data"]
                                                                   .items() if k != "ca.crt"}}
    out = p.plan(held(secrets), WANTED, T0, LIFE)
    assert out.new_ca == p.Make(p.CA_SECRET, "unusable: its certificate is not a CA")


def test_lifetimes_are_checked():
    with pytest.raises(ValueError):
        p.Lifetimes(ca=dt.timedelta(days=1), leaf=dt.timedelta(days=2))
    with pytest.raises(ValueError):
        p.Lifetimes(renew_fraction=1.0)
    with pytest.raises(ValueError):
        p.plan({}, WANTED, dt.datetime(2026, 1, 1))


def vwc(*webhooks: dict) -> dict:
    return {"metadata": {"name": "homecluster-validating-webhook-configuration", "resourceVersion": "7"},
            "webhooks": list(webhooks)}


def hook(name: str, service: str = "homecluster-webhook-service", ns: str = "homecluster-system",
         bundle: str | None = None) -> dict:
    config = {"service": {"name": service, "namespace": ns}}
    if bundle:
        config["caBundle"] = bundle
    return {"name": name, "clientConfig": config}


def test_the_ca_bundle_patch_touches_only_our_webhooks():
    ca = b"-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n"
    out = bundle_patch(vwc(hook("a"), hook("theirs", service="other"), hook("b", ns="elsewhere"), hook("c")),
                       ca, "homecluster-webhook-service", "homecluster-system")
    assert out.owned == ("a", "c")
    assert out.body == {"metadata": {"resourceVersion": "7"},
                        "webhooks": [{"name": "a", "clientConfig": {"caBundle": b64(ca)}},
                                     {"name": "c", "clientConfig": {"caBundle": b64(ca)}}]}
    current = bundle_patch(vwc(hook("a", bundle=b64(ca))), ca, "homecluster-webhook-service", "homecluster-system")
    assert current.body is None and current.complaint is None


def test_a_configuration_without_our_webhooks_is_left_alone_with_a_complaint():
    out = bundle_patch(vwc(hook("x", service="other")), b"CA", "homecluster-webhook-service", "homecluster-system")
    assert out.body is None and "no webhook calls Service homecluster-system/homecluster-webhook-service" \
        in out.complaint


def test_a_short_lived_set_is_not_due_when_made():
    """notBefore is backdated by at most a tenth of the lifetime: a 60 s certificate is due at 2/3 of 66 s."""
    short = p.Lifetimes(ca=dt.timedelta(seconds=120), leaf=dt.timedelta(seconds=60))
    secrets, _ = made_at(T0, short)
    out = p.plan(held(secrets), WANTED, T0, short)
    assert out.empty
    assert out.next_check == T0 - dt.timedelta(seconds=6) + dt.timedelta(seconds=66) * 2 / 3
