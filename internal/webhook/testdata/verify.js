// A receiver's check of a signed settlement webhook, in Node.js with no dependency (README.md,
// "Signed webhooks"). verify(secret, headers, rawBody, nowSeconds) returns the parsed event or
// throws. Run as a script by the Go tests: WEBHOOK_SECRET, WEBHOOK_NOW (Unix seconds) and the
// request as JSON on stdin ({"headers":{...},"body":"<raw>"}); prints "ok" or the reason.
const crypto = require("crypto");

const TOLERANCE_SECONDS = 5 * 60;

function verify(secret, headers, rawBody, nowSeconds) {
  const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const id = h["webhook-id"], ts = h["webhook-timestamp"], sigs = h["webhook-signature"];
  if (!id || !ts || !sigs) throw new Error("missing webhook headers");
  if (!/^\d+$/.test(ts)) throw new Error("bad timestamp");
  if (Math.abs(nowSeconds - Number(ts)) > TOLERANCE_SECONDS) throw new Error("timestamp outside tolerance");
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  if (key.length < 24) throw new Error("the secret is not a whsec_ secret of at least 24 bytes");
  const expected = crypto.createHmac("sha256", key).update(`${id}.${ts}.${rawBody}`).digest();
  for (const s of sigs.split(" ")) {
    const [version, b64] = s.split(",");
    if (version !== "v1" || !b64) continue;
    const got = Buffer.from(b64, "base64");
    if (got.length === expected.length && crypto.timingSafeEqual(got, expected)) {
      return JSON.parse(rawBody); // then: skip it if webhook-id was processed already
    }
  }
  throw new Error("no matching signature");
}

if (require.main === module) {
  let input = "";
  process.stdin.on("data", (d) => (input += d));
  process.stdin.on("end", () => {
    const req = JSON.parse(input);
    try {
      verify(process.env.WEBHOOK_SECRET, req.headers, req.body, Number(process.env.WEBHOOK_NOW));
      console.log("ok");
    } catch (e) {
      console.log(e.message);
    }
  });
}

module.exports = { verify };
