"""The official Python SDK (stellar-sdk, pinned in .ci/requirements.txt) against the local network
as `make run` serves it, used as a new user would: RPC and Horizon reads, friendbot, a payment, a
fee bump found by both hashes, and a transfer through the service found by its hash.
STACK_URL and CONTRACT_STACK_URL are two devstacks' GET /_sim/stack (the classic vault, the vault
contract); every URL must be on 127.0.0.1. Run by .ci/clients/run.sh (make test-clients)."""

import os
import re
import time

import requests
from stellar_sdk import Account, Asset, Keypair, Server, SorobanServer, TransactionBuilder, xdr
from stellar_sdk.exceptions import NotFoundError
from stellar_sdk.soroban_rpc import GetTransactionStatus, SendTransactionStatus


def local(url: str) -> str:
    assert re.match(r"^http://127\.0\.0\.1:\d+(/|$)", url), f"not local: {url}"
    return url


def step(name: str) -> None:
    print(f"py: {name}", flush=True)


stack = requests.get(local(os.environ["STACK_URL"]), timeout=10).json()
passphrase = stack["networkPassphrase"]
horizon_url, rpc_url = local(stack["horizonUrl"]), local(stack["rpcUrl"])
rpc = SorobanServer(rpc_url)
horizon = Server(horizon_url)

step("get_network, get_version_info, get_health")
net = rpc.get_network()
assert net.passphrase == passphrase and net.protocol_version == 26
assert net.friendbot_url.startswith(horizon_url), f"friendbotUrl {net.friendbot_url} is not on {horizon_url}"
assert rpc.get_version_info().protocol_version == 26
assert rpc.get_health().status == "healthy"

step("get_latest_ledger")
latest = rpc.get_latest_ledger()
assert xdr.LedgerHeader.from_xdr(latest.header_xdr).ledger_seq.uint32 == latest.sequence
assert xdr.LedgerCloseMeta.from_xdr(latest.metadata_xdr).v == 2  # as core 23 emits

step("friendbot (getNetwork's friendbotUrl), fetch_base_fee")
a, b = Keypair.random(), Keypair.random()
for kp in (a, b):
    r = requests.get(local(net.friendbot_url), params={"addr": kp.public_key}, timeout=10)
    assert r.ok, r.text
fee = horizon.fetch_base_fee()
assert fee == 100


def payment(source, to: str, amount: str):
    return (
        TransactionBuilder(source, passphrase, base_fee=fee)
        .append_payment_op(to, Asset.native(), amount)
        .set_timeout(60)
        .build()
    )


def wait(h: str, server=None):
    """Polls RPC for h: a ledger is shown 1-3 s after it closes (visibility lag)."""
    for _ in range(30):
        got = (server or rpc).get_transaction(h)
        if got.status != GetTransactionStatus.NOT_FOUND:
            return got
        time.sleep(0.5)
    raise AssertionError(f"{h} not found")


def horizon_find(server, h: str):
    """Reads h from Horizon, retrying while it is not shown yet (the same lag as RPC)."""
    for i in range(31):
        try:
            return server.transactions().transaction(h).call()
        except NotFoundError:
            if i == 30:
                raise
            time.sleep(0.5)


step("payment through rpc send_transaction, found by rpc and Horizon")
pay = payment(rpc.load_account(a.public_key), b.public_key, "12.5")
pay.sign(a)
sent = rpc.send_transaction(pay)
assert sent.status == SendTransactionStatus.PENDING, sent
got = wait(sent.hash)
assert got.status == GetTransactionStatus.SUCCESS
assert xdr.TransactionMeta.from_xdr(got.result_meta_xdr).v == 4  # as core 23 emits
assert horizon_find(horizon, sent.hash)["successful"] is True

step("fee bump through Horizon, found by its inner and outer hashes")
inner = payment(horizon.load_account(a.public_key), b.public_key, "1")
inner.sign(a)
bump = TransactionBuilder.build_fee_bump_transaction(b, fee * 10, inner, passphrase)
bump.sign(b)
inner_hash, outer_hash = inner.hash_hex(), bump.hash_hex()
assert horizon.submit_transaction(bump)["successful"] is True
for h in (inner_hash, outer_hash):
    t = wait(h)
    assert t.status == GetTransactionStatus.SUCCESS and t.fee_bump, f"rpc get_transaction {h}"
    assert t.transaction_hash == outer_hash  # stellar-rpc names the envelope's own (outer) hash
    assert horizon_find(horizon, h)["hash"] == h, f"Horizon by {h}"

