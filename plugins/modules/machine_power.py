#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: machine_power
short_description: Power a physical machine on or off through IPMI, Redfish, Wake-on-LAN or SSH
version_added: "0.1.0"
description:
  - Reads the machine's power state, asks its BMC (or the machine itself) for the requested state, and waits
    until the state is confirmed or O(timeout) seconds have passed.
  - C(ipmi) uses pyghmi (RMCP+, IPMI 2.0). C(redfish) uses sushy (C(ComputerSystem.Reset)).
  - C(wol) sends a Wake-on-LAN magic packet. It can only power on, and it cannot observe the machine by itself;
    it confirms the boot only when O(wol.check_host) and O(wol.check_port) name a TCP port that answers once the
    machine is up. Without them it returns RV(confirmed=false) and C(changed=true) on every run.
  - C(ssh) runs a command on the machine (default C(poweroff)) with a private key. It can only power off, and it
    confirms the power-off by the SSH port becoming unreachable.
  - O(state=powered_off) asks for a graceful power-off, waits up to O(graceful_timeout) seconds, then forces it.
    The forced step always keeps the last 30 seconds of O(timeout) (half of O(timeout) when that is shorter), so
    the graceful wait is cut short when O(graceful_timeout) does not fit, and a machine that ignores the
    graceful request still ends off within O(timeout). With O(timeout=20) and the default O(graceful_timeout=120),
    the graceful request gets 10 seconds and the forced power-off the other 10.
author: homecluster maintainers (@homecluster-dev)
requirements:
  - pyghmi (method ipmi)
  - sushy (method redfish)
  - wakeonlan (method wol)
  - paramiko (method ssh)
attributes:
  check_mode:
    support: full
    description: Reads the current state and reports the steps it would take, without taking them.
  diff_mode:
    support: none
    description: No diff is reported.
