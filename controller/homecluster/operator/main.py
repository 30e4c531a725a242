"""`homecluster run`: the claim controller, its admission webhook and the autoscaler provider, in one process.

Start-up order (each step waits for the one before): load credentials; list every kind once into the
one cache and mark it synced; start the workers; serve the admission webhooks (operator/webhookserver.py);
start the provider's gRPC server. Every flag falls back to an environment variable
HOMECLUSTER_<FLAG> (dashes as underscores), so a Deployment can configure it either way.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
from pathlib import Path
from typing import Any

from homecluster.jobs.policy import split_list
from homecluster.model.settings import Settings, SettingsError
from homecluster.lifecycle.context import DEFAULT_JOB_IMAGE, DEFAULT_NAMESPACE, DEFAULT_WORKERS

log = logging.getLogger("homecluster.run")
# where the NodeClaim check is served: /<the webhook's name> (see config/webhook/manifests.yaml)
WEBHOOK_PATH = "/nodeclaim-v2alpha1.kb.io"
PROVIDER_PORT = ":50051"
GROUP_WEBHOOK_PATH = "/group-v2alpha1.kb.io"  # the Group check (a Group's spec.jobs against the allow-lists)
SLOT_WEBHOOK_PATH = "/node-v2alpha1.kb.io"  # the slot check (one machine, one slot: model.identity)


# what each model setting bounds (docs/model.md); the flag's help adds its default and its env variable
SETTING_HELP = {
    "startup_job_timeout": "how long one startup Job may run before the attempt fails",
    "job_poll_interval": "how often every slot is looked at again besides the watch events (the Job-monitor poll)",
    "registration_wait": "how long a booted machine has to register its corev1 Node before the attempt fails",
    "readiness_gate": "how long a registered Node has to become Ready before the attempt fails",
    "uncordon_retry_ceiling": "the longest pause between retries of uncordoning a ready Node",
    "slack": "a margin added to the boot floor (the least boot budget a claim's deadline gives)",
    "attempt_limit": "boot attempts per claim before it fails for good",
    "shutdown_attempt_limit": "shutdown Jobs in a row with the machine still on before shutdowns are held off",
    "shutdown_holdoff": "how long shutdowns of a slot are held off once the shutdown limit is reached",
    "shutdown_job_timeout": "how long one shutdown Job may run before it counts as failed",
    "claim_ttl": "how long a failed or completed claim is kept when neither it nor its Group sets a TTL",
    "pod_blocked_settle": "how long a Job's pod must keep failing to start before it counts as blocked",
}
EXAMPLES = """examples:
  homecluster run --no-webhook --provider-insecure --kubeconfig ~/.kube/config    try it out of the cluster
  homecluster run --startup-job-timeout 8m --attempt-limit 2                       slower machines, fewer tries
  HOMECLUSTER_LOG_FORMAT=json homecluster run ...                                 every flag also reads an env var

