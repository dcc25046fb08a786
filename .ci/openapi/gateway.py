"""A stand-in for API Gateway's own answers, which the local stack (a net/http server, no API Gateway)
never gives: 500 {"message": "Internal Server Error"} and 503 {"message": "Service Unavailable"} as
application/json (the bodies AWS documents for an integration that failed or did not answer), and beside
them a 503 problem as the service sends it. The answer is chosen by the Idempotency-Key header or the
path's last segment: ...gw500, ...gw503 or ...problem503. Serves 127.0.0.1 on the port given as the
one argument, until killed. Used by run.sh (make test-openapi-clients)."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROBLEM = {
    "type": "tag:stellar-transfer-orchestrator,2026:problem:store-unavailable",
    "title": "Store unavailable",
    "status": 503,
    "detail": "the stand-in's problem",
    "code": "STORE_UNAVAILABLE",
    "classification": "retryable",
    "retryAfterMs": 1500,
}


class Gateway(BaseHTTPRequestHandler):
    def answer(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        key = self.headers.get("Idempotency-Key") or self.path.rsplit("/", 1)[-1]
        headers = {}
        if key.rstrip('"').endswith("problem503"):
            status, ctype, body = 503, "application/problem+json", PROBLEM
            headers = {"Retry-After": "2", "X-Trace-Id": "stand-in"}
        elif key.rstrip('"').endswith("gw503"):
            status, ctype, body = 503, "application/json", {"message": "Service Unavailable"}
        else:
            status, ctype, body = 500, "application/json", {"message": "Internal Server Error"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("apigw-requestid", "stand-in")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = answer

    def log_message(self, format: str, *args: object) -> None:
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Gateway).serve_forever()
