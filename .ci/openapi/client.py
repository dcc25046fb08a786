"""The client openapi-python-client generates from internal/api/openapi.yaml (into gen/py/sto_client,
not committed), driven against the local stack: a transfer, its replay, its GET, the wallet's history,
a conflict, a 422, a 202 and API Gateway's own 500 and 503 (from the stub gateway.py serves). Run by
run.sh (make test-openapi-clients) with API_URL, STACK_URL (the stack's /_sim/stack) and GATEWAY_URL,
each on 127.0.0.1; exits non-zero at the first answer that is not the documented one."""

import os
import re
import sys
import time

import httpx
from sto_client import Client
from sto_client.api.history import list_transfers
from sto_client.api.transfers import create_transfer, get_transfer
from sto_client.models import (
    Classification,
    GatewayMessage,
    Problem,
    TransferHistory,
    TransferHistoryItemOperationType,
    TransferRequest,
    TransferRequestOperationType,
    TransferResult,
    TransferView,
    TransferViewStatus,
)
from sto_client.types import UNSET


def env(name: str) -> str:
    v = os.environ.get(name, "")
    check(re.match(r"^http://127\.0\.0\.1:\d+(/|$)", v) is not None, f"{name}={v!r} is not a 127.0.0.1 URL")
    return v


def check(ok: bool, why: str) -> None:
    if not ok:
        print(f"py: FAIL: {why}", file=sys.stderr)
        sys.exit(1)


def step(name: str) -> None:
    print(f"py: {name}", flush=True)


wallet: str = httpx.get(env("STACK_URL"), timeout=10).json()["wallets"][2]["account"]  # go: first, ts: second
run = f"py-{int(time.time() * 1000):x}"
api = Client(base_url=env("API_URL"), timeout=httpx.Timeout(40.0), raise_on_unexpected_status=True)


def withdraw(amount: str) -> TransferRequest:
    return TransferRequest(operation_type=TransferRequestOperationType.WITHDRAW, wallet_address=wallet, amount=amount, asset="USDC")


def problem(parsed: object, status: int, code: str) -> Problem:
    check(isinstance(parsed, Problem) and parsed.status == status and parsed.code == code, f"want a {status} {code} problem, got {parsed!r}")
    assert isinstance(parsed, Problem)
    return parsed


step("create_transfer: 200")
first = f"{run}-first"
r = create_transfer.sync_detailed(client=api, body=withdraw("0.5"), idempotency_key=first)
res = r.parsed
check(r.status_code == 200 and isinstance(res, TransferResult) and not res.replayed and res.ledger >= 1, f"POST: {r.status_code} {r.content!r}")
assert isinstance(res, TransferResult)
check("Idempotent-Replayed" not in r.headers, "a first answer says Idempotent-Replayed")
tx_hash = res.transaction_hash

step("create_transfer again, the key quoted: the replay")
r = create_transfer.sync_detailed(client=api, body=withdraw("0.50"), idempotency_key=f'"{first}";client=py')
check(r.status_code == 200 and isinstance(r.parsed, TransferResult) and r.parsed.replayed and r.parsed.transaction_hash == tx_hash, f"replay: {r.content!r}")
check(r.headers.get("Idempotent-Replayed") == "true", "the replay has no Idempotent-Replayed: true")

step("get_transfer")
view = get_transfer.sync(wallet, first, client=api)
check(isinstance(view, TransferView) and view.status == TransferViewStatus.SUCCESS and view.transaction_hash == tx_hash, f"GET: {view!r}")

step("create_transfer, same key, another amount: 409 IDEMPOTENCY_KEY_CONFLICT")
r = create_transfer.sync_detailed(client=api, body=withdraw("0.6"), idempotency_key=first)
check(problem(r.parsed, 409, "IDEMPOTENCY_KEY_CONFLICT").classification == Classification.TERMINAL, f"conflict: {r.content!r}")

step("create_transfer, a negative amount: 422 INVALID_AMOUNT")
r = create_transfer.sync_detailed(client=api, body=withdraw("-1"), idempotency_key=f"{run}-invalid")
problem(r.parsed, 422, "INVALID_AMOUNT")

step("create_transfer, Prefer: respond-async: 202, then its GET until success")
queued = f"{run}-async"
r = create_transfer.sync_detailed(client=api, body=withdraw("0.25"), idempotency_key=queued, prefer="respond-async")
check(r.status_code == 202 and isinstance(r.parsed, TransferView) and r.parsed.status == TransferViewStatus.PENDING, f"202: {r.status_code} {r.content!r}")
check(r.headers.get("Preference-Applied") == "respond-async" and r.headers.get("Location") == f"/wallets/{wallet}/transfers/{queued}", f"202 headers: {r.headers}")
for i in range(300):
    view = get_transfer.sync(wallet, queued, client=api)
    check(isinstance(view, TransferView) and view.status in (TransferViewStatus.PENDING, TransferViewStatus.SUCCESS), f"the queued transfer: {view!r}")
    assert isinstance(view, TransferView)
    if view.status == TransferViewStatus.SUCCESS:
        break
    time.sleep(0.2)
else:
    check(False, "the queued transfer is still pending")

step("list_transfers: a page of one, then the next")
page = list_transfers.sync(wallet, client=api, limit=1)
check(isinstance(page, TransferHistory) and len(page.items) == 1 and isinstance(page.next_cursor, str), f"history: {page!r}")
assert isinstance(page, TransferHistory) and isinstance(page.next_cursor, str)
item = page.items[0]
check(item.idempotency_key == queued and item.amount == "0.25" and item.asset == "USDC" and item.operation_type == TransferHistoryItemOperationType.WITHDRAW
      and item.created_at is not UNSET, f"history item: {item!r}")
page = list_transfers.sync(wallet, client=api, limit=1, cursor=page.next_cursor)
check(isinstance(page, TransferHistory) and [i.idempotency_key for i in page.items] == [first] and page.items[0].transaction_hash == tx_hash, f"history page 2: {page!r}")

gw = Client(base_url=env("GATEWAY_URL"), raise_on_unexpected_status=True)
for status, message in ((500, "Internal Server Error"), (503, "Service Unavailable")):
    step(f'API Gateway\'s own {status} {{"message"}}')
    r = create_transfer.sync_detailed(client=gw, body=withdraw("1"), idempotency_key=f"{run}-gw{status}")
    check(r.status_code == status and isinstance(r.parsed, GatewayMessage) and r.parsed.message == message, f"gateway {status}: {r.parsed!r}")
step("the service's own 503 problem, beside it")
r = create_transfer.sync_detailed(client=gw, body=withdraw("1"), idempotency_key=f"{run}-problem503")
problem(r.parsed, 503, "STORE_UNAVAILABLE")
check(r.headers.get("Retry-After") == "2", f"problem 503: {r.headers}")
step("ok")
