"""A bounded HTTP load on loopback: keep-alive GETs for a fixed time."""
import socket
import time


def http_load(port, seconds, pause=0.002):
    """GET / repeatedly on one connection for `seconds`; returns the count."""
    n = 0
    deadline = time.time() + seconds
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        while time.time() < deadline:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            buf = b""
            while not buf.endswith(b"ok"):
                chunk = s.recv(4096)
                if not chunk:
                    return n
                buf += chunk
            n += 1
            time.sleep(pause)
    return n
