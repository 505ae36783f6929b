// Verifies forwards with the default call of each official npm Standard
// Webhooks library: new Webhook(secret).verify(body, headers), the body as
// the UTF-8 string a receiver reads. Reads {"secret", "deliveries":
// [{"headers": {name: value}, "body": base64}]} on stdin; prints, for each
// delivery, the error each library threw ("" when verify returned): its
// name and message, or only the name for a JSON SyntaxError, whose message
// quotes the body.
import { Webhook as StandardWebhook } from "standardwebhooks";
import svix from "svix";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { secret, deliveries } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const libraries = { standardwebhooks: StandardWebhook, svix: svix.Webhook };
const results = deliveries.map(({ headers, body }) => {
  const payload = Buffer.from(body, "base64").toString("utf8");
  const result = {};
  for (const [name, Webhook] of Object.entries(libraries)) {
    try {
      new Webhook(secret).verify(payload, headers);
      result[name] = "";
    } catch (err) {
      result[name] = err instanceof SyntaxError ? `${err.name} (the payload is not JSON)` : `${err.name}: ${err.message}`;
    }
  }
  return result;
});
process.stdout.write(JSON.stringify(results));
