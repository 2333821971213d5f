// An OpenID Connect issuer for the console's browser test: panva's `oidc-provider` (a
// certified implementation, npm), with its development log-in pages (any user name and
// password are accepted), one public client for the console (authorization code + PKCE
// S256, no secret) and a fresh RSA key. Prints `idp ready <issuer>` when it listens.
//
//   IDP_PORT=9000 CONSOLE_REDIRECT=http://127.0.0.1:8080/login/callback node tests/idp.mjs

import { generateKeyPairSync, randomBytes } from "node:crypto";
import Provider from "oidc-provider";

const port = Number(process.env.IDP_PORT ?? "0");
const redirect = process.env.CONSOLE_REDIRECT ?? "";
if (!port || !redirect) {
  console.error("idp: set IDP_PORT and CONSOLE_REDIRECT");
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid: "e2e", alg: "RS256", use: "sig" };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "berth-console",
      token_endpoint_auth_method: "none",
      redirect_uris: [redirect],
      grant_types: ["authorization_code"],
      response_types: ["code"],
    },
  ],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  jwks: { keys: [jwk] },
  cookies: { keys: [randomBytes(32).toString("hex")] },
  // The console is a public client on another port of this host.
  clientBasedCORS: () => true,
});
provider.proxy = false;
provider.listen(port, "127.0.0.1", () => console.log(`idp ready ${issuer}`));
