"""A Tornado app on Debian's python3 whose handler calls a helper that serializes a
large object with json.dumps: every GET /report stalls the loop for tens of ms in
C code under Python frames. Prints its port, serves until killed. The e2e test
finds the lines tagged "# @name" and expects them in the stall's Python frames."""
import json

import tornado.ioloop
import tornado.web

# built once: a request pays for the serialization alone
ROWS = [{"id": i, "name": "row-%d" % i, "tags": ["a", "b", "c"], "score": i * 0.5}
        for i in range(80000)]


def render_report(rows):
    return json.dumps({"rows": rows, "count": len(rows)})  # @render_report


class ReportHandler(tornado.web.RequestHandler):
    def get(self):
        body = render_report(ROWS)  # @ReportHandler.get
        self.write(str(len(body)))


def main():
    app = tornado.web.Application([(r"/report", ReportHandler)])
    server = app.listen(0, "127.0.0.1")
    port = next(iter(server._sockets.values())).getsockname()[1]
    print(port, flush=True)
    tornado.ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
