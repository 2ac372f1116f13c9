#!/usr/bin/env python3
"""A plain-HTTP upstream on the host's loopback for the podman and page tests.

Every GET gets BODY and a newline ("{path}" in BODY becomes the request's path), after
DELAY seconds: a server across a network answers late, and on the loopback a request could
otherwise end before the shim had looked at its connection (trace.sh). Prints "port N"
once it listens, for session_env.sh's start_upstream and dev_env.sh."""
import argparse
import http.server
import time

parser = argparse.ArgumentParser()
parser.add_argument("--body", default="upstream")
parser.add_argument("--delay", type=float, default=0)
options = parser.parse_args()


class Upstream(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if options.delay:
            time.sleep(options.delay)
        body = (options.body.replace("{path}", self.path) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
print("port", server.server_address[1], flush=True)
server.serve_forever()
