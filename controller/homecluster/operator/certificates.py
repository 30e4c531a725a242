"""Self-signed mode, the effects (`homecluster run --self-signed-certs`): the Secrets, the files, the caBundle.

At start (before the webhook and the provider serve) and then whenever a certificate is due, one of its objects
changes (operator/certwatch.py: a watch by name on each) or every `resync` seconds, one pass:
1. GET the four Secrets of certs/plan.py (by name; a missing one is None) and validate them
   (certs/inspect.py); plan what to make (certs/plan.py); log each complaint, naming the Secret;
2. make the CA and leaves the plan asks for and write each Secret: create, or a merge patch
   conditional on the resourceVersion read (a concurrent writer makes the pass retry, never overwrite);
3. write the webhook's and the provider's certificate, key and CA to the files their servers read
   (--webhook-cert/--webhook-key, --provider-cert/--provider-key/--provider-client-ca). The webhook
   server (operator/webhookserver.py) and the provider re-read their files before every handshake, so a renewal
   is served without a restart and without the kubelet's delay in updating a mounted Secret. The three
   files are replaced one by one (os.replace) in one synchronous step: the webhook's check runs on this
   event loop and so never sees half a set; the provider's reloader skips a half set (provider/tlsfiles.py);
4. patch the caBundle of the webhooks in our ValidatingWebhookConfiguration that call our Service
   (certs/cabundle.py) when it is not the CA's.

RBAC (config/components/self-signed-certs): get, patch, list and watch of the four Secrets by name (a list or
watch by name is one with fieldSelector metadata.name), create of Secrets in the operator's namespace (a create
cannot be limited by name or type: docs/security.md says what that allows), get, patch, list and watch of the
one ValidatingWebhookConfiguration by name. Key material never reaches a log line.

A CA renewal replaces the provider's serving certificate and client CA at once (no overlap in which both
CAs are trusted): cluster-autoscaler must be restarted to pick up its new client certificate and ca.crt
(docs/security.md, "Self-signed mode").
"""
from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from homecluster.certs import plan as certplan
from homecluster.certs.cabundle import bundle_patch
from homecluster.certs.inspect import TLS_TYPE, Held, inspect_secret
from homecluster.certs.issue import issue_leaf, make_ca, secret_data
from homecluster.kube.client import STRATEGIC, KubeClient, NotFound, Resource
from homecluster.operator.certwatch import watch_one
from homecluster.tls import KeyPair

log = logging.getLogger("homecluster.certificates")
SECRETS = Resource("", "v1", "secrets", "Secret", namespaced=True)
WEBHOOK_CONFIGURATIONS = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                                  "ValidatingWebhookConfiguration")
WEBHOOK_CONFIGURATION = "homecluster-validating-webhook-configuration"
LABELS = {"app.kubernetes.io/name": "homecluster", "app.kubernetes.io/managed-by": "homecluster-operator"}
RESYNC_SECONDS = 600.0   # without the watches (refused), a deleted or edited Secret is noticed after this at most
RETRY_SECONDS = 30.0     # after a failed pass
POKE_SETTLE_SECONDS = 0.5  # after a change is heard, before the pass: one pass for the events of one change


class SecretTypeError(Exception):
    """A certificate Secret of another type: its type is immutable, so only its deletion lets us make it."""


@dataclass(frozen=True)
class ServingFiles:
    """Where one server reads its certificate, key and CA."""

    cert: Path
    key: Path
    ca: Path | None = None


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _replace(path: Path, data: bytes, mode: int) -> None:
    """Write `data` to `path` atomically with exactly `mode`, durable before it is renamed into place.

    A leftover temporary file (an earlier pass killed mid-write) is removed first and the new one made
    with O_EXCL, so it never keeps a leftover's looser mode; fchmod sets the mode whatever the umask.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_files(files: ServingFiles, held: Held) -> bool:
    """Write a leaf's files when they differ from what is there; True when written. Synchronous on purpose."""
    wanted = [(files.key, held.key_pem, 0o600), (files.cert, held.cert_pem, 0o644)]
    if files.ca is not None and held.ca_pem is not None:
        wanted.append((files.ca, held.ca_pem, 0o644))
    try:
        if all(path.read_bytes() == data for path, data, _ in wanted):
            return False
    except OSError:
        pass
    for path, data, mode in wanted:
        _replace(path, data, mode)
    return True


