// The official JavaScript SDK (@stellar/stellar-sdk, pinned in package-lock.json) against the
// local network as `make run` serves it, used as a new user would: RPC and Horizon reads,
// friendbot, a payment, a fee bump found by both hashes, and a transfer through the service found
// by its hash. STACK_URL is the devstack's GET /_sim/stack; every URL must be on 127.0.0.1.
// Run by .ci/clients/run.sh (make test-clients).
import assert from "node:assert/strict";
import { Account, Asset, Keypair, Operation, TransactionBuilder, Horizon, rpc } from "@stellar/stellar-sdk";

const local = (u) => (assert.match(u, /^http:\/\/127\.0\.0\.1:\d+(\/|$)/, `not local: ${u}`), u);
const stack = await (await fetch(local(process.env.STACK_URL))).json();
const [horizonUrl, rpcUrl, apiUrl] = [stack.horizonUrl, stack.rpcUrl, stack.apiUrl].map(local);
const passphrase = stack.networkPassphrase;
const server = new rpc.Server(rpcUrl, { allowHttp: true });
const horizon = new Horizon.Server(horizonUrl, { allowHttp: true });
// horizonFind reads a transaction from Horizon, retrying while it is not yet shown (Horizon, like
// RPC, shows a ledger 1-3 s after it closes).
async function horizonFind(h, hash) {
  for (let i = 0; ; i++) {
    try {
      return await h.transactions().transaction(hash).call();
    } catch (e) {
      if (i >= 30 || e?.response?.status !== 404) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

const step = (name) => console.log(`js: ${name}`);

step("getNetwork, getVersionInfo, getHealth");
const net = await server.getNetwork();
assert.equal(net.passphrase, passphrase);
assert.equal(net.protocolVersion, 26);
assert.ok(net.friendbotUrl.startsWith(horizonUrl), `friendbotUrl ${net.friendbotUrl} is not on ${horizonUrl}`);
assert.equal((await server.getVersionInfo()).protocolVersion, 26);
assert.equal((await server.getHealth()).status, "healthy");

step("getLatestLedger");
const latest = await server.getLatestLedger();
assert.equal(latest.headerXdr.ledgerSeq(), latest.sequence);
assert.equal(latest.metadataXdr.switch(), 2); // LedgerCloseMeta v2, as core 23 emits

step("friendbot: rpc requestAirdrop (getNetwork's friendbotUrl) and Horizon's friendbot");
const [a, b] = [Keypair.random(), Keypair.random()];
await server.requestAirdrop(a.publicKey());
await horizon.friendbot(b.publicKey()).call();

const fee = String(await horizon.fetchBaseFee());
const payment = (from, to, amount) =>
  new TransactionBuilder(from, { fee, networkPassphrase: passphrase })
    .addOperation(Operation.payment({ destination: to, asset: Asset.native(), amount }))
    .setTimeout(60)
    .build();

step("payment through rpc sendTransaction, found by rpc and Horizon");
const pay = payment(await server.getAccount(a.publicKey()), b.publicKey(), "12.5");
pay.sign(a);
const sent = await server.sendTransaction(pay);
assert.equal(sent.status, "PENDING", JSON.stringify(sent));
const got = await server.pollTransaction(sent.hash, { attempts: 30, sleepStrategy: () => 500 });
assert.equal(got.status, rpc.Api.GetTransactionStatus.SUCCESS);
assert.equal((await horizonFind(horizon, sent.hash)).successful, true);

step("fee bump through Horizon, found by its inner and outer hashes");
const inner = payment(await horizon.loadAccount(a.publicKey()), b.publicKey(), "1");
inner.sign(a);
const bump = TransactionBuilder.buildFeeBumpTransaction(b, String(Number(fee) * 10), inner, passphrase);
bump.sign(b);
const [innerHash, outerHash] = [inner.hash().toString("hex"), bump.hash().toString("hex")];
const submitted = await horizon.submitTransaction(bump);
assert.equal(submitted.successful, true);
// Horizon's synchronous submit answers once its own history has the transaction; a client reading
// it from RPC still polls, as the SDK's pollTransaction does (another service, its own lag).
for (const h of [innerHash, outerHash]) {
  const t = await server.pollTransaction(h, { attempts: 30, sleepStrategy: () => 500 });
  assert.equal(t.status, "SUCCESS", `rpc getTransaction ${h}`);
  assert.equal(t.feeBump, true);
  assert.equal(t.envelopeXdr.switch().name, "envelopeTypeTxFeeBump");
  assert.equal((await horizonFind(horizon, h)).hash, h, `Horizon by ${h}`);
}

// Horizon's synchronous submit answers from its own history (stellar-horizon txsub), so the
// ordinary pattern needs no retry: submit, read the transaction and the account back at once,
// build the next one on the sequence number Horizon shows.
step("submit, load the account, submit again through Horizon (20 payments and a fee bump)");
for (let i = 0; i < 20; i++) {
  const tx = payment(await horizon.loadAccount(a.publicKey()), b.publicKey(), "0.1");
  tx.sign(a);
  const res = await horizon.submitTransaction(tx);
  assert.equal(res.successful, true, `payment ${i}`);
  assert.equal((await horizon.transactions().transaction(res.hash).call()).hash, res.hash, `payment ${i} read back`);
  assert.equal((await horizon.loadAccount(a.publicKey())).sequenceNumber(), tx.sequence, `payment ${i}: sequence shown`);
}
{
  const inner = payment(await horizon.loadAccount(a.publicKey()), b.publicKey(), "0.1");
  inner.sign(a);
  const bump = TransactionBuilder.buildFeeBumpTransaction(b, String(Number(fee) * 10), inner, passphrase);
  bump.sign(b);
  assert.equal((await horizon.submitTransaction(bump)).successful, true);
  for (const h of [inner.hash().toString("hex"), bump.hash().toString("hex")]) {
    assert.equal((await horizon.transactions().transaction(h).call()).hash, h, `fee bump read back by ${h}`);
  }
  assert.equal((await horizon.loadAccount(a.publicKey())).sequenceNumber(), inner.sequence);
}

// Core's queue (TransactionQueue::canAdd), with ledger closes stalled so the fee bump stays queued.
step("queue answers: the inner transaction of a queued fee bump is DUPLICATE, an older sequence number txBAD_SEQ");
const sim = (path, init) => fetch(local(new URL(path, horizonUrl).href), init);
assert.ok((await sim("/_sim/faults", { method: "POST", body: JSON.stringify({ kind: "stall" }) })).ok);
try {
  const acct = await horizon.loadAccount(a.publicKey());
  const seq = acct.sequenceNumber();
  const inner = payment(acct, b.publicKey(), "0.1");
  inner.sign(a);
  const bump = TransactionBuilder.buildFeeBumpTransaction(b, String(Number(fee) * 10), inner, passphrase);
  bump.sign(b);
  assert.equal((await server.sendTransaction(bump)).status, "PENDING");
  assert.equal((await server.sendTransaction(inner)).status, "DUPLICATE");
  const older = payment(new Account(a.publicKey(), (BigInt(seq) - 1n).toString()), b.publicKey(), "0.2");
  older.sign(a);
  const refused = await server.sendTransaction(older);
  assert.equal(refused.status, "ERROR");
  assert.equal(refused.errorResult.result().switch().name, "txBadSeq");
} finally {
  assert.ok((await sim("/_sim/faults", { method: "DELETE" })).ok);
}

// The stellar-rpc release profiles: getVersionInfo names the release; before v25.0.0
// getLatestLedger has no closeTime.
step("stellar-rpc profiles: getVersionInfo's release, getLatestLedger's closeTime");
const setProfile = async (v) =>
  assert.ok((await sim("/_sim/rpc_version", { method: "PUT", body: JSON.stringify({ rpc_version: v }) })).ok);
assert.match((await server.getVersionInfo()).version, /^\d+\.\d+\.\d+/);
await setProfile("v24");
try {
  assert.equal((await server.getVersionInfo()).version, "24.0.0");
  const raw = await (await fetch(rpcUrl, { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getLatestLedger" }) })).json();
  assert.equal(raw.result.closeTime, undefined, JSON.stringify(raw));
  assert.ok(raw.result.sequence > 0);
} finally {
  await setProfile("current");
}

step("getLedgers, getTransactions");
const ledgers = await server.getLedgers({ startLedger: got.ledger, pagination: { limit: 2 } });
assert.equal(ledgers.ledgers[0].sequence, got.ledger);
assert.equal(ledgers.ledgers[0].headerXdr.header().ledgerSeq(), got.ledger);
const txs = await server.getTransactions({ startLedger: got.ledger, pagination: { limit: 200 } });
assert.ok(txs.transactions.some((t) => t.txHash === sent.hash), "getTransactions lists the payment");
assert.ok(txs.transactions.some((t) => t.txHash === outerHash && t.feeBump), "getTransactions lists the fee bump");

step("Horizon ledgers() and its next link");
const page = await horizon.ledgers().order("desc").limit(1).call();
assert.equal(page.records.length, 1);
assert.equal(page.records[0].base_fee_in_stroops, 100);
const next = await page.next();
assert.equal(next.records[0].sequence, page.records[0].sequence - 1);

// A transfer through the service, found by its hash: a withdrawal on the classic vault (a
// fee-bumped payment from a channel account) and a deposit through the vault contract (an
// invocation, whose return value the SDK reads from TransactionMeta v4).
async function transfer(stackUrl, operationType) {
  step(`a ${operationType} through the service (POST /transfers on ${stackUrl}), found by its hash`);
  const st = await (await fetch(local(stackUrl))).json();
  const srv = new rpc.Server(local(st.rpcUrl), { allowHttp: true });
  const res = await fetch(`${local(st.apiUrl)}/transfers`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "Idempotency-Key": `js-${operationType}-${Date.now()}` },
    body: JSON.stringify({ operationType, walletAddress: st.wallets[0].account, amount: "1.5", asset: "USDC" }),
  });
  const out = await res.json();
  assert.ok(res.ok, JSON.stringify(out));
  const landed = await srv.pollTransaction(out.transactionHash, { attempts: 30, sleepStrategy: () => 500 });
  assert.equal(landed.status, "SUCCESS");
  assert.equal(landed.ledger, out.ledger);
  assert.equal(landed.resultMetaXdr.switch(), 4); // TransactionMeta v4, as core 23 emits
  const h = new Horizon.Server(local(st.horizonUrl), { allowHttp: true });
  assert.equal((await horizonFind(h, out.transactionHash)).successful, true);
  return landed;
}
await transfer(process.env.STACK_URL, "withdraw");
const deposit = await transfer(process.env.CONTRACT_STACK_URL, "deposit");
assert.ok(deposit.returnValue !== undefined, "the vault contract's return value");
console.log("js: all checks passed");
