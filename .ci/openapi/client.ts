// The client openapi-typescript and openapi-fetch make of internal/api/openapi.yaml (the types
// generated into gen/ts/schema.ts, not committed), type-checked by tsc and driven against the
// local stack: a transfer, its replay, its GET, the wallet's history, a conflict, a 422, a 202 and
// API Gateway's own 500 and 503 (from the stub gateway.py serves). Run by run.sh
// (make test-openapi-clients) with API_URL, STACK_URL (the stack's /_sim/stack) and GATEWAY_URL,
// each on 127.0.0.1; exits non-zero at the first answer that is not the documented one.
import createClient from "openapi-fetch";
import type { components, paths } from "./gen/ts/schema.js";

type Problem = components["schemas"]["Problem"];
type GatewayMessage = components["schemas"]["GatewayMessage"];
type TransferRequest = components["schemas"]["TransferRequest"];

function env(name: string): string {
  const v = process.env[name] ?? "";
  if (!/^http:\/\/127\.0\.0\.1:\d+(\/|$)/.test(v)) fail(`${name}=${JSON.stringify(v)} is not a 127.0.0.1 URL`);
  return v;
}
function fail(why: string): never {
  console.error(`ts: FAIL: ${why}`);
  process.exit(1);
}
function check(ok: boolean, why: () => string): asserts ok {
  if (!ok) fail(why());
}
const step = (name: string) => console.log(`ts: ${name}`);
// The union members of a 500 or 503 body, told apart by their members as the document says.
const isProblem = (b: Problem | GatewayMessage | undefined): b is Problem => b !== undefined && "code" in b;
const isGateway = (b: Problem | GatewayMessage | undefined): b is GatewayMessage => b !== undefined && "message" in b;

const stack = (await (await fetch(env("STACK_URL"))).json()) as { wallets: { account: string }[] };
const wallet = stack.wallets[1]?.account ?? fail("GET /_sim/stack: no second wallet"); // go uses the first, py the third
const run = `ts-${Date.now().toString(36)}`;
const api = createClient<paths>({ baseUrl: env("API_URL") });
const withdraw = (amount: string): TransferRequest => ({ operationType: "withdraw", walletAddress: wallet, amount, asset: "USDC" });
const post = (key: string, body: TransferRequest, prefer?: string) =>
  api.POST("/transfers", { params: { header: { "Idempotency-Key": key, ...(prefer ? { Prefer: prefer } : {}) } }, body });

step("createTransfer: 200");
const first = `${run}-first`;
let r = await post(first, withdraw("0.5"));
check(r.response.status === 200 && r.data !== undefined && "replayed" in r.data && !r.data.replayed, () => `POST: ${r.response.status} ${JSON.stringify(r.error ?? r.data)}`);
check(r.response.headers.get("Idempotent-Replayed") === null, () => "a first answer says Idempotent-Replayed");
const hash = r.data.transactionHash;

step("createTransfer again, the key quoted: the replay");
r = await post(`"${first}";client=ts`, withdraw("0.50"));
check(r.response.status === 200 && r.data !== undefined && "replayed" in r.data && r.data.replayed && r.data.transactionHash === hash, () => `replay: ${JSON.stringify(r.data ?? r.error)}`);
check(r.response.headers.get("Idempotent-Replayed") === "true", () => "the replay has no Idempotent-Replayed: true");

step("getTransfer");
const get = (key: string) => api.GET("/wallets/{walletAddress}/transfers/{idempotencyKey}", { params: { path: { walletAddress: wallet, idempotencyKey: key } } });
let g = await get(first);
check(g.data?.status === "success" && g.data.transactionHash === hash, () => `GET: ${g.response.status} ${JSON.stringify(g.data ?? g.error)}`);

step("createTransfer, same key, another amount: 409 IDEMPOTENCY_KEY_CONFLICT");
r = await post(first, withdraw("0.6"));
check(r.response.status === 409 && isProblem(r.error) && r.error.code === "IDEMPOTENCY_KEY_CONFLICT" && r.error.classification === "terminal", () => `conflict: ${JSON.stringify(r.error)}`);

step("createTransfer, a negative amount: 422 INVALID_AMOUNT");
r = await post(`${run}-invalid`, withdraw("-1"));
check(r.response.status === 422 && isProblem(r.error) && r.error.code === "INVALID_AMOUNT" && r.error.status === 422, () => `422: ${JSON.stringify(r.error)}`);

step("createTransfer, Prefer: respond-async: 202, then its GET until success");
const queued = `${run}-async`;
r = await post(queued, withdraw("0.25"), "respond-async");
check(r.response.status === 202 && r.data !== undefined && "status" in r.data && r.data.status === "pending", () => `202: ${r.response.status} ${JSON.stringify(r.data ?? r.error)}`);
check(r.response.headers.get("Preference-Applied") === "respond-async" && r.response.headers.get("Location") === `/wallets/${wallet}/transfers/${queued}`,
  () => `202 headers: ${[...r.response.headers].join(" ")}`);
for (let i = 0; ; i++) {
  g = await get(queued);
  if (g.data?.status === "success") break;
  check(g.data?.status === "pending" && i < 300, () => `the queued transfer: ${g.response.status} ${JSON.stringify(g.data ?? g.error)}`);
  await new Promise((resolve) => setTimeout(resolve, 200));
}

step("listTransfers: a page of one, then the next");
const list = (cursor?: string) =>
  api.GET("/wallets/{walletAddress}/transfers", { params: { path: { walletAddress: wallet }, query: { limit: 1, ...(cursor ? { cursor } : {}) } } });
let h = await list();
const item = h.data?.items[0];
check(h.data?.items.length === 1 && item?.idempotencyKey === queued && item.amount === "0.25" && item.asset === "USDC" && item.operationType === "withdraw" && h.data.nextCursor !== undefined,
  () => `history: ${JSON.stringify(h.data ?? h.error)}`);
h = await list(h.data.nextCursor);
check(h.data?.items.length === 1 && h.data.items[0]?.idempotencyKey === first && h.data.items[0].transactionHash === hash, () => `history page 2: ${JSON.stringify(h.data ?? h.error)}`);

const gw = createClient<paths>({ baseUrl: env("GATEWAY_URL") });
for (const [status, message] of [[500, "Internal Server Error"], [503, "Service Unavailable"]] as const) {
  step(`API Gateway's own ${status} {"message"}`);
  const e = await gw.POST("/transfers", { params: { header: { "Idempotency-Key": `${run}-gw${status}` } }, body: withdraw("1") });
  check(e.response.status === status && isGateway(e.error) && e.error.message === message && !isProblem(e.error), () => `gateway ${status}: ${JSON.stringify(e.error)}`);
}
step("the service's own 503 problem, beside it");
const p = await gw.POST("/transfers", { params: { header: { "Idempotency-Key": `${run}-problem503` } }, body: withdraw("1") });
check(p.response.status === 503 && isProblem(p.error) && p.error.code === "STORE_UNAVAILABLE" && p.response.headers.get("Retry-After") === "2", () => `problem 503: ${JSON.stringify(p.error)}`);
step("ok");
