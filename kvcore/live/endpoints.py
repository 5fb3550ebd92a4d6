"""ZMQ endpoints as vLLM 0.33's `ZmqEventPublisher` reads them.

* bind or connect: a wildcard (``*``), an IPv6 ``::`` or an ``ipc://`` / ``inproc://`` endpoint
  is bound; any other (``tcp://host:port``) is connected to (a subscriber bound there). A
  listener (`listener_binds`) binds only a wildcard (``tcp://*:PORT``, ``tcp://[::]:PORT``,
  ``tcp://0.0.0.0:PORT``: a publisher connects to it) and connects to the rest, an ipc path
  or an IPv6 host included (vLLM's publisher binds those);
* a data-parallel rank ``r > 0`` (a `kvcli cluster` replica) offsets a tcp port by ``r``
  (port 0 is left to the OS) and suffixes an inproc name with ``_dp<r>``.

`check_endpoint` refuses what cannot work here before any socket opens (one line, the option).
"""

from __future__ import annotations

from kvcore.errors import InputError


def is_bind_endpoint(endpoint: str) -> bool:
    return "*" in endpoint or "::" in endpoint or endpoint.startswith(("ipc://", "inproc://"))


def offset_endpoint_port(endpoint: str | None, rank: int) -> str | None:
    """The endpoint of data-parallel rank `rank` (vLLM's `offset_endpoint_port`)."""
    if not endpoint or rank == 0:
        return endpoint
    if "inproc" in endpoint:
        return f"{endpoint}_dp{rank}"
    if "tcp" in endpoint:
        head, sep, port = endpoint.rpartition(":")
        if not sep:
            return endpoint
        base = int(port)
        return endpoint if base == 0 else f"{head}:{base + rank}"
    raise ValueError("Invalid endpoint: must contain 'inproc' or 'tcp'")


def _host_port(endpoint: str) -> tuple[str, str, str]:
    """A tcp endpoint's (host, ":" or "", port) as written (host may be ZMQ's ``SOURCE;HOST``)."""
    return endpoint[len("tcp://"):].rpartition(":")


def listener_binds(endpoint: str) -> bool:
    """Whether a subscriber binds `endpoint` (it connects otherwise). Not the publisher's rule
    mirrored: vLLM binds an ipc path and an IPv6 host (``::`` in it) for its publisher, so a
    listener binding an ipc path took it over (it heard nothing, and the publisher's other
    subscribers lost it), and one binding ``tcp://[::1]:PORT`` failed ("No such device")."""
    if not endpoint.startswith("tcp://"):
        return False
    return _host_port(endpoint)[0] in ("*", "[::]", "0.0.0.0")


def is_ipv6(endpoint: str) -> bool:
    """A tcp endpoint with a bracketed IPv6 host (``tcp://[::]:PORT``, ``tcp://[::1]:PORT``).
    A listener's sockets need ``zmq.IPV6`` for it (without it, binding ``[::]`` fails with "No
    such device" and a connect never comes up); vLLM's publisher does not set it for a host it
    is given, so kvcli's, which mirrors it, does not either."""
    return endpoint.startswith("tcp://[")


def check_endpoint(endpoint: str, field: str, *, ranks: int = 1, connects: bool = False) -> None:
    """Refuse an endpoint no subscriber could reach: not tcp:// or ipc://, a tcp endpoint
    without host:port, port 0 (subscribers must know the port), a port out of range for
    some rank's offset port, or (`connects`: this side connects to it) a dotted host that is no
    IPv4 address (a name that does not resolve yet is `unresolved_note`'s). (The replay socket
    is always bound, as vLLM binds it.)"""
    if endpoint.startswith("inproc://"):
        raise InputError(f"{endpoint!r}: inproc:// reaches only this process; use tcp:// or "
                         "ipc://", field=field)
    if endpoint.startswith("ipc://"):
        if len(endpoint) == len("ipc://"):
            raise InputError(f"{endpoint!r}: ipc:// needs a path", field=field)
        if ranks > 1:
            raise InputError(f"{endpoint!r}: replicas need tcp:// (replica K publishes on the "
                             "port + K; vLLM cannot offset an ipc:// endpoint either)",
                             field=field)
        if not connects:
            _check_ipc_bind(endpoint, field)
        return
    if not endpoint.startswith("tcp://"):
        raise InputError(f"{endpoint!r}: expected tcp://HOST:PORT (tcp://*:PORT binds) or "
                         "ipc://PATH", field=field)
    host, sep, port = _host_port(endpoint)
    if not sep or not host or not port.isdigit():
        raise InputError(f"{endpoint!r}: expected tcp://HOST:PORT (tcp://*:PORT binds)",
                         field=field)
    first = int(port)
    if first == 0:
        raise InputError(f"{endpoint!r}: port 0: give the port subscribers will use",
                         field=field)
    if first + ranks - 1 > 65535:
        what = f" (rank {ranks - 1} uses {first + ranks - 1})" if ranks > 1 else ""
        raise InputError(f"{endpoint!r}: port out of range{what}", field=field)
    if connects:
        _check_numeric_host(endpoint, host.rpartition(";")[2], field)   # (zmq's SOURCE;HOST)


def _check_ipc_bind(endpoint: str, field: str) -> None:
    """Binding ``ipc://PATH`` makes ZMQ unlink whatever is at PATH first: a trace given as the
    path was deleted (replaced by a socket, exit 0), and a second publisher on a live one's
    path took it over in silence (its subscribers then heard nothing; tcp says "address already
    in use"). So PATH must be free, or a socket no process listens on (one a run left)."""
    import os
    import socket
    import stat

    path = endpoint[len("ipc://"):]
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as err:
        raise InputError(f"{endpoint!r}: {path}: {err.strerror or err}", field=field) from None
    if not stat.S_ISSOCK(mode):
        raise InputError(f"{endpoint!r}: {path} exists and is not a socket: binding would "
                         "delete it (ZMQ unlinks the path); give a new path", field=field)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return                  # (nobody listens: a socket a finished run left, rebound)
    finally:
        probe.close()
    raise InputError(f"{endpoint!r}: another process is bound there (address already in use)",
                     field=field)


def _check_numeric_host(endpoint: str, host: str, field: str) -> None:
    """A dotted-decimal host that is no IPv4 address (``256.1.1.1``) never connects: ZMQ
    retried it for ever and a listener ended as silence, "0 batch(es)", exit 0. A name is not
    refused here: it may resolve later (a service not yet up), and ZMQ looks it up again at
    each retry (`unresolved_note`)."""
    parts = host.split(".")
    if len(parts) == 4 and all(p.isdigit() for p in parts) and any(int(p) > 255 for p in parts):
        raise InputError(f"{endpoint!r}: {host} is no IPv4 address (each number is 0 to 255)",
                         field=field)


def unresolved_note(endpoint: str) -> str | None:
    """A warning for a tcp endpoint whose host does not resolve now (ZMQ keeps trying: nothing
    arrives until it does), else None."""
    import socket

    if not endpoint.startswith("tcp://"):
        return None
    host, _, port = _host_port(endpoint)
    host = host.rpartition(";")[2]              # (zmq's SOURCE;HOST)
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        socket.getaddrinfo(name, int(port), type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        return (f"{endpoint}: host {name!r} does not resolve ({why}); ZMQ keeps trying, and "
                "nothing arrives until it does")
    return None
