# mitmdump addon for bench/proxy.sh: the same interception the Handler proxy does, so the
# two are compared doing the same work. The stand-in in x-api-key is swapped for the real
# key, and the benchmark's host name (which no DNS knows) is pinned to 127.0.0.1, as
# handlerd's [network] resolve setting pins it. The SNI and the upstream certificate
# check stay on the name.
import os

STAND_IN = os.environ["BENCH_STAND_IN"]
REAL_KEY = os.environ["BENCH_REAL_KEY"]
PINNED_HOST = os.environ["BENCH_PINNED_HOST"]


class SwapKey:
    def server_connect(self, data):
        host, port = data.server.address
        if host == PINNED_HOST:
            data.server.address = ("127.0.0.1", port)

    def request(self, flow):
        value = flow.request.headers.get("x-api-key")
        if value is not None and STAND_IN in value:
            flow.request.headers["x-api-key"] = value.replace(STAND_IN, REAL_KEY)


addons = [SwapKey()]
