// `helm test`: run by node in the gengate image itself (no other image to pull or trust). Passes when the
// release is ready behind its metrics Service and its gateway Service answers an unauthenticated request
// as gengate does: 401 missing_api_key in the service's envelope, with WWW-Authenticate: Bearer.
const { GENGATE_ADMIN_URL: adminUrl, GENGATE_GATEWAY_URL: gatewayUrl } = process.env;

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function main() {
  const ready = await fetch(`${adminUrl}/readyz`);
  check(ready.status === 200, `${adminUrl}/readyz answered ${ready.status}, not 200`);

  const refused = await fetch(`${gatewayUrl}/v1/account/usage`);
  const body = await refused.json();
  check(refused.status === 401, `${gatewayUrl}/v1/account/usage answered ${refused.status}, not 401`);
  check(refused.headers.get('www-authenticate') === 'Bearer', 'the 401 has no WWW-Authenticate: Bearer');
  check(
    body.status === 401 && body.error?.code === 'missing_api_key' && body.error?.type === 'authentication_error',
    `the 401 is not gengate's envelope: ${JSON.stringify(body)}`,
  );
  console.log(`ok: ${adminUrl}/readyz is ready; ${gatewayUrl} refuses a request without a key (401 missing_api_key)`);
}

main().catch((error) => {
  console.error(`helm test failed: ${error.message}`);
  process.exit(1);
});
