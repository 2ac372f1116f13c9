#!/usr/bin/env python3
"""OpenAI's sign-in for a ChatGPT login, faked for end-to-end tests (the model provider's
side, the only thing we fake): the device-code flow that `codex login --device-auth` runs,
and the token refresh Codex does later.

  POST /api/accounts/deviceauth/usercode {client_id}     -> a device_auth_id and a user code
  POST /api/accounts/deviceauth/token {device_auth_id, user_code}
                                                          -> 403 until the code is entered,
                                                             then an authorization code
  POST /codex/device  user_code=CODE (a form)             -> what the user does in a browser
  POST /oauth/token   grant_type=authorization_code|refresh_token (a form)
                                                          -> id, access and refresh tokens

The tokens are JWTs whose claims name a ChatGPT account (Codex reads them; nothing checks a
signature). Each access token is new and random, so a test can tell which one reached the
model server. Every request is logged as one JSON line: path, the form's or body's field
names, the grant, and the tokens issued, so a test can check what Codex asked for and what
it was given.

Usage: fake_openai_signin.py --log LOG [--tls CERT KEY] [--port N] [--account ID]
Prints the port it listens on (on 127.0.0.1), then serves until killed.
"""
import argparse
import base64
import hashlib
import http.server
import json
import secrets
import ssl
import sys
import threading
import time
import urllib.parse

args = None
lock = threading.RLock()
# device_auth_id -> {"user_code", "client_id", "entered", "verifier"}
devices = {}
# authorization code -> {"client_id", "verifier"}
codes = {}
refresh_tokens = set()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(claims):
    header = b64url(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    # A signature segment of random bytes: Codex wants three parts, and checks none.
    return ".".join([header, b64url(json.dumps(claims).encode()), b64url(secrets.token_bytes(16))])


def tokens():
    now = int(time.time())
    auth = {"chatgpt_account_id": args.account, "chatgpt_plan_type": "plus", "chatgpt_user_id": "user-handler-test"}
    identity = {"email": "tester@example.com", "exp": now + 3600, "iat": now,
                "https://api.openai.com/auth": auth}
    access = {"exp": now + 3600, "iat": now, "jti": secrets.token_hex(16),
              "https://api.openai.com/auth": auth}
    refresh = "rt_" + secrets.token_hex(24)
    refresh_tokens.add(refresh)
    return {"id_token": jwt(identity), "access_token": jwt(access), "refresh_token": refresh,
            "token_type": "Bearer", "expires_in": 3600}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, payload, entry):
        entry.update({"path": self.path.split("?", 1)[0], "status": status, "host": self.headers.get("Host")})
        with lock, open(args.log, "a") as log:
            log.write(json.dumps(entry) + "\n")
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def fields(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if "application/json" in (self.headers.get("Content-Type") or ""):
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                return None
            return body if isinstance(body, dict) else None
        return {key: values[0] for key, values in urllib.parse.parse_qs(raw.decode(errors="replace")).items()}

    def do_POST(self):
        path = self.path.split("?", 1)[0]
        body = self.fields()
        entry = {"fields": sorted(body) if body is not None else None}
        if body is None:
            return self.answer(400, {"error": "invalid_request"}, entry)
        with lock:
            if path == "/api/accounts/deviceauth/usercode":
                if not body.get("client_id"):
                    return self.answer(400, {"error": "client_id is missing"}, entry)
                device = "deviceauth_" + secrets.token_hex(8)
                # Letters and digits that read unambiguously, as OpenAI's codes do.
                user_code = "-".join("".join(secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(4))
                                     for _ in range(2))
                devices[device] = {"user_code": user_code, "client_id": body["client_id"], "entered": False}
                entry.update({"client_id": body["client_id"], "user_code": user_code})
                return self.answer(200, {"device_auth_id": device, "user_code": user_code, "interval": "1"}, entry)
            if path == "/api/accounts/deviceauth/token":
                device = devices.get(body.get("device_auth_id"))
                if not device or device["user_code"] != body.get("user_code"):
                    return self.answer(400, {"error": "unknown device code"}, entry)
                if not device["entered"]:
                    return self.answer(403, {"error": "authorization_pending"}, entry)
                verifier = b64url(secrets.token_bytes(32))
                challenge = b64url(hashlib.sha256(verifier.encode()).digest())
                code = "ac_" + secrets.token_hex(16)
                codes[code] = {"client_id": device["client_id"], "verifier": verifier}
                del devices[body["device_auth_id"]]
                return self.answer(200, {"authorization_code": code, "code_challenge": challenge,
                                         "code_verifier": verifier}, entry)
            if path == "/codex/device":
                code = (body.get("user_code") or "").strip().upper()
                for device in devices.values():
                    if device["user_code"] == code:
                        device["entered"] = True
                        entry["user_code"] = code
                        return self.answer(200, {"signed_in": True}, entry)
                return self.answer(404, {"error": "no such code"}, entry)
            if path == "/oauth/token":
                grant = body.get("grant_type")
                entry["grant_type"] = grant
                if grant == "authorization_code":
                    issued = codes.pop(body.get("code"), None)
                    if not issued or issued["verifier"] != body.get("code_verifier") \
                            or issued["client_id"] != body.get("client_id"):
                        return self.answer(400, {"error": "invalid_grant"}, entry)
                elif grant == "refresh_token":
                    if body.get("refresh_token") not in refresh_tokens:
                        return self.answer(401, {"error": "invalid_grant"}, entry)
                    refresh_tokens.discard(body.get("refresh_token"))
                else:
                    return self.answer(400, {"error": "unsupported_grant_type"}, entry)
                issued = tokens()
                entry.update({"access_token": issued["access_token"], "refresh_token": issued["refresh_token"]})
                return self.answer(200, issued, entry)
        return self.answer(404, {"error": "not found"}, entry)

    def do_GET(self):
        self.answer(404, {"error": "not found"}, {})

    def log_message(self, *unused):
        pass


def main():
    global args
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--account", default="acct-handler-test", help="the ChatGPT account the tokens name")
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*args.tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
