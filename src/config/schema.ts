// The configuration file's one JSON Schema; the TypeScript types derive from it.
// Members with a default are listed as required: Ajv's useDefaults fills them in before `required` is
// checked, so a file may leave them out while the loaded config always has them.
import { Type, type Static } from '@sinclair/typebox';
import { ROUTE_IDS } from './route-ids.ts';

export const TENANT_ID_PATTERN = '^[a-z0-9][a-z0-9-]{0,62}$';
const CREDENTIAL_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$';
export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';
export const TENANT_KEY_PREFIX = 'ggk_';
export const TENANT_ID_DESCRIPTION =
  '1 to 63 lowercase letters, digits or "-", starting with a letter or digit';

export const DEFAULT_SERVER_PORT = 8080;
export const DEFAULT_ADMIN_PORT = 9090;
export const DEFAULT_SIMULATOR_PORT = 8090;
export const DEFAULT_BODY_LIMIT_BYTES = 10_485_760;
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
/** Failed authentications one client address may make per window before it is refused outright. */
export const DEFAULT_AUTH_FAILURE_LIMIT = 20;
export const DEFAULT_AUTH_FAILURE_WINDOW_SECONDS = 60;
export const DEFAULT_UPSTREAM_BASE_URL = 'https://api.maxai.lol';
export const DEFAULT_UPSTREAM_TIMEOUT_MS = 60_000;
// Concurrency towards the upstream: exchanges at once (one per connection), and how long a request may
// wait for one before it is answered 503 overloaded.
export const DEFAULT_UPSTREAM_CONNECTIONS = 256;
export const DEFAULT_UPSTREAM_QUEUE_TIMEOUT_MS = 500;
// Results may carry base64 images: 20 samples of a few MB each fit comfortably.
export const DEFAULT_UPSTREAM_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
// Longer than the idle timeout of common balancers (nginx and cloud load balancers: 60 s), so that the
// balancer, not the gateway, closes an idle kept-alive connection: it then never sends on a closed one.
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 72_000;
// A connection ends (cleanly, with Connection: close) after this many requests, so that the traffic of
// long-lived balancer connections spreads over replicas added since.
export const DEFAULT_MAX_REQUESTS_PER_SOCKET = 1_000;
// Load shedding (contract section 9): past either threshold new requests get 503 overloaded.
export const DEFAULT_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS = 200;
export const DEFAULT_OVERLOAD_MAX_HEAP_USED_RATIO = 0.9;
export const DEFAULT_OVERLOAD_RETRY_AFTER_SECONDS = 1;
export const DEFAULT_SIMULATOR_QUEUED_MS = 1_500;
export const DEFAULT_SIMULATOR_PROCESSING_MS = 2_500;
export const DEFAULT_SIMULATOR_REQUESTS_PER_MINUTE = 600;
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379/0';
export const DEFAULT_REDIS_KEY_PREFIX = 'gengate:';
export const DEFAULT_STORE_COMMAND_TIMEOUT_MS = 100;
/** How long the gateway remembers who owns a request id: long past any client's last poll of it. */
export const DEFAULT_OWNERSHIP_TTL_SECONDS = 7 * 24 * 3600;
// Webhooks (docs/webhooks.md): an attempt's bound, the retry schedule (at least a day by default), and
// how long a rotated secret keeps signing beside its successor.
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
export const DEFAULT_WEBHOOK_FIRST_DELAY_MS = 5_000;
export const DEFAULT_WEBHOOK_MAX_DELAY_MS = 3_600_000;
export const DEFAULT_WEBHOOK_GIVE_UP_AFTER_SECONDS = 86_400;
export const DEFAULT_WEBHOOK_CONCURRENCY_PER_DESTINATION = 4;
export const DEFAULT_WEBHOOK_SECRET_OVERLAP_SECONDS = 3_600;
export const WEBHOOK_EVENTS = ['job.completed', 'job.failed', 'job.cancelled', 'job.expired'] as const;
const MAX_LIMIT_WINDOW_SECONDS = 86_400;
const MAX_UPSTREAM_SAMPLES = 20;
const MAX_UPSTREAM_STEPS = 50;

