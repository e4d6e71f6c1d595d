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

const DEFAULT_SERVER_PORT = 8080;
const DEFAULT_ADMIN_PORT = 9090;
const DEFAULT_SIMULATOR_PORT = 8090;
const DEFAULT_BODY_LIMIT_BYTES = 10_485_760;
const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
/** Failed authentications one client address may make per window before it is refused outright. */
const DEFAULT_AUTH_FAILURE_LIMIT = 20;
const DEFAULT_AUTH_FAILURE_WINDOW_SECONDS = 60;
const DEFAULT_UPSTREAM_BASE_URL = 'https://api.maxai.lol';
export const DEFAULT_UPSTREAM_TIMEOUT_MS = 60_000;
// Concurrency towards the upstream: exchanges at once (one per connection), and how long a request may
// wait for one before it is answered 503 overloaded.
export const DEFAULT_UPSTREAM_CONNECTIONS = 256;
export const DEFAULT_UPSTREAM_QUEUE_TIMEOUT_MS = 500;
// One tenant may hold at most this share of the upstream connections, so others always find some.
const DEFAULT_UPSTREAM_MAX_TENANT_SHARE = 0.5;
// Results may carry base64 images: 20 samples of a few MB each fit comfortably.
export const DEFAULT_UPSTREAM_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
// Longer than the idle timeout of common balancers (nginx and cloud load balancers: 60 s), so that the
// balancer, not the gateway, closes an idle kept-alive connection: it then never sends on a closed one.
const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 72_000;
// A connection ends (cleanly, with Connection: close) after this many requests, so that the traffic of
// long-lived balancer connections spreads over replicas added since.
const DEFAULT_MAX_REQUESTS_PER_SOCKET = 1_000;
// Open connections at once, beyond which new ones are closed as soon as accepted: far above what a
// replica serves (a balancer keeps a few hundred), far below the descriptors a container gets.
const DEFAULT_MAX_CONNECTIONS = 10_000;
// Connections the kernel may hold for the gateway before it accepts them (Node's default is 511): past it
// Linux drops new connections' SYNs and their clients wait seconds to retry, where a queued connection is
// accepted within a turn of the loop and answered, a fast 503 when it waited too long. Linux caps it at
// net.core.somaxconn (4096 by default since 5.4).
const DEFAULT_LISTEN_BACKLOG = 4_096;
// The admin port serves a scraper or two and the probes.
export const DEFAULT_ADMIN_MAX_CONNECTIONS = 64;
// How long a whole answer may take to reach the kernel once written: a client that does not read it is
// cut and the answer freed. Time enough for tens of MB over a slow link.
const DEFAULT_SEND_TIMEOUT_MS = 30_000;
// How long a drain lets requests in flight finish after SIGTERM (docs/reliability.md): at least as long
// as most generation calls take; what it cuts is counted in gengate_drain_aborted_requests_total.
const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
// The bytes held for exchanges at once: request bodies and upstream answers being read, answers being
// written (src/upstream/bytes-in-flight.ts). Room for one answer of upstream.maxResponseBytes or nine
// bodies of server.bodyLimitBytes, and within the chart's 512 MiB memory limit, below its shedding at 0.85,
// with the process's own ~155 MiB and the transient copies of each (docs/deploy.md, "Memory and
// connection bounds"): 128 MiB sat at that edge, and 80 unread 10 MiB creates tipped a replica into
// shedding.
export const DEFAULT_MAX_BYTES_IN_FLIGHT = 96 * 1024 * 1024;
// Load shedding (docs/reliability.md, "Overload"): past either threshold new requests get 503 overloaded.
const DEFAULT_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS = 200;
const DEFAULT_OVERLOAD_MAX_HEAP_USED_RATIO = 0.9;
export const DEFAULT_OVERLOAD_RETRY_AFTER_SECONDS = 1;
// The resident set past which new requests are shed: this share of the container's memory limit, so
// that a replica refuses work before the kernel kills it for memory.
const DEFAULT_OVERLOAD_MAX_RSS_RATIO = 0.85;
// A request that already waited this long before the gateway looked at it is shed: served, it would reach
// its client well past a second.
const DEFAULT_OVERLOAD_MAX_QUEUE_WAIT_MS = 250;
const DEFAULT_SIMULATOR_QUEUED_MS = 1_500;
const DEFAULT_SIMULATOR_PROCESSING_MS = 2_500;
const DEFAULT_SIMULATOR_REQUESTS_PER_MINUTE = 600;
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379/0';
const DEFAULT_REDIS_KEY_PREFIX = 'gengate:';
const DEFAULT_STORE_COMMAND_TIMEOUT_MS = 100;
/** How long the gateway remembers who owns a request id: long past any client's last poll of it. */
const DEFAULT_OWNERSHIP_TTL_SECONDS = 7 * 24 * 3600;
// Webhooks (docs/webhooks.md): an attempt's bound, the retry schedule (at least a day by default), and
// how long a rotated secret keeps signing beside its successor.
const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
const DEFAULT_WEBHOOK_FIRST_DELAY_MS = 5_000;
const DEFAULT_WEBHOOK_MAX_DELAY_MS = 3_600_000;
const DEFAULT_WEBHOOK_GIVE_UP_AFTER_SECONDS = 86_400;
const DEFAULT_WEBHOOK_CONCURRENCY_PER_DESTINATION = 4;
const DEFAULT_WEBHOOK_SECRET_OVERLAP_SECONDS = 3_600;
export const WEBHOOK_EVENTS = ['job.completed', 'job.failed', 'job.cancelled', 'job.expired'] as const;
// The job tracker (docs/budgets.md): a lease long enough for one round of polls, the service's own
// lifetime of a record, and a share of the account's rate limit (DEFAULT_SIMULATOR_REQUESTS_PER_MINUTE).
export const DEFAULT_JOB_LEASE_MS = 30_000;
export const DEFAULT_JOB_MAX_AGE_SECONDS = 86_400;
const DEFAULT_JOB_MAX_POLLS_PER_SECOND_PER_CREDENTIAL = 5;
const DEFAULT_JOB_FIRST_POLL_MS = 1_000;
const DEFAULT_JOB_MAX_POLL_INTERVAL_MS = 30_000;
// The service's published video prices (docs/budgets.md).
const DEFAULT_VIDEO_USD_PER_SECOND = { '480p': 0.0062, '720p': 0.014, '1080p': 0.031 } as const;
const MAX_LIMIT_WINDOW_SECONDS = 86_400;
const MAX_UPSTREAM_SAMPLES = 20;
const MAX_UPSTREAM_STEPS = 50;