# Horizon's synchronous submit answers from its own history (stellar-horizon txsub), so the
# ordinary pattern needs no retry: submit, read the transaction and the account back at once,
# build the next one on the sequence number Horizon shows.
step("submit, load the account, submit again through Horizon (20 payments and a fee bump)")
for i in range(20):
    tx = payment(horizon.load_account(a.public_key), b.public_key, "0.1")
    tx.sign(a)
    res = horizon.submit_transaction(tx)
    assert res["successful"] is True, f"payment {i}"
    assert horizon.transactions().transaction(res["hash"]).call()["hash"] == res["hash"], f"payment {i} read back"
    shown = horizon.load_account(a.public_key).sequence
    assert shown == tx.transaction.sequence, f"payment {i}: sequence shown {shown}, sent {tx.transaction.sequence}"
inner2 = payment(horizon.load_account(a.public_key), b.public_key, "0.1")
inner2.sign(a)
bump2 = TransactionBuilder.build_fee_bump_transaction(b, fee * 10, inner2, passphrase)
bump2.sign(b)
assert horizon.submit_transaction(bump2)["successful"] is True
for h in (inner2.hash_hex(), bump2.hash_hex()):
    assert horizon.transactions().transaction(h).call()["hash"] == h, f"fee bump read back by {h}"
assert horizon.load_account(a.public_key).sequence == inner2.transaction.sequence

# Core's queue (TransactionQueue::canAdd), with ledger closes stalled so the fee bump stays queued.
step("queue answers: the inner transaction of a queued fee bump is DUPLICATE, an older sequence number txBAD_SEQ")
faults = local(horizon_url.rstrip("/") + "/_sim/faults")
assert requests.post(faults, json={"kind": "stall"}, timeout=10).ok
try:
    acct = horizon.load_account(a.public_key)
    seq = acct.sequence
    inner3 = payment(acct, b.public_key, "0.1")
    inner3.sign(a)
    bump3 = TransactionBuilder.build_fee_bump_transaction(b, fee * 10, inner3, passphrase)
    bump3.sign(b)
    assert rpc.send_transaction(bump3).status == SendTransactionStatus.PENDING
    assert rpc.send_transaction(inner3).status == SendTransactionStatus.DUPLICATE
    older = payment(Account(a.public_key, seq - 1), b.public_key, "0.2")
    older.sign(a)
    refused = rpc.send_transaction(older)
    assert refused.status == SendTransactionStatus.ERROR, refused
    code = xdr.TransactionResult.from_xdr(refused.error_result_xdr).result.code
    assert code == xdr.TransactionResultCode.txBAD_SEQ, code
finally:
    assert requests.delete(faults, timeout=10).ok

step("get_ledgers, get_transactions")
ledgers = rpc.get_ledgers(start_ledger=got.ledger, limit=2)
assert ledgers.ledgers[0].sequence == got.ledger
entry = xdr.LedgerHeaderHistoryEntry.from_xdr(ledgers.ledgers[0].header_xdr)
assert entry.header.ledger_seq.uint32 == got.ledger and entry.hash.hash.hex() == ledgers.ledgers[0].hash
assert xdr.LedgerCloseMeta.from_xdr(ledgers.ledgers[0].metadata_xdr).v == 2
txs = rpc.get_transactions(start_ledger=got.ledger, limit=200)
hashes = {t.transaction_hash: t for t in txs.transactions}
assert sent.hash in hashes, "get_transactions lists the payment"
assert hashes[outer_hash].fee_bump, "get_transactions lists the fee bump"

step("Horizon ledgers() and its next link")
page = horizon.ledgers().order(desc=True).limit(1).call()
records = page["_embedded"]["records"]
assert len(records) == 1 and records[0]["base_fee_in_stroops"] == 100
nxt = requests.get(local(page["_links"]["next"]["href"]), timeout=10).json()
assert nxt["_embedded"]["records"][0]["sequence"] == records[0]["sequence"] - 1


def transfer(stack_url: str, operation_type: str):
    """A transfer through the service (POST /transfers), found by its hash with both APIs."""
    step(f"a {operation_type} through the service (POST /transfers on {stack_url}), found by its hash")
    st = requests.get(local(stack_url), timeout=10).json()
    r = requests.post(
        local(st["apiUrl"]) + "/transfers",
        headers={"Idempotency-Key": f"py-{operation_type}-{time.time_ns()}"},
        json={"operationType": operation_type, "walletAddress": st["wallets"][0]["account"], "amount": "1.5", "asset": "USDC"},
        timeout=60,
    )
    assert r.ok, r.text
    out = r.json()
    landed = wait(out["transactionHash"], SorobanServer(local(st["rpcUrl"])))
    assert landed.status == GetTransactionStatus.SUCCESS and landed.ledger == out["ledger"]
    found = horizon_find(Server(local(st["horizonUrl"])), out["transactionHash"])
    assert found["successful"] is True
    return xdr.TransactionMeta.from_xdr(landed.result_meta_xdr)


transfer(os.environ["STACK_URL"], "withdraw")
meta = transfer(os.environ["CONTRACT_STACK_URL"], "deposit")
assert meta.v == 4 and meta.v4.soroban_meta.return_value is not None, "the vault contract's return value"
print("py: all checks passed")
