# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""An asyncio loop whose handler calls a helper that uses requests (dist-packages) to ask
a slow local backend (another process, 60 ms an answer): 6 times, 5 ms apart, once a
line comes on stdin; prints its pid first. The culprit of those stalls is fetch_user, the
application's own code, not urllib3 or http.client."""
import asyncio
import http.server
import os
import subprocess
import sys
import time

import requests


class Slow(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(0.06)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def backend():
    srv = http.server.HTTPServer(("127.0.0.1", 0), Slow)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


def fetch_user(url):
    return requests.get(url, timeout=5).text  # @fetch_user


async def main(url):
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    left = [6]

    def handle():
        fetch_user(url)
        left[0] -= 1
        if left[0]:
            loop.call_later(0.005, handle)
        else:
            done.set_result(None)

    def go():
        loop.remove_reader(0)
        sys.stdin.readline()
        loop.call_soon(handle)

    loop.add_reader(0, go)
    print(os.getpid(), flush=True)
    await done


if __name__ == "__main__":
    if sys.argv[1:] == ["--backend"]:
        backend()
    else:
        b = subprocess.Popen([sys.executable, __file__, "--backend"], stdout=subprocess.PIPE,
                             text=True)
        try:
            port = int(b.stdout.readline())
            asyncio.run(main("http://127.0.0.1:%d/user" % port))
        finally:
            b.kill()
