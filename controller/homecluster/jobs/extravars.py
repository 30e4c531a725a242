"""The extra vars of a lifecycle Job (docs/job-contract.md, "Extra vars"), as a pure function.

They carry the slot's power parameters and nothing secret: credentials travel only as a mounted
Secret, and the vars name the directory where its files are.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Mapping

from homecluster.jobs.errors import JobSpecError
from homecluster.names import PROVIDER_ID_SCHEME
from homecluster.model.objects import dig, name_of
from homecluster.model.deadlines import BOOT_JOB_MARGIN

CREDENTIALS_DIR = "/etc/homecluster/credentials"
KNOWN_HOSTS_DIR = "/etc/homecluster/ssh"
KNOWN_HOSTS_FILE = f"{KNOWN_HOSTS_DIR}/known_hosts"
POWER_METHODS = ("ipmi", "redfish", "wol")

# Used when the Settings object does not carry them (seconds the playbook waits for each step).
DEFAULT_POWER_TIMEOUT = timedelta(minutes=2)
DEFAULT_DRAIN_TIMEOUT = timedelta(minutes=2)
DEFAULT_GRACEFUL_TIMEOUT = timedelta(minutes=1)


@dataclass(frozen=True)
class SecretRef:
    """Where the credentials of one step live, and the slot field that said so (for errors)."""

    name: str
    namespace: str | None
    field: str


def expected_provider_id(slot: Mapping[str, Any]) -> str:
    """The providerID the slot's machine registers with: spec.providerID, default homecluster://<slot>."""
    return dig(slot, "spec", "providerID") or f"{PROVIDER_ID_SCHEME}{name_of(slot)}"


def drain_target(slot: Mapping[str, Any], node: Mapping[str, Any] | None) -> str:
    """The corev1 Node a shutdown cordons and drains: "" (none) without an observed Node or when the observed
    Node carries another machine's providerID. `node` is the Node the operator observed for the slot and
    accepted as its machine (kube.store.node_of_slot: never a control-plane Node, another slot's
    declared machine, or one outside --managed-node-selector), or None.

    The declared name alone is never a drain target: the slot's author chose it, and the Job's own
    providerID check compares against a value the same author chose (docs/security.md).
    """
    declared = dig(slot, "spec", "nodeName") or name_of(slot)
    if node is None:
        return ""
    actual = dig(node, "spec", "providerID") or ""
    if actual and actual != expected_provider_id(slot):
        return ""
    return name_of(node) or declared


def power_method(slot: Mapping[str, Any]) -> str:
    method = dig(slot, "spec", "power", "method")
    if method not in POWER_METHODS:
        raise JobSpecError(
            f'slot "{name_of(slot)}": spec.power.method is {method!r}; set it to one of {", ".join(POWER_METHODS)}'
        )
    return method


