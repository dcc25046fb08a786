"""A receiver's check of a signed settlement webhook, in Python with no dependency (README.md,
"Signed webhooks"). verify(secret, headers, raw_body, now_seconds) returns the parsed event or
raises ValueError. Run as a script by the Go tests: WEBHOOK_SECRET, WEBHOOK_NOW (Unix seconds) and
the request as JSON on stdin ({"headers":{...},"body":"<raw>"}); prints "ok" or the reason."""
import base64
import hashlib
import hmac
import json
import os
import sys

TOLERANCE_SECONDS = 5 * 60


def verify(secret, headers, raw_body, now_seconds):
    headers = {k.lower(): v for k, v in headers.items()}
    msg_id = headers.get("webhook-id")
    ts = headers.get("webhook-timestamp")
    sigs = headers.get("webhook-signature")
    if not msg_id or not ts or not sigs:
        raise ValueError("missing webhook headers")
    if not ts.isdigit():
        raise ValueError("bad timestamp")
    if abs(now_seconds - int(ts)) > TOLERANCE_SECONDS:
        raise ValueError("timestamp outside tolerance")
    key = base64.b64decode(secret.removeprefix("whsec_"))
    if len(key) < 24:
        raise ValueError("the secret is not a whsec_ secret of at least 24 bytes")
    expected = hmac.new(key, f"{msg_id}.{ts}.".encode() + raw_body, hashlib.sha256).digest()
    for s in sigs.split(" "):
        version, _, b64 = s.partition(",")
        if version != "v1" or not b64:
            continue
        if hmac.compare_digest(base64.b64decode(b64), expected):
            return json.loads(raw_body)  # then: skip it if webhook-id was processed already
    raise ValueError("no matching signature")


if __name__ == "__main__":
    req = json.load(sys.stdin)
    try:
        verify(os.environ["WEBHOOK_SECRET"], req["headers"], req["body"].encode(), int(os.environ["WEBHOOK_NOW"]))
        print("ok")
    except ValueError as e:
        print(e)