Durations are Go durations (90s, 5m, 1h30m). The deadline of a claim is requestedAt + max(boot floor,
the Group's maxNodeProvisionTime); the boot floor is the sum of startup-job-timeout, job-poll-interval,
registration-wait, readiness-gate, uncordon-retry-ceiling and slack (12m10s by default)."""


def _env(name: str, default: Any = None) -> Any:
    return os.environ.get("HOMECLUSTER_" + name.upper().replace("-", "_"), default)


def _flag(parser: argparse.ArgumentParser, name: str, help: str, default: Any = None, **kw: Any) -> None:
    env_default = _env(name, default)
    if kw.get("action") == "store_true":
        env_default = str(env_default).lower() in ("1", "true", "yes") if env_default is not None else False
    parser.add_argument(f"--{name}", default=env_default, help=f"{help} [env HOMECLUSTER_{name.upper().replace('-', '_')}]",
                        **kw)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    _flag(parser, "kubeconfig", "kubeconfig file (default $KUBECONFIG, ~/.kube/config, else in-cluster)")
    _flag(parser, "namespace", "namespace of lifecycle Jobs and the operator's objects",
          os.environ.get("POD_NAMESPACE") or DEFAULT_NAMESPACE)
    _flag(parser, "job-namespace", "namespace of lifecycle Jobs and of the Secrets slots may name; one that holds "
          "nothing else (default: --namespace)", "")
    _flag(parser, "job-image", "runner image of lifecycle Jobs (a Group's spec.jobs.image wins when allowed)",
          DEFAULT_JOB_IMAGE)
    _flag(parser, "job-images", "comma-separated images a Group's spec.jobs.image may name besides --job-image", "")
    _flag(parser, "job-service-accounts", "comma-separated ServiceAccounts a Group's spec.jobs.serviceAccountName may "
          "name besides homecluster-job (the operator's and the autoscaler's are always refused)", "")
    _flag(parser, "managed-node-selector", "label selector a corev1 Node must match before the operator treats it "
          "as a slot's machine (observes it, cordons or drains it), e.g. homecluster.dev/pool=workers; set it to "
          "make the slot boundary strict (docs/security.md; default: any Node but a control-plane one)", "")
    _flag(parser, "webhook-host", "address the admission webhook listens on", "0.0.0.0")
    _flag(parser, "webhook-port", "port of the admission webhook", 9443, type=int)
    _flag(parser, "webhook-address", "host:port of the admission webhook (overrides --webhook-host/--webhook-port)")
    _flag(parser, "webhook-cert", "PEM serving certificate of the webhook")
    _flag(parser, "webhook-key", "PEM private key of the webhook")
    _flag(parser, "webhook-self-signed-dir", "generate a CA and serving certificate into this directory "
          "(ca.crt is what the ValidatingWebhookConfiguration's caBundle must carry)")
    _flag(parser, "webhook-dns-names", "comma-separated names/IPs for a generated certificate",
          f"homecluster-webhook-service.{DEFAULT_NAMESPACE}.svc,localhost,127.0.0.1")
    _flag(parser, "no-webhook", "do not serve the admission webhook", action="store_true")
    from homecluster.operator import certificates  # --self-signed-certs and its lifetimes
    certificates.add_arguments(parser, _flag)
    _flag(parser, "provider-address", "address of the autoscaler's externalgrpc provider (default :50051, every "
          "interface; with --provider-insecure 127.0.0.1:50051, loopback only)")
    _flag(parser, "provider-cert", "PEM server certificate of the provider (mTLS)")
    _flag(parser, "provider-key", "PEM server key of the provider")
    _flag(parser, "provider-client-ca", "PEM CA that signs the autoscaler's client certificate")
    _flag(parser, "provider-insecure", "serve the provider in plaintext (lab only)", action="store_true")
    _flag(parser, "no-provider", "do not serve the autoscaler provider", action="store_true")
    _flag(parser, "metrics-address", "host:port of the Prometheus metrics endpoint /metrics, e.g. 0.0.0.0:8080 "
          "(default: off)")
    _flag(parser, "health-address", "host:port of the liveness endpoint /healthz, e.g. 0.0.0.0:8081; it answers "
          "only once the caches are filled (default: off)")
    _flag(parser, "no-leader-election", "act without holding the Lease homecluster-operator (only where one "
          "replica can ever run: two would both fire Jobs)", action="store_true")
    _flag(parser, "leader-identity", "this replica's name in the Lease (default $POD_NAME, else the host name); "
          "unique per replica", os.environ.get("POD_NAME") or socket.gethostname())
    _flag(parser, "leader-lease-duration", "seconds a leader's Lease lasts unrenewed before a standby takes it",
          15.0, type=float)
    _flag(parser, "leader-renew-deadline", "seconds a leader keeps acting without renewing; under the lease "
          "duration", 10.0, type=float)
    _flag(parser, "leader-retry-period", "seconds between two looks at the Lease", 2.0, type=float)
    _flag(parser, "log-format", "text or json", "text", choices=("text", "json"))
    _flag(parser, "log-level", "DEBUG, INFO, WARNING", "INFO")
    _flag(parser, "watch-server-timeout", "whole seconds the API server keeps one watch stream open "
          "(timeoutSeconds; kube-apiserver refuses a fraction)", 300, type=int)
    _flag(parser, "watch-client-timeout", "seconds after which the operator drops a watch stream whatever the "
          "server does (a half-open stream is replaced); more than --watch-server-timeout", 330.0, type=float)
    _flag(parser, "watch-connect-timeout", "seconds a watch stream may take to connect", 10.0, type=float)
    _flag(parser, "workers", "slot passes that may run at once (a pass mostly waits for the API server: "
          "fewer workers than slots in flight queue their news)", DEFAULT_WORKERS, type=int)
    defaults = Settings().as_strings()
    for name in Settings.names():
        _flag(parser, name.replace("_", "-"), f"{SETTING_HELP.get(name, 'model setting ' + name)} "
              f"(default {defaults[name]})")


def settings_from(args: argparse.Namespace) -> Settings:
    given = {name: getattr(args, name) for name in Settings.names() if getattr(args, name, None) not in (None, "")}
    return Settings.from_mapping(given)


def leader_timing(args: argparse.Namespace) -> Any:
    from homecluster.operator.leader import Timing

    return Timing(float(args.leader_lease_duration), float(args.leader_renew_deadline),
                  float(args.leader_retry_period))


def provider_address(args: argparse.Namespace) -> str:
    """Where the provider listens: the address given, else every interface for mTLS and loopback only for
    plaintext -- a plaintext provider lets anyone who reaches it create and delete claims, so it is never
    opened to the network unless an address says so."""
    if args.provider_address:
        return str(args.provider_address)
    return f"127.0.0.1{PROVIDER_PORT}" if args.provider_insecure else PROVIDER_PORT


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "0.0.0.0", int(port)


def webhook_files(args: argparse.Namespace) -> tuple[str, str, str | None]:
    """(cert, key, ca) for the webhook: given files, or generated into --webhook-self-signed-dir."""
    if args.webhook_cert and args.webhook_key:
        return args.webhook_cert, args.webhook_key, None
    if not args.webhook_self_signed_dir:
        raise SystemExit("the webhook needs --webhook-cert and --webhook-key, or --webhook-self-signed-dir to "
                         "generate them, or --no-webhook")
    from homecluster import tls

    directory = Path(args.webhook_self_signed_dir)
    cert, key, ca_path = directory / "tls.crt", directory / "tls.key", directory / "ca.crt"
    if not (cert.exists() and key.exists() and ca_path.exists()):
        ca = tls.make_ca("homecluster-webhook-ca")
        hosts = [h.strip() for h in str(args.webhook_dns_names).split(",") if h.strip()]
        leaf = tls.issue(ca, hosts[0] if hosts else "homecluster-webhook", hosts)
        leaf.write(directory, "tls")
        directory.mkdir(parents=True, exist_ok=True)
        ca_path.write_bytes(ca.cert_pem)
    return str(cert), str(key), str(ca_path)


async def require_namespace(client: Any, namespace: str) -> None:
    """SystemExit naming the flag and the fix when `namespace` (--job-namespace) does not exist: kopf watches
    only namespaces that exist, and serves nothing at all, not even claims, while none of its namespaces does."""
    from homecluster.kube.client import NAMESPACES

    found, _ = await client.list(NAMESPACES, field_selector=f"metadata.name={namespace}")
    if not any((item.get("metadata") or {}).get("name") == namespace for item in found):
        raise SystemExit(f"homecluster operator: --job-namespace {namespace!r} names no namespace: create it first, "
                         "labelled for what its Jobs need (docs/install.md, \"Lifecycle Jobs in a namespace of their "
                         "own\"), or leave the flag out to run the Jobs in the operator's namespace")


def watched_namespaces(jobs_namespace: str) -> list[str]:
    """Where kopf watches namespaced kinds: Jobs are the only one (claims, slots, Groups and Nodes are cluster-
    scoped), and the operator may list Jobs only where they run (--job-namespace, else its own namespace).
    Watching its own namespace too, with the Jobs elsewhere, was refused (403) and ended the operator."""
    return [jobs_namespace]


async def serve_metrics(address: str, metrics: Any) -> Any:
    from aiohttp import web

    async def handler(_: web.Request) -> web.Response:
        return web.Response(body=metrics.render(), content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics", handler)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    host, port = _split(address)
    site = web.TCPSite(runner, host, port)
    await site.start()
    log.info("metrics on http://%s:%d/metrics", host, site._server.sockets[0].getsockname()[1])  # type: ignore
    return runner


async def main(args: argparse.Namespace, stop: asyncio.Event | None = None) -> int:
    import kopf

    from homecluster.metrics import Metrics
    from homecluster.kube.kubeconfig import load_connection
    from homecluster.lifecycle.context import Context
    from homecluster.operator.controller import Controller
    from homecluster.operator.handlers import Hooks, WatchTimeouts, register
    from homecluster.kube.client import KubeClient
    from homecluster.operator.providerglue import ClaimWriter
    from homecluster.kube.store import Store
    from homecluster.operator.admission import routes
    from homecluster.operator.webhookserver import CertificateFiles, WebhookServer
    from homecluster.model.boundary import NodeSelector

    settings = settings_from(args)
    try:
        selector = NodeSelector.parse(args.managed_node_selector or "")
    except ValueError as exc:
        raise SystemExit(f"homecluster operator: {exc}") from None
    connection = await load_connection(args.kubeconfig)
    metrics = Metrics()
    client = KubeClient(connection, on_write=lambda verb, res, code: metrics.record_write(verb, res.plural, code))
    ctx = Context(client=client, store=Store(managed_node_selector=selector), settings=settings,
                  namespace=args.namespace,
                  job_namespace=args.job_namespace, job_image=args.job_image, metrics=metrics,
                  job_images=split_list(args.job_images), job_service_accounts=split_list(args.job_service_accounts))
    if ctx.jobs_namespace != args.namespace:
        try:
            await require_namespace(client, ctx.jobs_namespace)
        except BaseException:
            await client.close()
            raise
    controller = Controller(ctx, workers=args.workers)
    hooks = Hooks(connection, watch=WatchTimeouts(int(args.watch_server_timeout), float(args.watch_client_timeout),
                                                  float(args.watch_connect_timeout)))
    stop = stop if stop is not None else asyncio.Event()
    lost = asyncio.Event()
    if not args.no_leader_election:
        from homecluster.operator.leader import LeaderElector

        hooks.elector = LeaderElector(client, args.namespace, str(args.leader_identity), leader_timing(args))

        def on_lost() -> None:
            lost.set()
            stop.set()
        hooks.on_lost = on_lost
    certificates = None
    if args.self_signed_certs:  # before anything serves: the servers read the files it writes
        from homecluster.operator.certificates import start_from_args
        certificates = await start_from_args(args, client)
    if not args.no_webhook:
        cert, key, _ = webhook_files(args)
        host, port = _split(args.webhook_address) if args.webhook_address else (args.webhook_host, int(args.webhook_port))
        hooks.webhook_server = WebhookServer(host, port, CertificateFiles(cert, key), routes(controller))
    if not args.no_provider:
        async def start_provider() -> None:
            from homecluster.provider import ProviderSettings, TLSFiles, serve

            tls = None
            if not args.provider_insecure:
                if not (args.provider_cert and args.provider_key and args.provider_client_ca):
                    raise SystemExit("the provider needs --provider-cert, --provider-key and --provider-client-ca "
                                     "(mTLS), or --provider-insecure (lab only), or --no-provider")
                tls = TLSFiles(Path(args.provider_cert), Path(args.provider_key), Path(args.provider_client_ca))
            server = await serve(ctx.store.cache, ClaimWriter(client, controller.ingest), ProviderSettings(model=settings),
                                 address=provider_address(args), tls=tls, insecure=tls is None, metrics=metrics)
            hooks.on_cleanup.append(lambda: server.stop(1.0))
        hooks.after_sync.append(start_provider)
    registry = kopf.OperatorRegistry()
    register(registry, controller, hooks)

    @kopf.on.cleanup(registry=registry)
    async def end_stop_flag_waiter(**_: Any) -> None:
        # kopf waits on `stop` in a task of its own that a signal leaves running, then gives such tasks 5 s
        # before cancelling them: every SIGTERM cost 5 s of exit. Set, the waiter ends and the exit is prompt.
        stop.set()
    metrics_runner = await serve_metrics(args.metrics_address, metrics) if args.metrics_address else None
    liveness = None
    if args.health_address:
        host, port = _split(args.health_address)
        liveness = f"http://{host}:{port}/healthz"
    log.info("homecluster run: namespace %s, settings %s", args.namespace, settings.as_strings())
    try:
        await kopf.operator(registry=registry, standalone=True, clusterwide=False,
                            namespaces=watched_namespaces(ctx.jobs_namespace),
                            liveness_endpoint=liveness, stop_flag=stop)
    finally:
        if certificates is not None:
            await certificates.stop()
        await controller.stop()
        await client.close()
        if metrics_runner is not None:
            await metrics_runner.cleanup()
    return 1 if lost.is_set() else 0  # lost the Lease: exit non-zero, the kubelet restarts us as a standby


def run(args: argparse.Namespace) -> int:
    from homecluster.logging import configure

    configure(args.log_format, str(args.log_level).upper())
    try:
        settings_from(args)
        from homecluster.operator.handlers import WatchTimeouts

        WatchTimeouts(int(args.watch_server_timeout), float(args.watch_client_timeout),
                      float(args.watch_connect_timeout))
        if not args.no_leader_election:
            from homecluster.model.leadership import valid_identity

            leader_timing(args)
            valid_identity(str(args.leader_identity))
    except (SettingsError, ValueError) as exc:
        log.error("%s", exc)
        return 2
    try:
        return asyncio.run(main(args))
    except KeyboardInterrupt:
        return 0
