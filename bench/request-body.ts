// The one request every target receives: a realistic image submission of about 300 bytes. It is written
// as text, not built with JSON.stringify, so the 19-digit seed keeps every digit. It carries no
// requestId: a repeated one would turn every request after the first into an idempotent replay.
export const SUBMISSION_PATH = '/v1/images/generations';

export const SUBMISSION_BODY =
  '{"model":"vendor@studio-xl","safetyLevel":"high","scanResults":true,' +
  '"input":{"positivePrompt":"a lighthouse on a cliff at dusk, oil painting, warm light",' +
  '"negativePrompt":"blurry, low quality"},"outputQuality":90,"outputType":"url","samples":1,' +
  '"CFGScale":7.5,"steps":25,"seed":9223372036854775807,"scheduler":"euler",' +
  '"dimensions":{"width":1024,"height":1024}}';

/** What the static upstream answers, and so what every target must answer, byte for byte. */
export const SUBMISSION_RESPONSE =
  '{"status":200,"data":{"requestId":"3f0c8a52-6b1d-4e2a-9c47-5d8e1f2a7b90"}}';

/** The one tenant key the least gateway (bench/least-gateway.ts) knows. */
export const LEAST_GATEWAY_KEY = 'ggk_least_gateway_key';

/** Where the benchmark tenant's completion webhook points: the static upstream accepts it with 204. */
export const WEBHOOK_PATH = '/bench-webhook';