class CertificateManager:
    def __init__(self, client: KubeClient, namespace: str, *, webhook: ServingFiles | None,
                 provider: ServingFiles | None, lifetimes: certplan.Lifetimes = certplan.Lifetimes(),
                 webhook_configuration: str = WEBHOOK_CONFIGURATION,
                 webhook_service: str = certplan.WEBHOOK_SERVICE, provider_service: str = certplan.PROVIDER_SERVICE,
                 clock: Callable[[], dt.datetime] = _utcnow, resync: float = RESYNC_SECONDS) -> None:
        self.client, self.namespace = client, namespace
        self.webhook, self.provider = webhook, provider
        self.lifetimes, self.clock, self.resync = lifetimes, clock, resync
        self.webhook_configuration, self.webhook_service = webhook_configuration, webhook_service
        self.wanted = certplan.leaves(namespace, webhook_service, provider_service)
        self.passes = 0
        self.next_check: dt.datetime | None = None
        self._tasks: list[asyncio.Task] = []
        self._poked = asyncio.Event()

    def secret_names(self) -> tuple[str, ...]:
        """The four Secrets: the CA's, then each leaf's."""
        return (certplan.CA_SECRET, *(leaf.secret for leaf in self.wanted))

    async def _read(self) -> dict[str, tuple[dict | None, Held | Any]]:
        out = {}
        for name in self.secret_names():
            try:
                secret = await self.client.get(SECRETS, name, self.namespace)
            except NotFound:
                secret = None
            out[name] = (secret, inspect_secret(secret, want_ca=name != certplan.CA_SECRET))
        return out

    async def _write(self, name: str, existing: dict | None, data: dict[str, str]) -> dict:
        if existing is None:
            body = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                    "metadata": {"name": name, "namespace": self.namespace, "labels": LABELS}, "data": data}
            return await self.client.create(SECRETS, body, self.namespace)
        version = (existing.get("metadata") or {}).get("resourceVersion")
        kind = str(existing.get("type", ""))[:64]
        if kind != TLS_TYPE:  # the type is immutable: no patch can fix it
            raise SecretTypeError(f"Secret {self.namespace}/{name} has type {kind!r}, not {TLS_TYPE}, and a "
                                  f"Secret's type cannot change: delete it and the operator makes it again")
        patch = {"metadata": {"resourceVersion": version, "labels": LABELS}, "data": data}
        return await self.client.patch(SECRETS, name, patch, self.namespace)

    @staticmethod
    def _check_written(name: str, written: dict, want_ca: bool) -> Held:
        held = inspect_secret(written, want_ca=want_ca)
        if not isinstance(held, Held):  # the API server changed what we wrote: never serve it
            raise RuntimeError(f"Secret {name} as written reads back unusable: {held.reason if held else 'absent'}")
        return held

    async def reconcile(self) -> certplan.Plan:
        """One pass (module docstring); returns the plan it carried out. API errors propagate."""
        self.passes += 1
        now = self.clock()
        read = await self._read()
        plan = certplan.plan({n: h for n, (_, h) in read.items()}, self.wanted, now, self.lifetimes)
        for complaint in plan.complaints:
            log.warning("self-signed certificates: %s", complaint)
        current: dict[str, Held] = {n: h for n, (_, h) in read.items() if isinstance(h, Held)}
        ca_held = current.get(certplan.CA_SECRET)
        if plan.new_ca is not None:
            ca = make_ca(now, self.lifetimes.ca)
            written = await self._write(certplan.CA_SECRET, read[certplan.CA_SECRET][0], secret_data(ca, ca))
            log.info("self-signed certificates: made Secret %s (%s)", certplan.CA_SECRET, plan.new_ca.reason)
            ca_held = self._check_written(certplan.CA_SECRET, written, want_ca=False)
        assert isinstance(ca_held, Held)
        ca_pair = KeyPair(ca_held.cert_pem, ca_held.key_pem)
        stuck = []  # Secrets of another type: the others are still made, served and trusted
        for make in plan.issue:
            leaf = next(w for w in self.wanted if w.secret == make.secret)
            pair = issue_leaf(ca_pair, leaf, now, self.lifetimes.leaf)
            try:
                written = await self._write(make.secret, read[make.secret][0], secret_data(pair, ca_pair))
            except SecretTypeError as exc:
                current.pop(make.secret, None)
                stuck.append(str(exc))
                continue
            current[make.secret] = self._check_written(make.secret, written, want_ca=True)
            log.info("self-signed certificates: made Secret %s (%s)", make.secret, make.reason)
        for files, secret in ((self.webhook, certplan.WEBHOOK_SECRET), (self.provider, certplan.PROVIDER_SECRET)):
            if files is not None and secret in current and write_files(files, current[secret]):
                log.info("self-signed certificates: wrote %s from Secret %s", files.cert, secret)
        bundle_set = await self._patch_bundle(ca_held.cert_pem) if self.webhook is not None else True
        after = certplan.plan({**current, certplan.CA_SECRET: ca_held}, self.wanted, now, self.lifetimes)
        self.next_check = after.next_check
        if not bundle_set:  # try again soon rather than at the next renewal
            soon = now + dt.timedelta(seconds=RETRY_SECONDS)
            self.next_check = min(self.next_check, soon) if self.next_check else soon
        if stuck:
            raise SecretTypeError("; ".join(stuck))
        return plan

    async def _patch_bundle(self, ca_pem: bytes) -> bool:
        """Set our webhooks' caBundle; False when the configuration is missing or has none of ours."""
        try:
            configuration = await self.client.get(WEBHOOK_CONFIGURATIONS, self.webhook_configuration)
        except NotFound:
            log.warning("self-signed certificates: ValidatingWebhookConfiguration %s not found: the API server "
                        "cannot call the webhook until it exists (next try in %.0fs)",
                        self.webhook_configuration, RETRY_SECONDS)
            return False
        patch = bundle_patch(configuration, ca_pem, self.webhook_service, self.namespace)
        if patch.complaint:
            log.warning("self-signed certificates: %s", patch.complaint)
            return False
        if patch.body is not None:
            await self.client.patch(WEBHOOK_CONFIGURATIONS, self.webhook_configuration, patch.body,
                                    content_type=STRATEGIC)
            log.info("self-signed certificates: set the caBundle of webhooks %s in %s",
                     ", ".join(patch.owned), self.webhook_configuration)
        return True

    def _sleep_for(self) -> float:
        if self.next_check is None:
            return self.resync
        return max(0.0, min(self.resync, (self.next_check - self.clock()).total_seconds()))

    def poke(self) -> None:
        """One of our objects changed (operator/certwatch.py): run a pass soon, whatever the next check says."""
        self._poked.set()

    async def _wait(self, seconds: float) -> None:
        """Until `seconds` have passed or a poke came; after a poke, POKE_SETTLE_SECONDS more, so that the
        events of one change (four Secrets re-made) make one pass."""
        try:
            await asyncio.wait_for(self._poked.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        if self._poked.is_set():
            await asyncio.sleep(POKE_SETTLE_SECONDS)
        self._poked.clear()

    async def run(self) -> None:
        """Passes forever: at the next renewal, the resync or a change heard, whichever is first; after a
        failure, soon."""
        while True:
            await self._wait(self._sleep_for())
            try:
                await self.reconcile()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - keep renewing; the next pass may succeed
                log.error("self-signed certificates: pass failed, retrying in %.0fs or at the next change: %s",
                          RETRY_SECONDS, exc)
                await self._wait(RETRY_SECONDS)

    def watched(self) -> list[tuple[Resource, str, str | None]]:
        """The objects whose changes poke a pass: the four Secrets, and the webhook configuration we patch."""
        out: list[tuple[Resource, str, str | None]] = [(SECRETS, name, self.namespace) for name in self.secret_names()]
        if self.webhook is not None:
            out.append((WEBHOOK_CONFIGURATIONS, self.webhook_configuration, None))
        return out

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self.run(), name="self-signed-certificates")]
        self._tasks += [loop.create_task(watch_one(self.client, res, name, namespace, self.poke),
                                         name=f"self-signed-certificates-watch-{name}")
                        for res, name, namespace in self.watched()]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []


def add_arguments(parser: Any, flag: Callable[..., None]) -> None:
    """The flags of self-signed mode (`flag` is main._flag: each falls back to HOMECLUSTER_<NAME>)."""
    flag(parser, "self-signed-certs", "make and renew the CA, the webhook's and the provider's serving "
         "certificates and the autoscaler's client certificate in Secrets, write them to --webhook-cert/-key "
         "and --provider-cert/-key/-client-ca, and set the webhook's caBundle (without cert-manager; "
         "docs/install.md)", action="store_true")
    flag(parser, "self-signed-ca-lifetime", "lifetime of the self-signed CA (renewed at 2/3)", "87600h")
    flag(parser, "self-signed-leaf-lifetime", "lifetime of each leaf certificate (renewed at 2/3)", "2160h")
    flag(parser, "webhook-configuration", "the ValidatingWebhookConfiguration whose caBundle self-signed mode "
         "sets (only its webhooks that call our Service)", WEBHOOK_CONFIGURATION)


def from_args(args: Any, client: KubeClient) -> CertificateManager:
    """The manager that `homecluster run --self-signed-certs` starts; SystemExit names a missing flag."""
    from homecluster.durations import DurationError, parse_duration

    try:
        lifetimes = certplan.Lifetimes(ca=parse_duration(str(args.self_signed_ca_lifetime)),
                                       leaf=parse_duration(str(args.self_signed_leaf_lifetime)))
    except (DurationError, ValueError) as exc:
        raise SystemExit(f"--self-signed-ca-lifetime/--self-signed-leaf-lifetime: {exc}") from None
    webhook = provider = None
    if not args.no_webhook:
        if not (args.webhook_cert and args.webhook_key):
            raise SystemExit("--self-signed-certs writes the webhook's certificate where --webhook-cert and "
                             "--webhook-key say: give both (or --no-webhook)")
        webhook = ServingFiles(Path(args.webhook_cert), Path(args.webhook_key),
                               Path(args.webhook_cert).with_name("ca.crt"))
    if not (args.no_provider or args.provider_insecure):
        if not (args.provider_cert and args.provider_key and args.provider_client_ca):
            raise SystemExit("--self-signed-certs writes the provider's certificate where --provider-cert, "
                             "--provider-key and --provider-client-ca say: give all three (or --no-provider)")
        provider = ServingFiles(Path(args.provider_cert), Path(args.provider_key), Path(args.provider_client_ca))
    return CertificateManager(client, args.namespace, webhook=webhook, provider=provider, lifetimes=lifetimes,
                              webhook_configuration=args.webhook_configuration)


async def start_from_args(args: Any, client: KubeClient) -> CertificateManager:
    """The first pass (before anything serves: the servers read the files it writes), then the loop."""
    manager = from_args(args, client)
    try:
        await manager.reconcile()
    except Exception as exc:  # noqa: BLE001 - an API refusal at start: say what and stop
        raise SystemExit(f"self-signed certificates: the first pass failed: {exc}") from None
    manager.start()
    return manager
