"""Validating admission webhooks over real HTTPS (certificates from homecluster.tls), and pods/eviction."""
from __future__ import annotations

import base64
import json
import ssl

import aiohttp
import pytest
from aiohttp import web

from homecluster import tls

pytestmark = pytest.mark.lab
W = "/apis/lab.homecluster.dev/v1/widgets"


@pytest.fixture
async def webhook(tmp_path):
    """An HTTPS webhook that denies widgets bigger than 10 and records every review it gets."""
    ca = tls.make_ca()
    cert, key = tls.issue(ca, "hook", ["127.0.0.1", "hook.default.svc"]).write(tmp_path, "hook")
    reviews: list[dict] = []

    async def handle(request: web.Request) -> web.Response:
        review = await request.json()
        reviews.append({"query": dict(request.query), "peer": request.transport.get_extra_info("peername"), **review})
        req = review["request"]
        size = ((req.get("object") or {}).get("spec") or {}).get("size", 0)
        response = {"uid": req["uid"], "allowed": size <= 10}
        if size > 10:
            response["status"] = {"code": 403, "reason": "Forbidden", "message": f"size {size} is over 10"}
        return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                  "response": response})

    app = web.Application()
    app.router.add_post("/validate", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    yield {"port": port, "ca": ca.cert_pem, "reviews": reviews}
    await runner.cleanup()


def config(name: str, client_config: dict, failure_policy: str = "Fail") -> dict:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{"name": f"{name}.lab.homecluster.dev", "clientConfig": client_config,
                          "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["lab.homecluster.dev"],
                                     "apiVersions": ["*"], "resources": ["widgets"]}],
                          "failurePolicy": failure_policy, "sideEffects": "None", "timeoutSeconds": 2,
                          "admissionReviewVersions": ["v1"]}]}


async def post(lab_api, path: str, body: dict) -> tuple[int, dict]:
    async with aiohttp.ClientSession(lab_api.url) as s:
        async with s.post(path, json=body) as resp:
            return resp.status, await resp.json()


def widget(name: str, size: int) -> dict:
    return {"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"size": size}}


async def test_denial_is_passed_through_with_the_real_wording(lab_api, widgets, webhook, kubectl):
    ca = base64.b64encode(webhook["ca"]).decode()
    lab_api.webhook_services["default/hook:443"] = f"127.0.0.1:{webhook['port']}"
    await lab_api.create(config("sizes", {"service": {"namespace": "default", "name": "hook", "path": "/validate"},
                                          "caBundle": ca}))
    code, obj = await post(lab_api, W, widget("small", 3))
    assert code == 201
    code, err = await post(lab_api, W, widget("big", 30))
    assert code == 403
    assert err["message"] == 'admission webhook "sizes.lab.homecluster.dev" denied the request: size 30 is over 10'
    assert err["reason"] == "Forbidden"
    assert lab_api.get(widgets, "big") is None
    review = webhook["reviews"][-1]
    assert review["query"] == {"timeout": "2s"}
    assert review["request"]["operation"] == "CREATE"
    assert review["request"]["resource"] == {"group": "lab.homecluster.dev", "version": "v1", "resource": "widgets"}
    assert review["request"]["object"]["spec"] == {"size": 30, "color": "red"}  # after defaulting
    # kubectl shows it as a real cluster's users see it
    run = await kubectl("apply", "-f", "-", input=json.dumps(widget("big", 11)))
    assert run.rc != 0
    assert ('Error from server (Forbidden): error when creating "STDIN": admission webhook '
            '"sizes.lab.homecluster.dev" denied the request: size 11 is over 10') in run.err
    # updates are reviewed too, with the old object
    await lab_api.patch(widgets, "small", {"spec": {"size": 4}})
    assert webhook["reviews"][-1]["request"]["oldObject"]["spec"]["size"] == 3


async def test_reviews_reuse_one_tls_connection(lab_api, widgets, webhook):
    """As kube-apiserver does: one TLS context per caBundle, pooled connections -- not a handshake (and a
    ~20 ms read of the system CA store) per review, which made 50 NodeClaim creates queue up in the lab."""
    ca = base64.b64encode(webhook["ca"]).decode()
    await lab_api.create(config("sizes", {"url": f"https://127.0.0.1:{webhook['port']}/validate", "caBundle": ca}))
    for i in range(5):
        code, _ = await post(lab_api, W, widget(f"w{i}", i))
        assert code == 201
    peers = {r["peer"] for r in webhook["reviews"]}
    assert len(webhook["reviews"]) == 5 and len(peers) == 1, peers


async def test_unreachable_or_untrusted_webhook_follows_failure_policy(lab_api, widgets, webhook):
    other_ca = base64.b64encode(tls.make_ca("other").cert_pem).decode()
    await lab_api.create(config("untrusted", {"url": f"https://127.0.0.1:{webhook['port']}/validate",
                                              "caBundle": other_ca}))
    code, err = await post(lab_api, W, widget("a", 1))
    assert (code, err["reason"]) == (500, "InternalError")
    assert err["message"].startswith('Internal error occurred: failed calling webhook "untrusted.lab.homecluster.dev": '
                                     f'failed to call webhook: Post "https://127.0.0.1:{webhook["port"]}/validate'
                                     '?timeout=2s": tls: failed to verify certificate')
    await lab_api.delete("validatingwebhookconfigurations", "untrusted")

    await lab_api.create(config("down", {"url": "https://127.0.0.1:1/validate"}))
    code, err = await post(lab_api, W, widget("b", 1))
    assert code == 500 and 'failed calling webhook "down.lab.homecluster.dev"' in err["message"]
    assert "connection refused" in err["message"]
    await lab_api.delete("validatingwebhookconfigurations", "down")

    await lab_api.create(config("ignored", {"url": "https://127.0.0.1:1/validate"}, failure_policy="Ignore"))
    code, _ = await post(lab_api, W, widget("c", 1))
    assert code == 201


async def test_eviction_honours_disruption_budgets(lab_api, objs):
    rs = await lab_api.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                               "metadata": {"name": "web", "namespace": "default"},
                               "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {}}})
    for i in range(3):
        await lab_api.create(objs.pod(f"web-{i}", "n1", labels={"app": "web"}, owner=objs.owner_ref(rs)),
                             keep_status=True)
    await lab_api.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": "web", "namespace": "default"},
                          "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-0", "namespace": "default"}}
    code, body = await post(lab_api, "/api/v1/namespaces/default/pods/web-0/eviction", eviction)
    assert (code, body["status"]) == (201, "Success")
    assert lab_api.get("pods", "web-0", "default") is None
    eviction["metadata"]["name"] = "web-1"
    code, err = await post(lab_api, "/api/v1/namespaces/default/pods/web-1/eviction", eviction)
    assert (code, err["reason"]) == (429, "TooManyRequests")
    assert err["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert err["details"]["causes"] == [{"reason": "DisruptionBudget", "message":
                                         "The disruption budget web needs 2 healthy pods and has 2 currently"}]
    assert lab_api.get("pods", "web-1", "default") is not None
    status = lab_api.get("poddisruptionbudgets", "web", "default")["status"]
    assert (status["expectedPods"], status["currentHealthy"], status["desiredHealthy"],
            status["disruptionsAllowed"]) == (3, 2, 2, 0)  # the ReplicaSet still expects 3
    # a pod that is not running is not protected
    await lab_api.patch("pods", "web-2", {"status": {"phase": "Pending"}}, namespace="default",
                        subresource="status")
    eviction["metadata"]["name"] = "web-2"
    code, _ = await post(lab_api, "/api/v1/namespaces/default/pods/web-2/eviction", eviction)
    assert code == 201


