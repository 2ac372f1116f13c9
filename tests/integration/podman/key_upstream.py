#!/usr/bin/env python3
"""An upstream for the key tests (secrets.sh, escape.sh): logs each request's Host, path,
x-api-key and body as a JSON line, and answers with the key it got, the way a careless error
message quotes it. HTTPS (with the certificate given) and plain HTTP, each on a free
loopback port, printed as "TLS_PORT PLAIN_PORT".

  key_upstream.py LOG CERT KEY
"""
import http.server, json, ssl, sys, threading
log = open(sys.argv[1], "a", buffering=1)
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def reply(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("latin-1") if length else ""
        key = self.headers.get("x-api-key", "")
        log.write(json.dumps({"host": self.headers.get("Host"), "path": self.path, "key": key, "body": body}) + "\n")
        body = json.dumps({"error": "invalid x-api-key: " + key}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = reply
    def log_message(self, *args): pass
tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
tls.socket = context.wrap_socket(tls.socket, server_side=True)
plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(tls.server_address[1], plain.server_address[1], flush=True)
threading.Thread(target=plain.serve_forever, daemon=True).start()
tls.serve_forever()