// Custom Ajv formats, registered by the loader.
export const DATE_TIME_FORMAT = 'date-time';
export const HTTP_BASE_URL_FORMAT = 'http-base-url';

const object = <T extends Parameters<typeof Type.Object>[0]>(properties: T, defaultValue?: object) =>
  Type.Object(properties, {
    additionalProperties: false,
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
  });
const oneOf = <const T extends readonly string[]>(values: T, defaultValue?: T[number]) =>
  Type.Unsafe<T[number]>({
    type: 'string',
    enum: values,
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
  });
const port = (defaultValue: number) => Type.Integer({ minimum: 0, maximum: 65_535, default: defaultValue });
const positiveMs = (defaultValue: number) => Type.Integer({ minimum: 1, default: defaultValue });
const host = (defaultValue: string) => Type.String({ minLength: 1, default: defaultValue });

const ServerSchema = object(
  {
    host: host('0.0.0.0'),
    port: port(DEFAULT_SERVER_PORT),
    bodyLimitBytes: Type.Integer({ minimum: 1, default: DEFAULT_BODY_LIMIT_BYTES }),
    // Passed to Fastify as is: whether to trust X-Forwarded-*, or from which addresses. No hop count:
    // Fastify 5.12.1 and later ignore one (it cannot tell a proxy from a client that forges hops).
    trustProxy: Type.Union(
      [
        Type.Boolean(),
        Type.String({ minLength: 1 }),
        Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
      ],
      { default: false, description: 'true or false, an address or CIDR, or a list of them' },
    ),
    requestTimeoutMs: positiveMs(DEFAULT_REQUEST_TIMEOUT_MS),
    keepAliveTimeoutMs: positiveMs(DEFAULT_KEEP_ALIVE_TIMEOUT_MS),
    maxRequestsPerSocket: Type.Integer({
      minimum: 0,
      default: DEFAULT_MAX_REQUESTS_PER_SOCKET,
      description: '0 for no limit',
    }),
    overload: object(
      {
        maxEventLoopDelayMs: Type.Integer({
          minimum: 0,
          default: DEFAULT_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS,
          description: '0 turns the check off',
        }),
        maxHeapUsedRatio: Type.Number({
          exclusiveMinimum: 0,
          maximum: 1,
          default: DEFAULT_OVERLOAD_MAX_HEAP_USED_RATIO,
          description: "a share of V8's heap size limit (1 turns the check off)",
        }),
        retryAfterSeconds: Type.Integer({ minimum: 1, default: DEFAULT_OVERLOAD_RETRY_AFTER_SECONDS }),
      },
      {},
    ),
    authenticationFailures: object(
      {
        limit: Type.Integer({ minimum: 1, default: DEFAULT_AUTH_FAILURE_LIMIT }),
        windowSeconds: Type.Integer({
          minimum: 1,
          maximum: 86_400,
          default: DEFAULT_AUTH_FAILURE_WINDOW_SECONDS,
        }),
      },
      {},
    ),
  },
  {},
);

const AdminSchema = object({ host: host('0.0.0.0'), port: port(DEFAULT_ADMIN_PORT) }, {});

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const LoggingSchema = object(
  { level: oneOf(LOG_LEVELS, 'info'), prompts: Type.Boolean({ default: false }) },
  {},
);

const CredentialSchema = Type.Union(
  [
    object({ env: Type.String({ pattern: ENV_NAME_PATTERN, description: 'an environment variable name' }) }),
    object({ file: Type.String({ minLength: 1 }) }),
  ],
  { description: 'exactly one of { env: VARIABLE_NAME } or { file: PATH }' },
);