async def test_webhook_down_knob_fails_calls_as_an_unreachable_webhook(lab_api, widgets, webhook):
    """faults.webhook_down: the webhook's server keeps running, the API server cannot reach it; the refusal
    has kube-apiserver's wording (ErrCallingWebhook around the HTTP client's error), and webhook_up heals."""
    ca = base64.b64encode(webhook["ca"]).decode()
    port = webhook["port"]
    await lab_api.create(config("sizes", {"url": f"https://127.0.0.1:{port}/validate", "caBundle": ca}))
    prefix = ('Internal error occurred: failed calling webhook "sizes.lab.homecluster.dev": failed to call webhook: '
              f'Post "https://127.0.0.1:{port}/validate?timeout=2s": ')
    lab_api.faults.webhook_down("sizes.lab.homecluster.dev")
    code, err = await post(lab_api, W, widget("a", 1))
    assert (code, err["reason"]) == (500, "InternalError")
    assert err["message"] == prefix + f"dial tcp 127.0.0.1:{port}: connect: connection refused"
    assert lab_api.get(widgets, "a") is None and webhook["reviews"] == []

    lab_api.faults.webhook_up("sizes.lab.homecluster.dev")
    lab_api.faults.webhook_down(mode="timeout")  # every webhook; waits the hook's timeoutSeconds
    code, err = await post(lab_api, W, widget("b", 1))
    assert (code, err["message"]) == (500, prefix + "context deadline exceeded")
    assert lab_api.get(widgets, "b") is None and webhook["reviews"] == []

    lab_api.faults.webhook_up()
    code, _ = await post(lab_api, W, widget("c", 1))
    assert code == 201 and len(webhook["reviews"]) == 1
    lab_api.faults.webhook_down("other.lab.homecluster.dev")  # another webhook down does not touch this one
    code, _ = await post(lab_api, W, widget("d", 1))
    assert code == 201
    lab_api.faults.clear()
    assert lab_api.faults.webhook_fault("other.lab.homecluster.dev") is None
    with pytest.raises(ValueError):
        lab_api.faults.webhook_down(mode="slow")