// Custom Ajv formats, registered by the loader.
export const DATE_TIME_FORMAT = 'date-time';
export const HTTP_BASE_URL_FORMAT = 'http-base-url';
/** What Fastify's trustProxy takes as a string: addresses, CIDRs and proxy-addr's named ranges. */
export const PROXY_ADDRESSES_FORMAT = 'proxy-addresses';

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
/** A section whose members all have defaults: the file may leave it out. */
const section = <T extends Parameters<typeof Type.Object>[0]>(properties: T) => object(properties, {});
const port = (defaultValue: number) => Type.Integer({ minimum: 0, maximum: 65_535, default: defaultValue });
/** An integer of at least `minimum`, `defaultValue` when left out. */
const atLeast = (minimum: number, defaultValue: number, description?: string) =>
  Type.Integer({ minimum, default: defaultValue, ...(description === undefined ? {} : { description }) });
const positiveMs = (defaultValue: number) => atLeast(1, defaultValue);
/** A share above 0 and at most 1. */
const share = (defaultValue: number, description: string) =>
  Type.Number({ exclusiveMinimum: 0, maximum: 1, default: defaultValue, description });
const host = (defaultValue: string) => Type.String({ minLength: 1, default: defaultValue });
const id = () => Type.String({ pattern: TENANT_ID_PATTERN, description: TENANT_ID_DESCRIPTION });
/** A policy rule capping a request's value at `maximum`, clamped by default. */
const cap = (largest: number) =>
  Type.Optional(
    object({
      maximum: Type.Integer({ minimum: 1, maximum: largest }),
      onViolation: oneOf(['clamp', 'reject'], 'clamp'),
    }),
  );