const UpstreamSchema = object(
  {
    baseUrl: Type.String({
      format: HTTP_BASE_URL_FORMAT,
      default: DEFAULT_UPSTREAM_BASE_URL,
      description: 'an http or https URL without a path, query or user name (the gateway appends /v1/...)',
    }),
    timeoutMs: positiveMs(DEFAULT_UPSTREAM_TIMEOUT_MS),
    connections: Type.Integer({ minimum: 1, default: DEFAULT_UPSTREAM_CONNECTIONS }),
    queueTimeoutMs: positiveMs(DEFAULT_UPSTREAM_QUEUE_TIMEOUT_MS),
    maxResponseBytes: Type.Integer({ minimum: 1, default: DEFAULT_UPSTREAM_MAX_RESPONSE_BYTES }),
    credentials: Type.Record(Type.String({ pattern: CREDENTIAL_NAME_PATTERN }), CredentialSchema, {
      additionalProperties: false,
      default: {},
      description: '1 to 63 letters, digits, "-" or "_"',
    }),
  },
  {},
);

const SimulatorSchema = object(
  {
    enabled: Type.Boolean({ default: false }),
    host: host('127.0.0.1'),
    port: port(DEFAULT_SIMULATOR_PORT),
    queuedMs: Type.Integer({ minimum: 0, default: DEFAULT_SIMULATOR_QUEUED_MS }),
    processingMs: Type.Integer({ minimum: 0, default: DEFAULT_SIMULATOR_PROCESSING_MS }),
    requestsPerMinute: Type.Integer({ minimum: 1, default: DEFAULT_SIMULATOR_REQUESTS_PER_MINUTE }),
  },
  {},
);

const StoreSchema = object(
  {
    kind: oneOf(['redis', 'memory'], 'redis'),
    redis: object(
      {
        url: Type.String({
          pattern: '^rediss?://',
          default: DEFAULT_REDIS_URL,
          description: 'a redis:// or rediss:// URL',
        }),
        nodes: Type.Optional(
          Type.Array(object({ host: Type.String({ minLength: 1 }), port: port(6379) }, {}), {
            minItems: 1,
            description: 'Redis Cluster seed nodes; when given, url is not used',
          }),
        ),
        keyPrefix: Type.String({ default: DEFAULT_REDIS_KEY_PREFIX }),
        commandTimeoutMs: positiveMs(DEFAULT_STORE_COMMAND_TIMEOUT_MS),
      },
      {},
    ),
    failMode: oneOf(['open', 'closed'], 'open'),
    replicas: Type.Integer({
      minimum: 1,
      default: 1,
      description:
        'gateway replicas sharing the store: while it fails open, each admits 1/replicas of a limit',
    }),
    ownershipTtlSeconds: Type.Integer({
      minimum: 1,
      default: DEFAULT_OWNERSHIP_TTL_SECONDS,
      description: 'how long a request id stays tied to the tenant that submitted it',
    }),
  },
  {},
);

const DestinationListSchema = Type.Array(Type.String({ minLength: 1 }), {
  default: [],
  description: 'host globs ("*.svc.cluster.local") and CIDRs or addresses ("10.0.0.0/8")',
});

const WebhooksSchema = object(
  {
    allowedDestinations: DestinationListSchema,
    allowHttp: DestinationListSchema,
    timeoutMs: positiveMs(DEFAULT_WEBHOOK_TIMEOUT_MS),
    retry: object(
      {
        firstDelayMs: positiveMs(DEFAULT_WEBHOOK_FIRST_DELAY_MS),
        maxDelayMs: positiveMs(DEFAULT_WEBHOOK_MAX_DELAY_MS),
        giveUpAfterSeconds: Type.Integer({ minimum: 1, default: DEFAULT_WEBHOOK_GIVE_UP_AFTER_SECONDS }),
      },
      {},
    ),
    concurrencyPerDestination: Type.Integer({
      minimum: 1,
      default: DEFAULT_WEBHOOK_CONCURRENCY_PER_DESTINATION,
      description: 'attempts at once to one host and port, per replica',
    }),
    secretOverlapSeconds: Type.Integer({
      minimum: 0,
      default: DEFAULT_WEBHOOK_SECRET_OVERLAP_SECONDS,
      description: 'how long the secrets a secret file held before its change keep signing too',
    }),
  },
  {},
);

