// Verifies captured gateway webhook deliveries with the npm standardwebhooks
// package, so the signing scheme is checked by an independent implementation.
// Usage: node verify.js cases.json
// cases.json: [{"secret": "whsec_...", "headers": {...}, "body": "..."}]
// Prints one JSON array: [{"ok": true} | {"ok": false, "error": "..."}].
"use strict";
const fs = require("fs");
const { Webhook } = require("standardwebhooks");

const cases = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = cases.map((c) => {
  try {
    new Webhook(c.secret).verify(c.body, c.headers);
    return { ok: true };
  } catch (e) {
    return { ok: false, error: String(e && e.message ? e.message : e) };
  }
});
process.stdout.write(JSON.stringify(out));
