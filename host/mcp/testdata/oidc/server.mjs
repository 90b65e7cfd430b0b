// oidc-provider as the OAuth authorization server of the MCP end-to-end
// tests: discovery, dynamic client registration (RFC 7591), PKCE S256,
// rotating refresh tokens, resource indicators (JWT access tokens whose
// aud is the MCP server) and devInteractions login/consent pages that the
// tests drive over plain HTTP with a cookie jar.
//
// Environment: OIDC_PORT, MCP_RESOURCE (the MCP server's resource id),
// REDIRECT_URIS (comma-separated, for the pre-registered confidential
// client), ACCESS_TOKEN_TTL and REFRESH_TOKEN_TTL in seconds.
import { generateKeyPairSync } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const resource = process.env.MCP_RESOURCE;
const accessTTL = Number(process.env.ACCESS_TOKEN_TTL || 60);
const refreshTTL = Number(process.env.REFRESH_TOKEN_TTL || 3600);

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'static-client',
    client_secret: 'static-secret-0123456789abcdef',
    redirect_uris: (process.env.REDIRECT_URIS || '').split(',').filter(Boolean),
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [jwk] },
  scopes: ['openid', 'offline_access', 'mcp:tools'],
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return {
          scope: 'mcp:tools',
          audience: resource,
          accessTokenTTL: accessTTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  pkce: { required: () => true },
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: true,
  ttl: {
    AccessToken: accessTTL, RefreshToken: refreshTTL, AuthorizationCode: 60,
    Interaction: 600, Session: 600, Grant: 3600,
  },
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
});
provider.on('server_error', (_ctx, err) => console.error('server_error', err));
provider.on('grant.error', (_ctx, err) => console.error('grant.error', err.message, err.error_description));

provider.listen(port, '127.0.0.1', () => console.log(`LISTEN ${issuer}`));