const ServerSchema = section({
  host: host('0.0.0.0'),
  port: port(DEFAULT_SERVER_PORT),
  bodyLimitBytes: atLeast(1, DEFAULT_BODY_LIMIT_BYTES),
  // Passed to Fastify as is: whether to trust X-Forwarded-*, or from which addresses. No hop count:
  // Fastify 5.12.1 and later ignore one (it cannot tell a proxy from a client that forges hops).
  trustProxy: Type.Union(
    [
      Type.Boolean(),
      Type.String({ minLength: 1, format: PROXY_ADDRESSES_FORMAT }),
      Type.Array(Type.String({ minLength: 1, format: PROXY_ADDRESSES_FORMAT }), { minItems: 1 }),
    ],
    { default: false, description: 'true or false, an address or CIDR, or a list of them' },
  ),
  requestTimeoutMs: positiveMs(DEFAULT_REQUEST_TIMEOUT_MS),
  keepAliveTimeoutMs: positiveMs(DEFAULT_KEEP_ALIVE_TIMEOUT_MS),
  drainTimeoutMs: positiveMs(DEFAULT_DRAIN_TIMEOUT_MS),
  maxConnections: atLeast(1, DEFAULT_MAX_CONNECTIONS),
  listenBacklog: atLeast(1, DEFAULT_LISTEN_BACKLOG),
  sendTimeoutMs: positiveMs(DEFAULT_SEND_TIMEOUT_MS),
  maxBytesInFlight: atLeast(1, DEFAULT_MAX_BYTES_IN_FLIGHT),
  maxRequestsPerSocket: atLeast(0, DEFAULT_MAX_REQUESTS_PER_SOCKET, '0 for no limit'),
  overload: section({
    maxEventLoopDelayMs: atLeast(0, DEFAULT_OVERLOAD_MAX_EVENT_LOOP_DELAY_MS, '0 turns the check off'),
    maxHeapUsedRatio: share(
      DEFAULT_OVERLOAD_MAX_HEAP_USED_RATIO,
      "a share of V8's heap size limit (1 turns the check off)",
    ),
    retryAfterSeconds: atLeast(1, DEFAULT_OVERLOAD_RETRY_AFTER_SECONDS),
    maxRssRatio: share(
      DEFAULT_OVERLOAD_MAX_RSS_RATIO,
      "a share of the container's memory limit (1, or no limit known, turns the check off)",
    ),
    maxRssBytes: atLeast(0, 0, 'the resident set in bytes past which requests are shed; 0 takes maxRssRatio'),
    maxQueueWaitMs: atLeast(0, DEFAULT_OVERLOAD_MAX_QUEUE_WAIT_MS, '0 turns the check off'),
  }),
  authenticationFailures: section({
    limit: atLeast(1, DEFAULT_AUTH_FAILURE_LIMIT),
    windowSeconds: Type.Integer({
      minimum: 1,
      maximum: 86_400,
      default: DEFAULT_AUTH_FAILURE_WINDOW_SECONDS,
    }),
  }),
});

const AdminSchema = section({
  host: host('0.0.0.0'),
  port: port(DEFAULT_ADMIN_PORT),
  maxConnections: atLeast(1, DEFAULT_ADMIN_MAX_CONNECTIONS),
});

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const LoggingSchema = section({
  level: oneOf(LOG_LEVELS, 'info'),
  prompts: Type.Boolean({ default: false }),
});

const maxJobsInFlight = Type.Optional(Type.Integer({ minimum: 1 }));
const CredentialSchema = Type.Union(
  [
    object({
      env: Type.String({ pattern: ENV_NAME_PATTERN, description: 'an environment variable name' }),
      maxJobsInFlight,
    }),
    object({ file: Type.String({ minLength: 1 }), maxJobsInFlight }),
  ],
  { description: 'exactly one of { env: VARIABLE_NAME } or { file: PATH }' },
);

const UpstreamSchema = section({
  baseUrl: Type.String({
    format: HTTP_BASE_URL_FORMAT,
    default: DEFAULT_UPSTREAM_BASE_URL,
    description: 'an http or https URL without a path, query or user name (the gateway appends /v1/...)',
  }),
  timeoutMs: positiveMs(DEFAULT_UPSTREAM_TIMEOUT_MS),
  connections: atLeast(1, DEFAULT_UPSTREAM_CONNECTIONS),
  queueTimeoutMs: positiveMs(DEFAULT_UPSTREAM_QUEUE_TIMEOUT_MS),
  maxTenantShare: share(
    DEFAULT_UPSTREAM_MAX_TENANT_SHARE,
    'the share of upstream.connections one tenant may hold at once',
  ),
  maxResponseBytes: atLeast(1, DEFAULT_UPSTREAM_MAX_RESPONSE_BYTES),
  credentials: Type.Record(Type.String({ pattern: CREDENTIAL_NAME_PATTERN }), CredentialSchema, {
    additionalProperties: false,
    default: {},
    description: '1 to 63 letters, digits, "-" or "_"',
  }),
});

const SimulatorSchema = section({
  enabled: Type.Boolean({ default: false }),
  host: host('127.0.0.1'),
  port: port(DEFAULT_SIMULATOR_PORT),
  queuedMs: atLeast(0, DEFAULT_SIMULATOR_QUEUED_MS),
  processingMs: atLeast(0, DEFAULT_SIMULATOR_PROCESSING_MS),
  requestsPerMinute: atLeast(1, DEFAULT_SIMULATOR_REQUESTS_PER_MINUTE),
});

