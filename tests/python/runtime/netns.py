"""Two "hosts" on one machine: two Linux network namespaces joined by a veth pair (iproute2).

``host_pair()`` creates namespaces ``ppsN{pid}a`` / ``ppsN{pid}b``, a veth pair between them with
the private addresses ``ADDRS`` (one /30: the only route either namespace has, so nothing leaves
them; no default route, IPv6 off, loopback up), yields a ``HostPair``, and deletes both
namespaces (and with them the veth pair) afterwards, also when the body or the set-up fails.
``HostPair.command`` makes the command line that starts a command "on" a host: inside its namespace and its own UTS namespace with its own
hostname (OpenMPI and msrun tell nodes apart by hostname; two nodes sharing one would share
shared-memory transports). ``HostPair.rsh_agent`` writes a script OpenMPI can use as its remote
shell (``OMPI_MCA_plm_rsh_agent``) to start its daemons on the other host.

``unavailable()`` says why namespaces cannot be made here (not root, no ``ip``, the kernel or
sandbox refusing ``ip netns add``), or None.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import shutil
import subprocess
from typing import Iterator

ADDRS = ("10.231.7.1", "10.231.7.2")  # RFC 1918, one /30 between the two namespaces only
PREFIX = 30
# IPv6 off inside a namespace (before its links come up), so that no link-local address or
# route exists: the namespaces hold the two IPv4 addresses above and loopback, nothing else.
NO_IPV6 = ("[ ! -d /proc/sys/net/ipv6 ] || { echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 && "
           "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6; }")


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def _check(res: subprocess.CompletedProcess, what: str) -> None:
    if res.returncode != 0:
        raise RuntimeError(f"{what}: {' '.join(res.args)}: {res.stderr.strip()}")


def unavailable() -> str | None:
    if shutil.which("ip") is None:
        return "iproute2's ip is not installed (scripts/apt-packages.txt)"
    if shutil.which("unshare") is None:
        return "util-linux's unshare is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    probe = f"ppsprobe{os.getpid()}"
    res = _ip("netns", "add", probe)
    if res.returncode != 0:
        return f"cannot create a network namespace here: {res.stderr.strip()}"
    _ip("netns", "del", probe)
    return None


@dataclasses.dataclass(frozen=True)
class HostPair:
    names: tuple[str, str]  # the namespaces, which are also the hosts' hostnames
    addrs: tuple[str, str]
    links: tuple[str, str]  # the veth ends, one in each namespace

    def command(self, host: int, argv: list[str]) -> list[str]:
        """``argv`` run on host 0 or 1: its network namespace, its own hostname."""
        ns = self.names[host]
        return ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                f"hostname {ns} && exec {shlex.join(argv)}"]

    def tx_bytes(self, host: int) -> int:
        """Bytes sent so far through host's end of the veth pair."""
        path = f"/sys/class/net/{self.links[host]}/statistics/tx_bytes"
        out = subprocess.run(["ip", "netns", "exec", self.names[host], "cat", path], capture_output=True, text=True,
                             timeout=30)
        _check(out, "tx_bytes")
        return int(out.stdout)

    def routes(self, host: int) -> list[str]:
        res = _ip("-n", self.names[host], "route", "show", "table", "all")
        _check(res, "routes")
        return [line.strip() for line in res.stdout.splitlines() if line.strip()]

    def rsh_agent(self, path: str) -> str:
        """Writes an executable remote-shell script: ``agent HOST CMD...`` runs CMD on HOST
        (an address of ``addrs``); OpenMPI calls it as it would call ssh."""
        cases = "\n".join(f"  {a}) ns={n} ;;" for a, n in zip(self.addrs, self.names))
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"""#!/bin/sh
# OpenMPI's remote shell for the namespace pair (tests/python/runtime/netns.py)
host=$1; shift
case "$host" in
{cases}
  *) echo "netns rsh: unknown host $host" >&2; exit 1 ;;
esac
exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns && $*"
""")
        os.chmod(path, 0o755)
        return path


@contextlib.contextmanager
def host_pair() -> Iterator[HostPair]:
    tag = str(os.getpid())
    pair = HostPair((f"ppsN{tag}a", f"ppsN{tag}b"), ADDRS, (f"ppsv{tag}a", f"ppsv{tag}b"))
    made: list[str] = []
    try:
        for ns in pair.names:
            _check(_ip("netns", "add", ns), "netns add")
            made.append(ns)
        a, b = pair.links
        _check(_ip("link", "add", a, "type", "veth", "peer", "name", b), "veth pair")
        for ns, link, addr in zip(pair.names, pair.links, pair.addrs):
            _check(_ip("link", "set", link, "netns", ns), "move veth")
            _check(_ip("netns", "exec", ns, "sh", "-c", NO_IPV6), "IPv6 off")
            _check(_ip("-n", ns, "addr", "add", f"{addr}/{PREFIX}", "dev", link), "address")
            _check(_ip("-n", ns, "link", "set", link, "up"), "veth up")
            _check(_ip("-n", ns, "link", "set", "lo", "up"), "lo up")
        yield pair
    finally:
        for ns in made:  # deleting a namespace deletes the veth end inside it, and so the pair
            _ip("netns", "del", ns)
        _ip("link", "del", pair.links[0])  # only exists when the set-up failed before moving it


def namespaces() -> list[str]:
    """Names of the network namespaces that exist now."""
    res = _ip("netns", "list")
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