const TenantWebhookSchema = object({
  id: Type.String({ pattern: TENANT_ID_PATTERN, description: TENANT_ID_DESCRIPTION }),
  url: Type.String({ pattern: '^https?://[^\\s]+$', description: 'an http or https URL' }),
  secret: CredentialSchema,
  events: Type.Array(oneOf(WEBHOOK_EVENTS), { minItems: 1, uniqueItems: true }),
});

const TenantKeySchema = object({
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: '64 lowercase hexadecimal characters' }),
  prefix: Type.String({
    pattern: `^${TENANT_KEY_PREFIX}[A-Za-z0-9]{4}$`,
    description: `the key's first 8 characters ("${TENANT_KEY_PREFIX}" and 4 letters or digits)`,
  }),
  label: Type.Optional(Type.String({ minLength: 1 })),
  expiresAt: Type.Optional(
    Type.String({
      format: DATE_TIME_FORMAT,
      description: 'an RFC 3339 date and time, e.g. 2027-06-30T00:00:00Z',
    }),
  ),
});

const PolicySchema = object(
  {
    mode: oneOf(['enforce', 'shadow'], 'enforce'),
    safetyLevel: Type.Optional(
      object({ minimum: oneOf(['low', 'medium', 'high']), onViolation: oneOf(['raise', 'reject'], 'raise') }),
    ),
    samples: Type.Optional(
      object({
        maximum: Type.Integer({ minimum: 1, maximum: MAX_UPSTREAM_SAMPLES }),
        onViolation: oneOf(['clamp', 'reject'], 'clamp'),
      }),
    ),
    steps: Type.Optional(
      object({
        maximum: Type.Integer({ minimum: 1, maximum: MAX_UPSTREAM_STEPS }),
        onViolation: oneOf(['clamp', 'reject'], 'clamp'),
      }),
    ),
    models: Type.Optional(
      object({
        allow: Type.Optional(Type.Array(Type.String())),
        deny: Type.Optional(Type.Array(Type.String())),
        allowServiceDefault: Type.Boolean({ default: true }),
      }),
    ),
    scanResults: Type.Optional(object({ require: Type.Boolean() })),
    outputTypes: Type.Optional(
      Type.Array(oneOf(['url', 'base64', 'dataURI']), { minItems: 1, uniqueItems: true }),
    ),
    video: Type.Optional(
      object({
        enabled: Type.Boolean({ default: true }),
        maxDurationSeconds: Type.Optional(Type.Integer({ minimum: 1 })),
      }),
    ),
  },
  {},
);

const LimitSchema = object({
  id: Type.String({ pattern: TENANT_ID_PATTERN, description: TENANT_ID_DESCRIPTION }),
  routes: Type.Array(oneOf([...ROUTE_IDS, '*']), { minItems: 1, uniqueItems: true }),
  cost: oneOf(['requests', 'samples', 'videoSeconds']),
  limit: Type.Integer({ minimum: 1 }),
  windowSeconds: Type.Integer({ minimum: 1, maximum: MAX_LIMIT_WINDOW_SECONDS }),
});

const TenantSchema = object({
  id: Type.String({ pattern: TENANT_ID_PATTERN, description: TENANT_ID_DESCRIPTION }),
  credential: Type.String({ minLength: 1 }),
  keys: Type.Array(TenantKeySchema),
  account: oneOf(['gateway', 'passthrough'], 'gateway'),
  policy: PolicySchema,
  limits: Type.Array(LimitSchema, { default: [] }),
  webhooks: Type.Array(TenantWebhookSchema, { default: [] }),
});

export const ConfigSchema = object({
  server: ServerSchema,
  admin: AdminSchema,
  logging: LoggingSchema,
  upstream: UpstreamSchema,
  simulator: SimulatorSchema,
  store: StoreSchema,
  webhooks: WebhooksSchema,
  tenants: Type.Array(TenantSchema, { default: [] }),
});

export type GatewayConfig = Static<typeof ConfigSchema>;
export type TenantConfig = GatewayConfig['tenants'][number];
export type TenantPolicy = TenantConfig['policy'];
export type TenantLimit = TenantConfig['limits'][number];
export type WebhooksConfig = GatewayConfig['webhooks'];
export type TenantWebhook = TenantConfig['webhooks'][number];