def _block(slot: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    block = dig(slot, "spec", "power", key)
    if not isinstance(block, Mapping):
        raise JobSpecError(
            f'slot "{name_of(slot)}": spec.power.{key} is missing; it is required when spec.power.method '
            f'is "{dig(slot, "spec", "power", "method")}"'
        )
    return block


def credentials_ref(slot: Mapping[str, Any], kind: str) -> SecretRef | None:
    """The Secret a step needs: the BMC's for ipmi/redfish, SSH's for a wol shutdown, none for a wol startup."""
    method = power_method(slot)
    if method == "wol":
        if kind == "startup":
            return None
        key = "ssh"
    else:
        key = method
    field = f"spec.power.{key}.credentialsSecretRef"
    ref = _block(slot, key).get("credentialsSecretRef")
    if not isinstance(ref, Mapping) or not ref.get("name"):
        raise JobSpecError(
            f'slot "{name_of(slot)}": {field}.name is missing; name the Secret that holds the '
            f"{'privateKey' if key == 'ssh' else 'username and password'} for this machine"
        )
    return SecretRef(name=ref["name"], namespace=ref.get("namespace") or None, field=field)


def known_hosts_ref(slot: Mapping[str, Any], kind: str) -> str | None:
    """The ConfigMap with the SSH host key of a wol slot's power-off, or None (then any key is accepted)."""
    if kind != "shutdown" or power_method(slot) != "wol":
        return None
    return dig(slot, "spec", "power", "ssh", "knownHostsConfigMapRef", "name") or None


def _power_block(slot: Mapping[str, Any], kind: str) -> dict[str, Any]:
    method = power_method(slot)
    out: dict[str, Any] = {}
    if method == "ipmi":
        b = _block(slot, "ipmi")
        out["ipmi"] = {"address": b.get("address"), "port": b.get("port", 623)}
    elif method == "redfish":
        b = _block(slot, "redfish")
        out["redfish"] = {
            "endpoint": b.get("endpoint"),
            "system_id": b.get("systemId"),
            "verify_tls": b.get("verifyTLS", True),
            "insecure": b.get("insecure", False),
        }
    elif kind == "startup":
        b = _block(slot, "wol")
        out["wol"] = {
            "mac_address": b.get("macAddress"),
            "broadcast_address": b.get("broadcastAddress", "255.255.255.255"),
            "port": b.get("port", 9),
        }
    else:
        b = _block(slot, "ssh")
        out["ssh"] = {
            "host": b.get("host"),
            "port": b.get("port", 22),
            "user": b.get("user", "root"),
            "command": b.get("command", "poweroff"),
        }
    return out


DEFAULT_BOOT_CHECK_PORT = 22  # the SSH port: a machine whose OS is up answers on it
DEFAULT_STARTUP_JOB_TIMEOUT = timedelta(minutes=5)
# what the startup Job spends besides the power step and the boot wait (model.deadlines.BOOT_JOB_MARGIN)
BOOT_WAIT_MARGIN = round(BOOT_JOB_MARGIN.total_seconds())
# what the shutdown Job spends besides its drain, its power steps and its graceful wait
SHUTDOWN_MARGIN = 30


def boot_budget(startup_job_timeout: int) -> int:
    """Seconds the startup playbook's power step and boot wait may take together (the `boot_budget` var).

    The playbook waits for the boot check port for what the power step did not use of it (the role subtracts
    the power step's own elapsed time), so a quick power-on leaves the machine's POST and OS boot nearly the
    whole Job: 240 s of the default 300, where a wait fixed at the Job's timeout less the longest power step
    gave 150 s whatever the power step took. The budget is the Job's deadline (activeDeadlineSeconds: the
    slot's spec.bootCheck.timeout plus the margin, else startup_job_timeout) less the margin, so the
    playbook's "did not answer" ends before the Job's own deadline; at least half of it for a short Job.
    """
    return max(startup_job_timeout - BOOT_WAIT_MARGIN, startup_job_timeout // 2, 1)


DEFAULT_SHUTDOWN_JOB_TIMEOUT = timedelta(minutes=10)


def graceful_wait_budget(shutdown_job_timeout: int, drain_timeout: int, power_timeout: int,
                         graceful_timeout: int) -> int:
    """Seconds the shutdown playbook waits for a graceful power-off before it forces the machine off.

    The graceful wait runs after the drain and before the forced power-off, all inside the Job's
    activeDeadlineSeconds (= shutdown_job_timeout). A graceful_timeout as long as what is left of that
    deadline meant a machine that ignores the soft off was never forced off: every Job died at its deadline
    in the wait. So the wait is graceful_timeout, but at most what is left of the deadline after the longest
    drain, the longest forced power step and a margin; and never less than a quarter of the deadline when
    those steps alone would fill it (a short Job still gets a real graceful wait; its drain and power step
    are then assumed quick). The startup side: boot_budget.
    """
    room = max(shutdown_job_timeout - drain_timeout - power_timeout - SHUTDOWN_MARGIN, shutdown_job_timeout // 4, 0)
    return min(graceful_timeout, room)


def boot_check(slot: Mapping[str, Any]) -> dict[str, Any]:
    """{host, port} the startup playbook waits for after the power-on: spec.bootCheck, with its defaults.

    host: spec.bootCheck.host, else the machine's own address the slot already names (spec.power.ssh.host),
    else spec.nodeName, else the slot's name. port: spec.bootCheck.port, else 22.
    """
    check = dig(slot, "spec", "bootCheck") or {}
    host = check.get("host") or dig(slot, "spec", "power", "ssh", "host") or dig(slot, "spec", "nodeName") \
        or name_of(slot)
    return {"host": host, "port": check.get("port") or DEFAULT_BOOT_CHECK_PORT}


def _seconds(settings: Any, attr: str, default: timedelta) -> int:
    value = getattr(settings, attr, None)
    if value is None:
        value = default
    if isinstance(value, timedelta):
        return max(0, round(value.total_seconds()))
    return max(0, round(float(value)))


def extra_vars(
    kind: str,
    slot: Mapping[str, Any],
    claim: Mapping[str, Any] | None,
    group_name: str,
    settings: Any,
    *,
    force: bool = False,
    node: Mapping[str, Any] | None = None,
    job_timeout: int | None = None,
) -> dict[str, Any]:
    """The JSON document a Job's playbook reads as data from `job_vars_file` (never as extra vars).

    A shutdown of an unwanted machine has no claim: `claim` and `attempt` are then null. `job_timeout`: the
    Job's activeDeadlineSeconds, when the caller computed it (a startup's depends on the slot).
    `credentials_dir` is not in it: the command passes it (see manifest.job_command).
    """
    out: dict[str, Any] = {
        "slot": name_of(slot),
        "claim": name_of(claim) if claim else None,
        "attempt": (dig(claim, "status", "attempt", default=0) if claim else None),
        "group": group_name,
        "power_method": power_method(slot),
        "power_timeout": _seconds(settings, "power_timeout", DEFAULT_POWER_TIMEOUT),
    }
    out.update(_power_block(slot, kind))
    if kind == "startup":
        out["boot_check"] = boot_check(slot)
        out["boot_budget"] = boot_budget(job_timeout if job_timeout is not None
                                         else _seconds(settings, "startup_job_timeout", DEFAULT_STARTUP_JOB_TIMEOUT))
    if kind == "shutdown":
        out["node_name"] = drain_target(slot, node)
        # cordon and drain act only on a Node that carries the slot's providerID (docs/security.md)
        out["node_provider_id"] = expected_provider_id(slot)
        out["drain_timeout"] = _seconds(settings, "drain_timeout", DEFAULT_DRAIN_TIMEOUT)
        out["graceful_timeout"] = graceful_wait_budget(
            _seconds(settings, "shutdown_job_timeout", DEFAULT_SHUTDOWN_JOB_TIMEOUT), out["drain_timeout"],
            out["power_timeout"], _seconds(settings, "graceful_timeout", DEFAULT_GRACEFUL_TIMEOUT))
        out["force"] = bool(force)
    return out
