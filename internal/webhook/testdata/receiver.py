# A webhook receiver to try the local stack's signed deliveries with (README.md, "Signed webhooks"):
# python3 internal/webhook/testdata/receiver.py 8080, from the clone's root, with WEBHOOK_SECRET
# set to the secret the stack signs with. It checks each delivery with verify.py and prints the
# status it answers, the webhook-id and the event's type, key and status (or why it refused it).
import os, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verify import verify


class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        try:
            e = verify(os.environ["WEBHOOK_SECRET"], dict(self.headers), body, int(time.time()))
            code, what = 204, (e["detail-type"], e["detail"]["idempotencyKey"], e["detail"]["status"])
        except ValueError as err:
            code, what = 401, err
        print(code, self.headers["webhook-id"], what, flush=True)
        self.send_response(code)
        self.end_headers()


HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