const StoreSchema = section({
  kind: oneOf(['redis', 'memory'], 'redis'),
  redis: section({
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
    username: Type.Optional(Type.String({ minLength: 1, description: 'an ACL user, with passwordFile' })),
    // A file, not a value: the chart mounts it from a Secret, so the password stays out of the ConfigMap.
    passwordFile: Type.Optional(
      Type.String({
        pattern: '^/',
        description: 'an absolute path to a file holding the password (a Cluster, or a URL without one)',
      }),
    ),
    tls: Type.Optional(
      object({
        caFile: Type.Optional(
          Type.String({
            pattern: '^/',
            description: "an absolute path to the CA certificates (PEM) that signed the server's",
          }),
        ),
        serverName: Type.Optional(
          Type.String({ minLength: 1, description: "the name the server's certificate must hold" }),
        ),
      }),
    ),
  }),
  failMode: oneOf(['open', 'closed'], 'open'),
  replicas: atLeast(
    1,
    1,
    'gateway replicas sharing the store: while it fails open, each admits 1/replicas of a limit',
  ),
  ownershipTtlSeconds: atLeast(
    1,
    DEFAULT_OWNERSHIP_TTL_SECONDS,
    'how long a request id stays tied to the tenant that submitted it',
  ),
});

const DestinationListSchema = Type.Array(Type.String({ minLength: 1 }), {
  default: [],
  description: 'host globs ("*.svc.cluster.local") and CIDRs or addresses ("10.0.0.0/8")',
});

const WebhooksSchema = section({
  allowedDestinations: DestinationListSchema,
  allowHttp: DestinationListSchema,
  timeoutMs: positiveMs(DEFAULT_WEBHOOK_TIMEOUT_MS),
  retry: section({
    firstDelayMs: positiveMs(DEFAULT_WEBHOOK_FIRST_DELAY_MS),
    maxDelayMs: positiveMs(DEFAULT_WEBHOOK_MAX_DELAY_MS),
    giveUpAfterSeconds: atLeast(1, DEFAULT_WEBHOOK_GIVE_UP_AFTER_SECONDS),
  }),
  concurrencyPerDestination: atLeast(
    1,
    DEFAULT_WEBHOOK_CONCURRENCY_PER_DESTINATION,
    'attempts at once to one host and port, per replica',
  ),
  secretOverlapSeconds: atLeast(
    0,
    DEFAULT_WEBHOOK_SECRET_OVERLAP_SECONDS,
    'how long the secrets a secret file held before its change keep signing too',
  ),
});

const usd = (defaultValue?: number) =>
  Type.Number({ minimum: 0, ...(defaultValue === undefined ? {} : { default: defaultValue }) });

const PricingSchema = section({
  images: Type.Array(object({ model: Type.String(), usdPerSample: usd() }), { default: [] }),
  videoUsdPerSecond: section({
    '480p': usd(DEFAULT_VIDEO_USD_PER_SECOND['480p']),
    '720p': usd(DEFAULT_VIDEO_USD_PER_SECOND['720p']),
    '1080p': usd(DEFAULT_VIDEO_USD_PER_SECOND['1080p']),
  }),
});

