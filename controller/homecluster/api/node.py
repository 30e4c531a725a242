"""Node: a slot, the configuration of one machine. Git writes its spec; the operator its status.

There is no field to ask for power: a machine is wanted exactly when a live NodeClaim names its slot.
"""
from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal, Optional

from pydantic import ConfigDict, Field, model_validator

from homecluster.api.bounds import PowerDrawWatts, ProvisionTime, duration_limit
from homecluster.limits import MAX_PROVISION_TIME
from homecluster.api.common import Conditions, SecretRef
from homecluster.api.nodeclaim import ClaimPhase, ClaimReason
from homecluster.model.phases import PowerState, SlotPhase
from homecluster.api.resource import Resource
from homecluster.api.types import (
    ApiModel, Bool, Host, Identifier, Name, NonNegativeInt, NonNegativeNumber, PlainText, Port, Timestamp, UserName, cel,
)

MAC_PATTERN = r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$"
# No braces: a URL with "{{" would be a template (docs/security.md).
URL_PATTERN = r"^https?://[^\s/{}]+(/[^\s{}]*)?$"
# A corev1 Node's name: a DNS subdomain.
NODE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
# A providerID: <scheme>://<anything without spaces or braces>.
PROVIDER_ID_PATTERN = r"^[A-Za-z][A-Za-z0-9+.-]*://[^\s{}]*$"
NodeName = Annotated[str, Field(min_length=1, max_length=253, pattern=NODE_NAME_PATTERN)]
ProviderId = Annotated[str, Field(min_length=1, max_length=253, pattern=PROVIDER_ID_PATTERN)]


class PowerMethod(StrEnum):
    IPMI = "ipmi"
    REDFISH = "redfish"
    WOL = "wol"  # on with a magic packet, off over SSH


# PowerState (observed; written by the operator only, as JSON, so YAML 1.1's on/off booleans never
# apply) and SlotPhase are the pure model's enums: one definition for the CRD and the controller.


class IpmiPower(ApiModel):
    """A BMC reached over IPMI-over-LAN (RMCP+)."""

    address: Host = Field(description="The BMC's host name or IP address.")
    port: Port = Field(623, description="The BMC's UDP port.")
    credentials_secret_ref: SecretRef = Field(description="A Secret with username and password.")


HTTP_REFUSED = ("spec.power.redfish.endpoint is http://: the BMC's username and password would cross the network "
                "in clear; use https:// or set spec.power.redfish.insecure: true")


class RedfishPower(ApiModel):
    """A BMC reached over Redfish (HTTPS)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        cel("self.endpoint.startsWith('https://') || (has(self.insecure) && self.insecure)", HTTP_REFUSED,
            field_path=".endpoint", reason="FieldValueForbidden"),
    ]})

    endpoint: str = Field(pattern=URL_PATTERN, description="The BMC's base URL, e.g. https://10.0.0.21.")
    system_id: Optional[Identifier] = Field(
        None, description="The ComputerSystem id; the only system when absent.")
    verify_tls: Bool = Field(True, alias="verifyTLS", description="Verify the BMC's TLS certificate.")
    insecure: Bool = Field(False, description="Allow an http:// endpoint, whose username and password cross the "
                           "network in clear; an http:// endpoint is refused without it.")
    credentials_secret_ref: SecretRef = Field(description="A Secret with username and password.")

    @model_validator(mode="after")
    def _https_unless_insecure(self) -> "RedfishPower":
        if not self.endpoint.lower().startswith("https://") and not self.insecure:
            raise ValueError(HTTP_REFUSED)
        return self


class WolPower(ApiModel):
    """Power-on with a Wake-on-LAN magic packet."""

    mac_address: str = Field(pattern=MAC_PATTERN, description="The MAC address of the NIC to wake, aa:bb:cc:dd:ee:ff.")
    broadcast_address: Host = Field("255.255.255.255", description="Where the magic packet is sent.")
    port: Port = Field(9, description="The UDP port of the magic packet.")


class KnownHostsRef(ApiModel):
    """A ConfigMap with the key known_hosts (OpenSSH format; [host]:port for a port other than 22)."""

    name: Name = Field(description="The ConfigMap's name, in the Jobs' namespace.")


class SshPower(ApiModel):
    """Power-off over SSH, for machines without a BMC."""

    host: Host = Field(description="The machine's host name or IP address.")
    port: Port = Field(22, description="The SSH port.")
    user: UserName = Field("root", description="The user that runs the command.")
    command: PlainText = Field("poweroff", description="The command that powers the machine off.")
    credentials_secret_ref: SecretRef = Field(description="A Secret with privateKey.")
    known_hosts_config_map_ref: Optional[KnownHostsRef] = Field(
        None, description="A ConfigMap of the Jobs' namespace whose key known_hosts holds the machine's host key; "
        "with it the key is checked strictly, without it any key is accepted (docs/security.md).")


def _requires(block: str, method: str) -> dict[str, str]:
    return cel(f"self.method != '{method}' || has(self.{block})",
               f"spec.power.{block} is required when spec.power.method is {method}",
               field_path=f".{block}", reason="FieldValueRequired")


# (settings block, the method that needs it): wol powers on with a magic packet and off over SSH
POWER_BLOCKS = (("ipmi", "ipmi"), ("redfish", "redfish"), ("wol", "wol"), ("ssh", "wol"))
POWER_RULES = [_requires(block, method) for block, method in POWER_BLOCKS]


class PowerSpec(ApiModel):
    """How the machine is powered on and off, and the settings of that method."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": POWER_RULES})

    method: PowerMethod = Field(description="ipmi, redfish, or wol (on with a magic packet, off over SSH).")
    ipmi: Optional[IpmiPower] = Field(None, description="Required when method is ipmi.")
    redfish: Optional[RedfishPower] = Field(None, description="Required when method is redfish.")
    wol: Optional[WolPower] = Field(None, description="Required when method is wol.")
    ssh: Optional[SshPower] = Field(None, description="Required when method is wol: how the machine is powered off.")

    @model_validator(mode="after")
    def _method_settings(self) -> "PowerSpec":
        for (block, method), rule in zip(POWER_BLOCKS, POWER_RULES):
            if self.method == method and getattr(self, block) is None:
                raise ValueError(rule["message"])
        return self


