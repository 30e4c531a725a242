"""OpenIPMI's ipmi_sim as a loopback BMC whose power state lives in a file.

ipmi_sim calls a ``chassis_control`` program to read and set the chassis power. Ours keeps
the state in ``<dir>/power`` and applies a change after ``delay`` seconds (the machine's own
delay), by writing the pending state and its due time to ``<dir>/pending``. Like many
real BMCs without an ACPI link, ipmi_sim does not act on a soft (graceful) power-off: it is
the peer that proves the forced step after graceful_timeout.
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from ansible_peers.ports import bound_by, free_port

CHASSIS_SCRIPT = r"""#!/bin/sh
# chassis_control for ipmi_sim: <mc> get power | <mc> set power <0|1> ...
dir="$(dirname "$0")"
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
settle() {
  if [ -f "$dir/pending" ]; then
    read target due < "$dir/pending"
    if [ "$(now_ms)" -ge "$due" ]; then echo "$target" > "$dir/power"; rm -f "$dir/pending"; fi
  fi
}
mc=$1; op=$2; shift 2
echo "$op $*" >> "$dir/calls"
settle
case $op in
  get)
    for p in "$@"; do
      case $p in
        power) echo "power:$(cat "$dir/power")";;
        boot) echo "boot:default";;
      esac
    done;;
  set)
    while [ $# -gt 1 ]; do
      if [ "$1" = power ]; then
        delay_ms=$(cat "$dir/delay_ms")
        if [ "$delay_ms" -le 0 ]; then echo "$2" > "$dir/power"; rm -f "$dir/pending";
        else echo "$2 $(( $(now_ms) + delay_ms ))" > "$dir/pending"; fi
      fi
      shift 2
    done;;
esac
exit 0
"""

LAN_CONF = """name "hcsim"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 {port}
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
{bmc_key_line}  endlan
  chassis_control "{script} 0x20"
  user 2 true "{username}" "{password}" admin 10 none md2 md5 straight
"""

EMULATOR_CMDS = """mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
mc_enable 0x20
"""


class IpmiSim:
    """One ipmi_sim process. ``power`` reads/writes the machine state behind the BMC."""

    binary = shutil.which("ipmi_sim")

    def __init__(self, workdir: Path, username: str = "admin", password: str = "s3cret-ipmi",
                 delay: float = 0.0, power: str = "off", bmc_key=None) -> None:
        self.dir = Path(workdir)
        # the BMC key (Kg) as ASCII, at most 19 characters (lan.conf's quoted form; zero-extended to 20 bytes):
        # RMCP+ sessions then derive their keys from it instead of from the password
        self.bmc_key = bmc_key
        self.dir.mkdir(parents=True, exist_ok=True)
        self.username, self.password = username, password
        self.port = 0
        self.proc = None
        script = self.dir / "chassis_control"
        script.write_text(CHASSIS_SCRIPT)
        script.chmod(0o755)
        self.delay = delay
        self.power = power

    # --- machine state ---------------------------------------------------------
    @property
    def power(self) -> str:
        pending = self.dir / "pending"
        if pending.exists():  # settle like the script does, so tests see what the BMC would say
            target, due = pending.read_text().split()
            if time.time() * 1000 >= int(due):
                (self.dir / "power").write_text(target + "\n")
                pending.unlink(missing_ok=True)
        return "on" if (self.dir / "power").read_text().strip() == "1" else "off"

    @power.setter
    def power(self, value: str) -> None:
        (self.dir / "pending").unlink(missing_ok=True)
        (self.dir / "power").write_text(("1" if value == "on" else "0") + "\n")

    @property
    def delay(self) -> float:
        return int((self.dir / "delay_ms").read_text()) / 1000.0

    @delay.setter
    def delay(self, seconds: float) -> None:
        (self.dir / "delay_ms").write_text("%d\n" % int(seconds * 1000))

    def calls(self) -> list:
        path = self.dir / "calls"
        return path.read_text().splitlines() if path.exists() else []

    # --- process -------------------------------------------------------------------
    def start(self, attempts: int = 5) -> "IpmiSim":
        if not self.binary:
            raise RuntimeError("ipmi_sim not found: install the Debian package openipmi")
        for _ in range(attempts):
            self.port = free_port(socket.SOCK_DGRAM)
            (self.dir / "lan.conf").write_text(LAN_CONF.format(
                port=self.port, script=self.dir / "chassis_control", username=self.username, password=self.password,
                bmc_key_line='    bmc_key "%s"\n' % self.bmc_key if self.bmc_key else ""))
            (self.dir / "emu.cmd").write_text(EMULATOR_CMDS)
            self.proc = subprocess.Popen(
                [self.binary, "-c", str(self.dir / "lan.conf"), "-f", str(self.dir / "emu.cmd"),
                 "-s", str(self.dir / "state"), "-n"],
                stdin=subprocess.DEVNULL, stdout=open(self.dir / "sim.log", "ab"), stderr=subprocess.STDOUT,
                cwd=self.dir)
            if self._ready(5.0):
                return self
            self.stop()
        raise RuntimeError("ipmi_sim did not start; see %s" % (self.dir / "sim.log"))

    def _ready(self, timeout: float) -> bool:
        """Ready when the UDP port is bound by this ipmi_sim, not by a process that took it after the pick (read
        from /proc, no IPMI traffic); start() tries a new port otherwise."""
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            if self.proc.poll() is not None:
                return False
            if bound_by(self.proc.pid, self.port):
                return True
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def module_args(self) -> dict:
        return {"address": "127.0.0.1", "port": self.port, "username": self.username, "password": self.password}