options:
  state:
    description:
      - The power state to reach.
      - V(powered_on) powers on (C(ipmi), C(redfish), C(wol)).
      - V(powered_off) shuts down gracefully and forces the power off after O(graceful_timeout) seconds, or earlier
        when the rest of O(timeout) is needed for the forced step (see the description).
      - V(forced_off) cuts the power at once.
      - V(reset) restarts a running machine; a machine that is off is powered on.
      - V(query) only reads the state.
    type: str
    choices: [powered_on, powered_off, forced_off, reset, query]
    default: query
  method:
    description: How the machine is powered.
    type: str
    required: true
    choices: [ipmi, redfish, wol, ssh]
  ipmi:
    description: The BMC, required when O(method=ipmi).
    type: dict
    suboptions:
      address:
        description: Host name or IP address of the BMC.
        type: str
        required: true
      port:
        description: UDP port of the BMC.
        type: int
        default: 623
      username:
        description: IPMI user name.
        type: str
        required: true
      password:
        description: IPMI password. Never logged.
        type: str
        required: true
      key:
        description:
          - The BMC key (Kg) in hex, at most 20 bytes (40 hex digits), for a BMC that requires one for RMCP+ sessions
            (C(ipmitool -y)); as community.general's ipmi modules name it. Never logged.
          - When omitted, the password serves as Kg, which is what a BMC without a key of its own expects.
        type: str
        aliases: [kg]
  redfish:
    description: The Redfish service, required when O(method=redfish).
    type: dict
    suboptions:
      endpoint:
        description: Base URL of the service, for example C(https://10.0.0.5); C(/redfish/v1) is appended if missing.
        type: str
        required: true
      system_id:
        description: The ComputerSystem's id. May be omitted when the service lists exactly one system.
        type: str
      verify_tls:
        description: Verify the service's TLS certificate (C(validate_certs) in community.general's redfish modules).
        type: bool
        default: true
        aliases: [validate_certs]
      ca_path:
        description:
          - Path of a PEM file of the CA certificates that signed the service's certificate, for a BMC whose
            certificate a private CA (or the BMC itself) signed; the system's CAs when omitted.
          - Used only while O(redfish.verify_tls=true).
        type: path
      auth:
        description:
          - How to authenticate.
          - V(basic) sends the user name and password with every request.
          - V(session) logs in once (C(SessionService)) and sends the session's C(X-Auth-Token) afterwards; it fails,
            naming this option, against a service without sessions.
          - V(auto) uses a session when the service offers one and falls back to basic otherwise.
        type: str
        choices: [auto, basic, session]
        default: auto
      insecure:
        description:
          - Allow an C(http://) O(redfish.endpoint). The user name and password then cross the network in
            clear, so an C(http://) endpoint is refused unless this is true.
        type: bool
        default: false
      username:
        description: Redfish user name.
        type: str
        required: true
      password:
        description: Redfish password. Never logged.
        type: str
        required: true
  wol:
    description: The Wake-on-LAN target, required when O(method=wol).
    type: dict
    suboptions:
      mac_address:
        description: MAC address of the machine's network card, six hex octets.
        type: str
        required: true
      broadcast_address:
        description: Address the magic packet is sent to, usually the broadcast address of the machine's segment.
        type: str
        default: 255.255.255.255
      port:
        description: UDP port of the magic packet.
        type: int
        default: 9
      check_host:
        description: Host whose TCP port O(wol.check_port) answers once the machine is up; enables confirmation.
        type: str
      check_port:
        description: TCP port probed on O(wol.check_host), for example 22.
        type: int
  ssh:
    description: How to reach the machine for an SSH power-off, required when O(method=ssh).
    type: dict
    suboptions:
      host:
        description: Host name or IP address of the machine.
        type: str
        required: true
      port:
        description: SSH port.
        type: int
        default: 22
      user:
        description: User to log in as; it must be allowed to run O(ssh.command).
        type: str
        default: root
      private_key_file:
        description: Path of the private key file (the job mounts it from the slot's Secret).
        type: path
        required: true
      command:
        description: Command that powers the machine off, for O(state=powered_off).
        type: str
        default: poweroff
      force_command:
        description: Command for O(state=forced_off) and for the forced step after O(graceful_timeout).
        type: str
        default: poweroff -f
      known_hosts_file:
        description:
          - A known_hosts file holding the machine's host key; unknown keys are then refused.
          - When omitted, any host key is accepted (machines are reinstalled and their keys change).
        type: path
  boot_device:
    description:
      - Boot once from this device, V(pxe) or V(disk), for example to reinstall a machine over the network.
      - Set just before the boot that O(state=powered_on) or O(state=reset) causes, for the next boot only (IPMI
        boot flags without persistence; Redfish C(BootSourceOverrideTarget) with C(BootSourceOverrideEnabled=Once)).
        A machine already on with O(state=powered_on) boots nothing, so nothing is set.
      - Methods C(ipmi) and C(redfish) only.
    type: str
    choices: [pxe, disk]
  timeout:
    description:
      - Seconds the whole operation may take, including waiting for the confirmation.
      - An unreachable BMC, wrong credentials and a state that never arrives all fail within this time.
    type: int
    default: 300
  graceful_timeout:
    description:
      - Seconds to wait for a graceful power-off before forcing it (O(state=powered_off)).
      - The wait ends earlier when only the forced step's reserve of O(timeout) is left (30 seconds, or half of
        O(timeout) when that is shorter); a value above O(timeout) is not an error.
    type: int
    default: 120
  poll_interval:
    description: Seconds between two reads of the power state while waiting; above 0 and at most O(timeout).
    type: float
    default: 0.25
seealso:
  - module: community.general.ipmi_power
    description: >-
      Power over IPMI alone; use it in a playbook of your own. Use this module when one task must power IPMI,
      Redfish, Wake-on-LAN and SSH machines alike, wait until the power state is reached, and read the
      credentials from the lifecycle Job's Secret.
  - module: community.general.redfish_command
    description: >-
      Every Redfish action (boot order, virtual media, BIOS, accounts); use it for those. For power alone this
      module answers the same way for every method and waits until the state is reached.
notes:
  - The password and private key never appear in the module's output or log, at any verbosity.
  - A Wake-on-LAN packet must reach the machine's segment; from a Kubernetes pod that means host networking.
"""

EXAMPLES = r"""
- name: Reinstall a machine over the network - reset it to boot once from PXE
  homecluster.infra.machine_power:
    method: ipmi
    state: reset
    boot_device: pxe
    ipmi: "{{ power_ipmi }}"

- name: Power on through IPMI and wait until the BMC reports on
  homecluster.infra.machine_power:
    method: ipmi
    state: powered_on
    ipmi:
      address: 10.0.0.21
      username: admin
      password: "{{ lookup('file', '/etc/homecluster/credentials/password') }}"
    timeout: 120

- name: Graceful power off through Redfish, forced after two minutes
  homecluster.infra.machine_power:
    method: redfish
    state: powered_off
    graceful_timeout: 120
    redfish:
      endpoint: https://10.0.0.22
      username: admin
      password: "{{ bmc_password }}"

- name: Wake a machine and confirm by its sshd answering
  homecluster.infra.machine_power:
    method: wol
    state: powered_on
    wol:
      mac_address: "52:54:00:12:34:56"
      broadcast_address: 10.0.0.255
      check_host: 10.0.0.23
      check_port: 22

- name: Power off a machine without a BMC
  homecluster.infra.machine_power:
    method: ssh
    state: powered_off
    ssh:
      host: 10.0.0.23
      private_key_file: /etc/homecluster/credentials/privateKey

- name: Read the power state
  homecluster.infra.machine_power:
    method: ipmi
    ipmi: "{{ power_ipmi }}"
  register: power
"""

RETURN = r"""
previous_state:
  description: The state read before any action, V(on), V(off) or V(unknown) (a method that cannot observe).
  returned: always
  type: str
  sample: "off"
state:
  description: The state read after the last action (the same as RV(previous_state) when nothing ran).
  returned: always
  type: str
  sample: "on"
confirmed:
  description: Whether the machine's state was read (and, after an action, reached the requested state).
  returned: always
  type: bool
  sample: true
steps:
  description:
    - The steps taken (in check mode, the steps that would be taken), among V(power_on), V(graceful_off),
      V(forced_off), V(reset) and V(set_boot_device) (the one-time O(boot_device)).
  returned: always
  type: list
  elements: str
  sample: [graceful_off, forced_off]
forced:
  description: Whether the power had to be forced off.
  returned: always
  type: bool
  sample: false
elapsed:
  description: Seconds from the start of the module to the confirmation.
  returned: always
  type: float
  sample: 0.42
"""

from ansible_collections.homecluster.infra.plugins.module_utils.arg_checks import CheckedModule, interval_problem
from ansible_collections.homecluster.infra.plugins.module_utils.power_common import PowerError
from ansible_collections.homecluster.infra.plugins.module_utils.power_execute import PowerExecutor
from ansible_collections.homecluster.infra.plugins.module_utils.power_plan import (
    BOOT_DEVICES, STATES, boot_device_problem, method_allows,
)
from ansible_collections.homecluster.infra.plugins.module_utils.power_registry import METHODS
# The protocol files: importing each registers its method (power_registry.py); the order is the choices' order.
from ansible_collections.homecluster.infra.plugins.module_utils import (  # noqa: F401 pylint: disable=unused-import
    power_ipmi, power_redfish, power_wol, power_ssh,
)


def argument_spec() -> dict:
    spec = dict(
        state=dict(type="str", default="query", choices=list(STATES)),
        method=dict(type="str", required=True, choices=list(METHODS)),
    )
    spec.update((name, method.argument_spec()) for name, method in METHODS.items())
    spec.update(
        boot_device=dict(type="str", choices=list(BOOT_DEVICES)),
        timeout=dict(type="int", default=300),
        graceful_timeout=dict(type="int", default=120),
        poll_interval=dict(type="float", default=0.25),
    )
    return spec


def validate(params: dict):
    """Checks argument_spec cannot express; returns a message naming the option, or None."""
    method, state = params["method"], params["state"]
    if not method_allows(method, state):
        return "state=%s is not possible with method=%s; it supports state %s" % (
            state, method, ", ".join(METHODS[method].states))
    problem = boot_device_problem(method, state, params["boot_device"])
    if problem:
        return problem
    if params["timeout"] <= 0:
        return "timeout must be a positive number of seconds, got %d" % params["timeout"]
    if params["graceful_timeout"] < 0:
        return "graceful_timeout must be zero or more seconds, got %d" % params["graceful_timeout"]
    problem = interval_problem("poll_interval", params["poll_interval"], params["timeout"])
    if problem:
        return problem
    problem = METHODS[method].check(params[method])
    if problem:
        return problem
    for name in METHODS:
        sub = params.get(name) or {}
        for key in ("port", "check_port"):
            if sub.get(key) is not None and not 0 < sub[key] < 65536:
                return "%s.%s must be a port number (1-65535), got %d" % (name, key, sub[key])
    return None


def build_driver(params: dict):
    return METHODS[params["method"]].build(params[params["method"]])


def main() -> None:
    module = CheckedModule(
        argument_spec=argument_spec(),
        required_if=[("method", name, [name]) for name in METHODS],
        supports_check_mode=True,
    )
    params = module.params
    problem = module.problem or validate(params)
    if problem:
        module.fail_json(msg=problem)
    missing = METHODS[params["method"]].missing_library()
    if missing:
        module.fail_json(msg=missing[0], exception=missing[1])

    driver = build_driver(params)
    executor = PowerExecutor(driver, params["timeout"], params["graceful_timeout"], params["poll_interval"],
                             boot_device=params["boot_device"])
    try:
        result = executor.run(params["state"], check_mode=module.check_mode)
    except PowerError as exc:
        module.fail_json(msg=str(exc), method=exc.method, host=exc.host, cause=exc.kind, elapsed=executor.elapsed())
    finally:
        driver.close()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
