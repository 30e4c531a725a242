"""The forced command of a simulated machine's sshd: relay the client's command to the lab.

sshd runs this file (by path, with `python -I`, standard library only, so it starts fast and
needs no installed package) for every login with the machine's key. It sends the command the
client asked for (SSH_ORIGINAL_COMMAND) to the lab over the machine's Unix control socket, prints
what the lab answers and exits with the lab's exit code. The lab decides what the command does to
the machine (see ssh.classify_command).

Usage (from authorized_keys): python -I ssh_forced.py /path/to/control.sock
"""
import json
import os
import socket
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: ssh_forced.py CONTROL_SOCKET\n")
        return 2
    request = {"command": os.environ.get("SSH_ORIGINAL_COMMAND", ""), "client": os.environ.get("SSH_CLIENT", "")}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(argv[1])
            sock.sendall(json.dumps(request).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        reply = json.loads(data or b"{}")
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"homecluster lab: machine control socket {argv[1]} unavailable: {exc}\n")
        return 255
    sys.stdout.write(reply.get("stdout", ""))
    sys.stderr.write(reply.get("stderr", ""))
    sys.stdout.flush()
    return int(reply.get("exit", 1))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
