"""Nested and failing probed calls: json.dumps whose default= hook calls json.dumps again
(the inner call runs inside the outer encoder_call), and json.dumps that raises from inside
the C encoder. Prints its pid, loops on epoll until a line arrives, then makes OUTER outer
calls (each with one nested call) and RAISING failing ones.

usage: probe_nested.py OUTER RAISING
"""
import json
import os
import select
import sys

outer, raising = int(sys.argv[1]), int(sys.argv[2])


class Inner:
    pass


class Boom:
    pass


def hook(o):
    if isinstance(o, Boom):
        raise ValueError("boom")
    return json.dumps({"inner": list(range(100))})


print(os.getpid(), flush=True)
ep = select.epoll()
ep.register(sys.stdin.fileno(), select.EPOLLIN)
while not ep.poll(0.05):
    pass
sys.stdin.readline()
for _ in range(outer):
    json.dumps({"a": list(range(1000)), "b": Inner()}, default=hook)
    ep.poll(0)
for _ in range(raising):
    try:
        json.dumps({"a": Boom()}, default=hook)
    except ValueError:
        pass
    ep.poll(0)
