# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SSH power-off driver (paramiko), for machines with no BMC: power off only.

It runs a command on the machine (``poweroff`` by default; ``force_command`` for a
forced power-off) with a private key, and confirms by the SSH port becoming
unreachable. There is no out-of-band "force": if the OS does not run the command,
nothing here can cut the power.
"""
from __future__ import annotations

import socket
import time

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import (
    OFF, ON, PowerDriver, PowerError, tcp_reachable,
)
from ansible_collections.homecluster.infra.plugins.module_utils.power_registry import Library, Method, register

paramiko = None  # imported by _import_library() when the method is first used


def _import_library():
    """Import paramiko into this file's globals: on the first use of the method, not at import."""
    global paramiko  # pylint: disable=global-statement
    import paramiko


LIBRARY = Library("paramiko", _import_library)


# How long to wait for the command's exit status. A command that powers the machine off
# usually drops the connection before it can answer; that is success, not an error.
_EXIT_WAIT = 3.0


class SshDriver(PowerDriver):
    method = "ssh"

    def __init__(self, host: str, port: int, user: str, private_key_file: str, command: str,
                 force_command: str, known_hosts_file=None, connect_timeout: float = 10.0) -> None:
        LIBRARY.require()
        super().__init__("%s:%d" % (host, port))
        self.address = host
        self.port = port
        self.user = user
        self._private_key_file = private_key_file
        self.command = command
        self.force_command = force_command
        self.known_hosts_file = known_hosts_file
        self.connect_timeout = connect_timeout

    def query(self) -> str:
        """'on' while the SSH port answers; 'off' once it does not."""
        return ON if tcp_reachable(self.address, self.port, min(self.connect_timeout, 2.0)) else OFF

    def _client(self):
        client = paramiko.SSHClient()
        if self.known_hosts_file:
            client.load_host_keys(self.known_hosts_file)
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        else:
            # Machines get reinstalled and their host keys change; without a known_hosts
            # file the key is accepted (documented in the module).
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        try:
            client.connect(self.address, port=self.port, username=self.user, key_filename=self._private_key_file,
                           timeout=self.connect_timeout, banner_timeout=self.connect_timeout,
                           auth_timeout=self.connect_timeout, look_for_keys=False, allow_agent=False)
        except paramiko.AuthenticationException as exc:
            client.close()
            raise self.error(PowerError.AUTH, "user %r was refused with the private key: %s" % (self.user, exc))
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise self.error(PowerError.AUTH, "host key mismatch: %s" % exc)
        except paramiko.SSHException as exc:
            client.close()
            raise self.error(PowerError.PROTOCOL, str(exc))
        except (OSError, socket.timeout) as exc:
            client.close()
            raise self.error(PowerError.UNREACHABLE, "cannot connect: %s" % exc)
        return client

    def power_off(self, graceful: bool) -> None:
        command = self.command if graceful else self.force_command
        client = self._client()
        try:
            _stdin, stdout, stderr = client.exec_command(command, timeout=self.connect_timeout)
            channel = stdout.channel
            until = time.monotonic() + _EXIT_WAIT
            while not channel.exit_status_ready() and time.monotonic() < until and not channel.closed:
                time.sleep(0.05)
            if channel.exit_status_ready():
                status = channel.recv_exit_status()
                if status not in (0, -1):
                    detail = stderr.read(2000).decode("utf-8", "replace").strip()
                    raise self.error(PowerError.PROTOCOL, "command %r exited %d: %s" % (command, status, detail))
        except (paramiko.SSHException, EOFError, OSError):
            pass  # the machine dropped the connection while going down: expected
        finally:
            client.close()


def _build(p):
    return SshDriver(p["host"], p["port"], p["user"], p["private_key_file"], p["command"], p["force_command"],
                     p["known_hosts_file"])


register(Method(
    "ssh",
    options=dict(
        host=dict(type="str", required=True),
        port=dict(type="int", default=22),
        user=dict(type="str", default="root"),
        private_key_file=dict(type="path", required=True, no_log=False),
        command=dict(type="str", default="poweroff"),
        force_command=dict(type="str", default="poweroff -f"),
        known_hosts_file=dict(type="path"),
    ),
    build=_build, library=LIBRARY,
    states=("powered_off", "forced_off", "query"),
))