const TenantWebhookSchema = object({
  id: id(),
  // A URL's scheme is case-insensitive (RFC 3986, section 3.1): `HTTPS://` is an https URL.
  url: Type.String({ pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$', description: 'an http or https URL' }),
  secret: CredentialSchema,
  events: Type.Array(oneOf(WEBHOOK_EVENTS), { minItems: 1, uniqueItems: true }),
});
const JobsSchema = section({
  leaseMs: positiveMs(DEFAULT_JOB_LEASE_MS),
  maxAgeSeconds: atLeast(1, DEFAULT_JOB_MAX_AGE_SECONDS),
  maxPollsPerSecondPerCredential: atLeast(1, DEFAULT_JOB_MAX_POLLS_PER_SECOND_PER_CREDENTIAL),
  firstPollMs: positiveMs(DEFAULT_JOB_FIRST_POLL_MS),
  maxPollIntervalMs: positiveMs(DEFAULT_JOB_MAX_POLL_INTERVAL_MS),
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

const PolicySchema = section({
  mode: oneOf(['enforce', 'shadow'], 'enforce'),
  safetyLevel: Type.Optional(
    object({ minimum: oneOf(['low', 'medium', 'high']), onViolation: oneOf(['raise', 'reject'], 'raise') }),
  ),
  samples: cap(MAX_UPSTREAM_SAMPLES),
  steps: cap(MAX_UPSTREAM_STEPS),
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
});

const LimitSchema = object({
  id: id(),
  routes: Type.Array(oneOf([...ROUTE_IDS, '*']), { minItems: 1, uniqueItems: true }),
  cost: oneOf(['requests', 'samples', 'videoSeconds']),
  limit: Type.Integer({ minimum: 1 }),
  windowSeconds: Type.Integer({ minimum: 1, maximum: MAX_LIMIT_WINDOW_SECONDS }),
});

const TenantSchema = object({
  id: id(),
  credential: Type.String({ minLength: 1 }),
  keys: Type.Array(TenantKeySchema),
  account: oneOf(['gateway', 'passthrough'], 'gateway'),
  policy: PolicySchema,
  limits: Type.Array(LimitSchema, { default: [] }),
  webhooks: Type.Array(TenantWebhookSchema, { default: [] }),
  budget: Type.Optional(
    Type.Object(
      { dailyUsd: Type.Optional(usd()), monthlyUsd: Type.Optional(usd()) },
      { additionalProperties: false, minProperties: 1 },
    ),
  ),
  jobs: Type.Optional(object({ maxInFlight: Type.Integer({ minimum: 1 }) })),
});

export const ConfigSchema = object({
  server: ServerSchema,
  admin: AdminSchema,
  logging: LoggingSchema,
  upstream: UpstreamSchema,
  simulator: SimulatorSchema,
  store: StoreSchema,
  pricing: PricingSchema,
  jobs: JobsSchema,
  webhooks: WebhooksSchema,
  tenants: Type.Array(TenantSchema, { default: [] }),
});

export type GatewayConfig = Static<typeof ConfigSchema>;
export type TenantConfig = GatewayConfig['tenants'][number];
export type TenantPolicy = TenantConfig['policy'];
export type TenantLimit = TenantConfig['limits'][number];
export type PricingConfig = GatewayConfig['pricing'];
export type JobsConfig = GatewayConfig['jobs'];

/** What docs/configuration.md says of an option; its type, range and default come from the schema. */
export interface OptionDoc {
  text: string;
  /** The type in words, where the schema's needs them. */
  type?: string;
  /** The default in words, where the schema has none to show (an optional rule). */
  default?: string;
  /** Said after the default (its meaning in other units). */
  defaultNote?: string;
}

/** Every option's description, in the order of the reference (scripts/config-reference.ts). */
export const CONFIG_OPTION_DOCS: Readonly<Record<string, OptionDoc>> = {
  'server.host': { text: 'address the gateway listens on.' },
  'server.port': { text: 'gateway port.' },
  'server.bodyLimitBytes': { text: 'largest POST body; beyond it `413 payload_too_large`.' },
  'server.trustProxy': {
    type: '`false`, `true`, an address or CIDR (or several, comma-separated), or a list of them',
    text: "which peers may set `X-Forwarded-*`. A hop count is not offered: Fastify 5.12.1 and later ignore it, since it cannot tell a proxy from a client that forges hops. Addresses are IPv4 or IPv6, with `/bits` (or an IPv4 `/netmask`), or the named ranges `loopback`, `linklocal`, `uniquelocal`; anything else is a configuration problem. The client address it yields is the request log line's `clientAddress`.",
  },
  'server.requestTimeoutMs': {
    text: 'time to receive one request, head and body; past it `408 request_timeout` and the connection closed ([HTTP edge](#the-http-edge-timeouts-and-limits)).',
  },
  'server.keepAliveTimeoutMs': {
    text: 'how long an idle kept-alive client connection stays open; keep it above the idle timeout of the balancer in front (nginx and cloud balancers: 60 s) so the balancer closes idle connections first and never sends on one the gateway is closing.',
  },
  'server.drainTimeoutMs': {
    text: 'after SIGTERM or SIGINT, how long requests in flight may finish; past it what is left is cut (counted in `gengate_drain_aborted_requests_total`) and the process exits 1 ([deploy](deploy.md#sizing-the-drain)). Read at start-up only.',
  },
  'server.maxRequestsPerSocket': {
    text: 'requests served on one connection before its answer carries `Connection: close` (0: no limit), so long-lived balancer connections spread over replicas added since.',
  },
  'server.overload.maxEventLoopDelayMs': {
    text: 'mean event-loop delay (sampled every 250 ms) past which new requests get `503 overloaded` with `Retry-After`, and `/readyz` answers 503 ([reliability](reliability.md)); a 250 ms interval in which the loop never turned counts as past it. 0 turns the check off.',
  },
  'server.overload.maxHeapUsedRatio': {
    text: "share of V8's heap size limit past which new requests get `503 overloaded` (1 turns the check off).",
  },
  'server.overload.retryAfterSeconds': { text: '`Retry-After` of `503 overloaded`.' },
  'server.overload.maxRssRatio': {
    text: "share of the container's memory limit (the cgroup's, as `process.constrainedMemory()` reads it) past which the resident set sheds new requests with `503 overloaded` and `/readyz` answers 503; off when no limit is known, or at 1.",
  },
  'server.overload.maxRssBytes': {
    text: 'the same bound in bytes, which takes precedence when above 0 (for a process without a container limit).',
  },
  'server.overload.maxQueueWaitMs': {
    text: "how long a request may have waited before the gateway reads its head (in the kernel's accept queue, or behind a busy event loop) and still be served; past it `503 overloaded` with `Retry-After` at once, its body not read, and `/readyz` answers 503 for the next `retryAfterSeconds` ([reliability](reliability.md#overload)). 0 turns the check off.",
  },
  'server.listenBacklog': {
    text: "connections the kernel queues for the gateway before it accepts them (Node's default: 511); Linux caps it at `net.core.somaxconn`. Past it new connections are dropped and their clients retry after a second or more, where a queued one is answered, with a fast `503 overloaded` when it waited past `maxQueueWaitMs` ([reliability](reliability.md#overload)). Read at start-up only.",
  },
  'server.maxConnections': {
    text: 'open client connections at once; a new one beyond it is closed as soon as accepted (`gengate_connections_refused_total{server="gateway"}`).',
  },
  'server.sendTimeoutMs': {
    text: 'once an answer is written, the time it may take to leave; a client that does not read it has its connection cut (`gengate_send_timeouts_total`), so unread answers cannot pile up in memory.',
  },
  'server.maxBytesInFlight': {
    text: 'bytes held for exchanges at once, summed over the process: request bodies being read (counted by their `Content-Length`, or `bodyLimitBytes` without one), upstream answers being read, and answers a client has not read yet (`gengate_bytes_in_flight`). A request body that would go past it is refused before it is read, and an upstream answer that would go past it is cut; either request gets `503 overloaded` with `Retry-After` (`gengate_load_shed_total{reason="bytes_in_flight"}`). See [deploy](deploy.md#memory-and-connection-bounds) for how it fits the memory limit.',
  },
  'server.authenticationFailures.limit': {
    text: 'wrong or expired keys one client address may send per window; past it, its further failures get `429 too_many_authentication_failures` instead of 401 (valid keys still pass; see docs/rate-limits.md).',
  },
  'server.authenticationFailures.windowSeconds': { text: 'that window.' },
  'admin.host': { text: 'address of the admin server (`/metrics`, `/healthz`, `/readyz`).' },
  'admin.port': { text: 'admin port.' },
  'admin.maxConnections': {
    text: 'open admin connections at once; beyond it new ones are closed as soon as accepted (`gengate_connections_refused_total{server="admin"}`). The admin server also cuts a request that takes more than 5 s to arrive (408), and renders `/metrics` at most once a second, however many scrape it (a scrape sees values at most about a second old).',
  },
  'logging.level': { text: 'log level; the `LOG_LEVEL` variable overrides it.' },
  'logging.prompts': { text: "true puts a create's prompts on its request log line ([Logging](#logging))." },
  'upstream.baseUrl': {
    type: 'http(s) URL, no path, query or user name',
    text: 'the service; gengate appends `/v1/..`.',
  },
  'upstream.timeoutMs': { text: 'bound for one upstream exchange; beyond it `504 upstream_timeout`.' },
  'upstream.connections': {
    text: 'upstream exchanges at once (one connection each); more requests wait for a free one.',
  },
  'upstream.maxTenantShare': {
    text: 'the share of `upstream.connections` one tenant may hold at once; its further requests wait for one of its own exchanges to end (and get `503 overloaded` after `queueTimeoutMs`), so a tenant whose requests are slow never leaves the others without a connection.',
  },
  'upstream.queueTimeoutMs': {
    text: 'how long a request may wait for a free upstream connection; beyond it `503 overloaded` (nothing was sent: safe to retry elsewhere).',
  },
  'upstream.maxResponseBytes': {
    defaultNote: '(64 MiB)',
    text: 'largest upstream response read; a larger one is cut off and answered `502 upstream_unavailable`.',
  },
  'upstream.credentials': {
    type: 'map of name → `{ env: VARIABLE }` or `{ file: PATH }`, each with an optional `maxJobsInFlight`',
    text: "named upstream tokens (see below); names are 1–63 letters, digits, `-` or `_`. `maxJobsInFlight`: the account's own cap on unfinished jobs, shared by every tenant on it (`429 too_many_jobs_in_flight` beyond it).",
  },
  'simulator.enabled': { text: 'start the built-in upstream simulator (demo and tests only).' },
  'simulator.host': { text: 'simulator address.' },
  'simulator.port': { text: 'simulator port.' },
  'simulator.queuedMs': { text: 'how long a simulated job stays queued.' },
  'simulator.processingMs': { text: 'how long a simulated job then runs.' },
  'simulator.requestsPerMinute': { text: "the simulated account's rate limit." },
  'store.kind': { text: 'where limits and request ownership live; `memory` is for a single replica only.' },
  'store.redis.url': { type: '`redis://` or `rediss://` URL', text: 'Redis server (`REDIS_URL` overrides).' },
  'store.redis.nodes': {
    type: 'list of `{ host, port }`',
    text: 'Redis Cluster seed nodes; when given, `url` is not used.',
  },
  'store.redis.keyPrefix': { text: 'prefix of every key gengate writes.' },
  'store.redis.commandTimeoutMs': { text: 'a store slower than this counts as unavailable.' },
  'store.redis.username': { text: "the ACL user of `passwordFile`'s password." },
  'store.redis.passwordFile': {
    type: 'absolute path',
    text: 'a file holding the Redis password (a Kubernetes Secret mounted as a file), for a Redis Cluster or a URL without a password (a password in the URL wins). Read once at start; `check-config` refuses a file that cannot be read or is empty.',
  },
  'store.redis.tls': {
    type: '`{ caFile, serverName }`',
    text: "TLS to the single Redis or to every Cluster node (a `rediss://` URL turns TLS on too). `caFile` (absolute path): the CA certificates (PEM) that signed the server's, for a private CA (default: the CAs Node.js trusts); `serverName`: the name the server's certificate must hold, when it is not the host connected to.",
  },
  'store.failMode': {
    text: 'when the store cannot answer: serve with per-replica limits, or `503 store_unavailable`.',
  },
  'store.replicas': {
    text: 'how many gateway replicas share the store; while it fails open, each replica admits `1/replicas` of every limit, so an outage does not multiply limits.',
  },
  'store.ownershipTtlSeconds': {
    defaultNote: '(7 days)',
    text: 'how long a request id stays tied to the tenant that submitted it (see [ownership.md](ownership.md)).',
  },
  'webhooks.allowedDestinations': {
    type: 'list of host globs and CIDRs or addresses',
    text: 'where completion webhooks may go ([webhooks.md](webhooks.md#security)); loopback and private addresses only through a listed CIDR; metadata, link-local, unspecified, broadcast and multicast addresses never.',
  },
  'webhooks.allowHttp': {
    type: 'list of host globs and CIDRs or addresses',
    text: 'destinations that may be sent plain `http://`; every other one needs `https://`.',
  },
  'webhooks.timeoutMs': {
    text: 'bound of one attempt: lookup, connection, request and the answer (at most 64 KiB read).',
  },
  'webhooks.retry.firstDelayMs': {
    text: 'wait after the first failed attempt; it doubles after each failure.',
  },
  'webhooks.retry.maxDelayMs': { defaultNote: '(1 hour)', text: 'longest wait between two attempts.' },
  'webhooks.retry.giveUpAfterSeconds': {
    defaultNote: '(24 hours)',
    text: 'a delivery not delivered this long after it was queued is dead (kept for redelivery).',
  },
  'webhooks.concurrencyPerDestination': {
    text: 'attempts at once to one host and port, per replica: a slow receiver holds no more.',
  },
  'webhooks.secretOverlapSeconds': {
    text: "how long the secrets a webhook's secret file held before a change keep signing beside the new ones.",
  },
  'pricing.images': {
    type: 'list of `{ model: glob, usdPerSample }`',
    text: 'what one image sample is expected to cost, by the first entry whose glob matches the model (`*` also matches a request without model); the service publishes no image price ([budgets](budgets.md)).',
  },
  'pricing.images[].model': { text: 'model glob, as in `policy.models`' },
  'pricing.images[].usdPerSample': { text: 'USD per sample' },
  'pricing.videoUsdPerSecond.480p': { text: 'USD per video second at 480p (also a video without size).' },
  'pricing.videoUsdPerSecond.720p': { text: 'USD per video second at 720p.' },
  'pricing.videoUsdPerSecond.1080p': { text: 'USD per video second at 1080p.' },
  'jobs.leaseMs': {
    text: "how long a replica holds a tracked job before another may take it over (a dead replica's jobs move within it).",
  },
  'jobs.maxAgeSeconds': { text: 'a job not ended this long after submission is given up as `expired`.' },
  'jobs.maxPollsPerSecondPerCredential': {
    text: "the tracker's upstream polls per second per credential, summed over every replica (they spend the account's rate limit).",
  },
  'jobs.firstPollMs': { text: "the tracker's first poll of a job, after its submission." },
  'jobs.maxPollIntervalMs': {
    text: 'the longest wait between two polls of one job (the backoff doubles up to it).',
  },
  tenants: { type: 'list', text: 'the callers (below).' },
  'tenants[].id': { text: 'unique tenant id; used in logs and metric labels' },
  'tenants[].credential': { text: 'name of an `upstream.credentials` entry its requests carry' },
  'tenants[].keys[].sha256': {
    type: '64 lowercase hex',
    text: 'SHA-256 of a gengate key; a hash may appear only once in the whole file',
  },
  'tenants[].keys[].prefix': {
    type: '`ggk_` + 4 letters or digits',
    text: "the key's first 8 characters, to tell keys apart",
  },
  'tenants[].keys[].label': { text: 'a name for people (shown as `name` by `account.keys`)' },
  'tenants[].keys[].expiresAt': {
    type: 'RFC 3339 date-time',
    text: 'from then on the key gets `401 expired_api_key`; stored as an ISO string in UTC',
  },
  'tenants[].account': {
    text: '`account.usage` / `account.keys` answered by gengate, or forwarded; `passthrough` is refused when another tenant uses the same credential',
  },
  'tenants[].policy.mode': { text: 'shadow: evaluate and record, change nothing' },
  'tenants[].policy.safetyLevel': {
    type: '`{ minimum: low|medium|high, onViolation: raise|reject }`',
    default: 'no rule; `onViolation: raise`',
    text: 'lowest safety level forwarded',
  },
  'tenants[].policy.samples': {
    type: '`{ maximum: 1..20, onViolation: clamp|reject }`',
    default: 'no rule; `clamp`',
    text: 'most images per request',
  },
  'tenants[].policy.steps': {
    type: '`{ maximum: 1..50, onViolation: clamp|reject }`',
    default: 'no rule; `clamp`',
    text: 'most steps per request',
  },
  'tenants[].policy.models': {
    type: '`{ allow?: [glob], deny?: [glob], allowServiceDefault: boolean }`',
    default: 'no rule; `allowServiceDefault: true`',
    text: 'globs on `<vendor>@<model_name>`; `*` is the only wildcard (it matches any characters, `@` included); a glob without `*` must be a whole model id',
  },
  'tenants[].policy.scanResults': {
    type: '`{ require: boolean }`',
    default: 'no rule',
    text: 'when `require` is true, `scanResults: true` is forwarded whatever was sent',
  },
  'tenants[].policy.outputTypes': {
    type: 'non-empty list of `url`, `base64`, `dataURI`, no repeats',
    default: 'no rule',
    text: 'allowed output types',
  },
  'tenants[].policy.video': {
    type: '`{ enabled: boolean, maxDurationSeconds?: integer ≥ 1 }`',
    default: 'no rule; `enabled: true`',
    text: 'whether video is allowed and its longest duration',
  },
  'tenants[].limits': {
    type: '`{ id, routes, cost, limit, windowSeconds }`',
    text: 'rate limits; `id` unique within the tenant, same syntax as a tenant id',
  },
  'tenants[].limits[].routes': {
    type: 'non-empty list of route ids or `"*"`',
    text: "`images.create`, `images.get`, `videos.create`, `videos.get`, `videos.delete`, `account.usage`, `account.keys`, and gengate's own `webhooks.deliveries`, `webhooks.redeliver`",
  },
  'tenants[].limits[].cost': { text: 'what one request costs: 1, its `samples`, or its video `duration`' },
  'tenants[].limits[].limit': { text: 'units admitted per window' },
  'tenants[].limits[].windowSeconds': { text: 'window length' },
  'tenants[].webhooks': {
    type: '`{ id, url, secret, events }`',
    text: 'completion webhooks ([webhooks.md](webhooks.md)); `id` unique within the tenant, same syntax as a tenant id',
  },
  'tenants[].webhooks[].url': {
    text: 'where the events are POSTed; judged against `webhooks.allowedDestinations` at each attempt',
  },
  'tenants[].webhooks[].secret': {
    type: '`{ env: VARIABLE }` or `{ file: PATH }`',
    text: 'one or more Standard Webhooks secrets (`whsec_<base64>`, blank-separated; each signs); a file is re-read when it changes',
  },
  'tenants[].webhooks[].events': {
    type: 'non-empty list of `job.completed`, `job.failed`, `job.cancelled`, `job.expired`',
    text: 'the job ends it is told of',
  },
  'tenants[].budget.dailyUsd': {
    default: 'no budget',
    text: 'USD the tenant may spend per calendar day (UTC); a create reserves its expected cost, `429 budget_exceeded` when it does not fit',
  },
  'tenants[].budget.monthlyUsd': { default: 'no budget', text: 'the same per calendar month (UTC)' },
  'tenants[].jobs.maxInFlight': {
    default: 'no cap',
    text: 'unfinished jobs at once; a create beyond it gets `429 too_many_jobs_in_flight`',
  },
};
