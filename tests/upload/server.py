#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The upload tests' HTTP server on loopback: behaves as the request path says and logs every request.
"""usage: server.py LOGDIR

Listens on 127.0.0.1 on an ephemeral port and prints the port on the first line of stdout.
Exits when its parent process does. Each POST's behaviour comes from its path (TAG is free text
that keeps the counters of different tests apart; counters are per path):

  /ok/TAG                   200
  /fail/N/TAG               500 for the first N requests, then 200
  /status/CODE/TAG          always CODE, with a one-line body
  /slow/MS/TAG              answers 200 after MS milliseconds
  /retry-after/N/SECS/TAG   429 with Retry-After: SECS for the first N requests, then 200
  /unavailable/SECS/TAG     always 503 with Retry-After: SECS
  /drop/N/TAG               the first N requests: reads half the body, then closes the connection
  /no-gzip/TAG              415 to a Content-Encoding it does not take (any), else 200

Every request is logged as LOGDIR/<seq>.req (lines "path P", "status S" with S a code or
"dropped", "time T" in seconds of a monotonic clock at arrival, "encoding E", "header Name: value"
for each header) and LOGDIR/<seq>.body: the body as received, gunzipped when it came with
Content-Encoding: gzip (a body that does not gunzip is answered 400).
"""
import gzip
import http.server
import os
import socket
import sys
import threading
import time

LOGDIR = sys.argv[1] if len(sys.argv) == 2 else sys.exit(__doc__)
lock = threading.Lock()
seq = [0]
counts = {}


def log(path, status, arrived, headers, body):
    with lock:
        seq[0] += 1
        n = seq[0]
    base = os.path.join(LOGDIR, "%06d" % n)
    with open(base + ".body", "wb") as f:
        f.write(body)
    lines = ["path " + path, "status " + str(status), "time %.6f" % arrived,
             "encoding " + headers.get("Content-Encoding", "identity")]
    lines += ["header %s: %s" % (k, v) for k, v in headers.items()]
    # The .req file last, and by rename: a reader never sees a half-written entry.
    with open(base + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.rename(base + ".tmp", base + ".req")


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", extra=()):
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up (a timeout test)

    def do_POST(self):
        arrived = time.monotonic()
        parts = self.path.strip("/").split("/")
        with lock:
            counts[self.path] = counts.get(self.path, 0) + 1
            nth = counts[self.path]
        length = int(self.headers.get("Content-Length", "0"))
        kind = parts[0]
        if kind == "drop" and nth <= int(parts[1]):
            body = self.rfile.read(length // 2)
            log(self.path, "dropped", arrived, self.headers, body)
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        body = self.rfile.read(length)
        encoding = self.headers.get("Content-Encoding")
        if kind == "no-gzip" and encoding:
            log(self.path, 415, arrived, self.headers, body)
            return self.answer(415, b"unsupported content encoding\n")
        if encoding == "gzip":
            try:
                body = gzip.decompress(body)
            except OSError:
                log(self.path, 400, arrived, self.headers, body)
                return self.answer(400, b"body does not gunzip\n")
        status, extra = 200, ()
        if kind == "fail" and nth <= int(parts[1]):
            status = 500
        elif kind == "status":
            status = int(parts[1])
        elif kind == "retry-after" and nth <= int(parts[1]):
            status, extra = 429, (("Retry-After", parts[2]),)
        elif kind == "unavailable":
            status, extra = 503, (("Retry-After", parts[1]),)
        log(self.path, status, arrived, self.headers, body)
        if kind == "slow":
            time.sleep(int(parts[1]) / 1000.0)
        self.answer(status, b"status %d from the test server\n" % status, extra)


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
