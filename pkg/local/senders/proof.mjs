// Signs and verifies with the senders' own npm libraries. Reads a JSON
// array of cases on stdin and prints one result per case: the signature
// for "sign", true or false for "verify" (false when the library throws).
import { createRequire } from "node:module";
import crypto from "node:crypto";
const require = createRequire(import.meta.url);
const nacl = require("tweetnacl");
const { verifyKey } = require("discord-interactions");
const { EventWebhook } = require("@sendgrid/eventwebhook");
const { Signature } = require("@hubspot/api-client");

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const cases = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const results = [];
for (const c of cases) {
  const body = Buffer.from(c.body, "base64");
  try {
    switch (`${c.sender} ${c.op}`) {
      case "discord sign": {
        const kp = nacl.sign.keyPair.fromSeed(Buffer.from(c.key, "hex"));
        const sig = nacl.sign.detached(Buffer.concat([Buffer.from(c.timestamp), body]), kp.secretKey);
        results.push(Buffer.from(sig).toString("hex"));
        break;
      }
      case "discord verify":
        results.push(await verifyKey(body, c.signature, c.timestamp, c.key));
        break;
      case "sendgrid sign": {
        const key = crypto.createPrivateKey({ key: Buffer.from(c.key, "base64"), format: "der", type: "sec1" });
        results.push(crypto.sign("sha256", Buffer.concat([Buffer.from(c.timestamp), body]), key).toString("base64"));
        break;
      }
      case "sendgrid verify": {
        const ew = new EventWebhook();
        results.push(ew.verifySignature(ew.convertPublicKeyToECDSA(c.key), body.toString("utf8"), c.signature, c.timestamp));
        break;
      }
      case "hubspot sign":
        results.push(Signature.getSignature(c.method, "v3", { clientSecret: c.key, requestBody: body.toString("utf8"), url: c.url, timestamp: c.timestamp }));
        break;
      case "hubspot verify":
        results.push(Signature.isValid({ signatureVersion: "v3", signature: c.signature, method: c.method, clientSecret: c.key, requestBody: body.toString("utf8"), url: c.url, timestamp: Number(c.timestamp) }));
        break;
      default:
        throw new Error(`unknown case ${c.sender} ${c.op}`);
    }
  } catch (err) {
    if (c.op === "sign") throw err;
    results.push(false);
  }
}
process.stdout.write(JSON.stringify(results));