class BootCheck(ApiModel):
    """The TCP port that answers once the machine's operating system is up (the startup Job waits for it)."""

    host: Optional[Host] = Field(
        None, description="The machine's host name or IP address; defaults to spec.power.ssh.host when set, "
        "else spec.nodeName, else the slot's name.")
    port: Port = Field(22, description="The TCP port probed; the SSH port by default.")
    timeout: Optional[ProvisionTime] = Field(
        None, description="The slot's boot budget: how long the machine may take from the start of the power-on "
        "until it answers on the port (the power step, the POST, the OS boot). The startup Job is given this plus "
        "60s; it must fit the claim's boot budget with the later stages (the Group's maxNodeProvisionTime, at "
        "least the boot floor), else the startup Job is refused. Unset: the operator's startup Job timeout "
        "(5m).", json_schema_extra=duration_limit(MAX_PROVISION_TIME))


class NodeSpec(ApiModel):
    """The configuration of one machine, written by Git only."""

    group_ref: Name = Field(description="The name of the Group this slot belongs to.")
    node_name: Optional[NodeName] = Field(None, description="The corev1 Node name the machine registers as; "
                                          "defaults to the slot's name.")
    provider_id: Optional[ProviderId] = Field(
        None, alias="providerID", description="The providerID the machine's corev1 Node will carry (k3s://worker-01 "
        "on k3s); defaults to homecluster://<slot>.")
    power_draw_watts: Optional[PowerDrawWatts] = Field(None, description="The machine's draw when on, for pricing.")
    power: PowerSpec = Field(description="How the machine is powered on and off.")
    boot_check: Optional[BootCheck] = Field(
        None, description="Where the machine answers once its OS is up: the startup Job powers the machine on, then "
        "waits (within its timeout) until a TCP connection to host:port is accepted. Defaults: port 22 on the "
        "machine's host name.")


class LastClaim(ApiModel):
    """The digest of the request that ended on this slot; the next claim's attempt is seeded from it."""

    name: Name = Field(description="The claim's name.")
    attempt: NonNegativeInt = Field(description="The claim's attempt.")
    phase: ClaimPhase = Field(description="The phase it ended in.")
    reason: Optional[ClaimReason] = Field(None, description="Why it ended.")
    reached_ready: Bool = Field(False, description="The claim was ready at some point.")
    finished_at: Optional[Timestamp] = Field(None, description="When it ended.")


class ShutdownState(ApiModel):
    """Shutdown attempts for a machine that is on and that no claim asked for."""

    attempts: NonNegativeInt = Field(0, description="Shutdown Jobs fired.")
    held_until: Optional[Timestamp] = Field(None, description="No new shutdown Job before this time.")


class NodeStatus(ApiModel):
    """What the cluster observes about the machine, written by the operator."""

    power_state: Optional[PowerState] = Field(
        None, description="Observed power, written by the operator only: on exactly when the corev1 Node reports "
        "Ready=True, off otherwise. Never written by hand (the values are JSON strings, not YAML booleans).")
    phase: Optional[SlotPhase] = Field(
        None, description="Derived from (live claim phase, observed power, node usability) and written by the "
        "operator only; it decides nothing.")
    claim: Optional[Name] = Field(None, description="The slot's live claim, if any.")
    attempt: Optional[NonNegativeInt] = Field(None, description="The live claim's attempt.")
    node_name: Optional[Annotated[str, Field(min_length=1, max_length=253, pattern=NODE_NAME_PATTERN)]] = Field(
        None, description="The corev1 Node observed for the slot.")
    last_claim: Optional[LastClaim] = Field(None, description="The digest of the request that ended.")
    shutdown: Optional[ShutdownState] = Field(None, description="Shutdowns of an unwanted machine.")
    conditions: Optional[Conditions] = Field(None, description="Observations of the slot, by type.")


class Node(Resource):
    """A slot (``kubectl get slots``)."""

    kind: Literal["Node"] = "Node"
    spec: NodeSpec
    status: NodeStatus = Field(default_factory=NodeStatus)
