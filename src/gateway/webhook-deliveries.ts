// The tenant's webhook deliveries (docs/webhooks.md, "Replay"): gengate's own routes, answered from the
// webhook queue and never forwarded. Authenticated with the tenant key like every route; a tenant sees and
// redelivers only its own deliveries, and another tenant's id is 404 delivery_not_found, as an unknown one.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { routeNotFound } from '../errors/error-handler.ts';
import { gatewayError } from '../errors/registry.ts';
import { successEnvelope } from '../maxai/envelope.ts';
import {
  WEBHOOK_DELIVERIES_PATH,
  isUuid,
  redeliverTarget,
  type GatewayRoute,
} from '../routing/route-table.ts';
import type { WebhookService } from '../webhooks/service.ts';
import { admitRequestTarget } from './request-target.ts';
import { tenantOf } from './request-state.ts';

type Hook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/** How many deliveries the list shows, newest first. */
const LISTED_DELIVERIES = 100;

const LIST_ROUTE: GatewayRoute = {
  id: 'webhooks.deliveries',
  method: 'GET',
  path: WEBHOOK_DELIVERIES_PATH,
  hasRequestId: false,
};
const REDELIVER_ROUTE: GatewayRoute = {
  id: 'webhooks.redeliver',
  method: 'POST',
  path: `${WEBHOOK_DELIVERIES_PATH}/:deliveryId/redeliver`,
  hasRequestId: false,
};

function deliveryIdOf(request: FastifyRequest): string {
  return (request.params as { deliveryId?: string }).deliveryId ?? '';
}

// The raw target must be exactly the canonical one, as for every route (src/gateway/request-target.ts).
const admitRedeliverTarget: Hook = (request, _reply, done) => {
  const deliveryId = deliveryIdOf(request);
  if (!isUuid(deliveryId) || request.raw.url !== redeliverTarget(deliveryId))
    throw routeNotFound(request.raw.url ?? '');
  done();
};

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

export function installWebhookDeliveryRoutes(
  app: FastifyInstance,
  options: {
    webhooks: Pick<WebhookService, 'list' | 'redeliver'>;
    authenticate: Hook;
    /** The tenant's limits charged, their headers set or the refusal thrown (src/gateway/routes.ts). */
    chargeLimits: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
    countServedRequest: Hook;
  },
): void {
  // Every refusal after authentication comes after the charge, whose headers it keeps: no onError needed
  // to show the limits, as the forwarded routes have for refusals before theirs.
  const { webhooks, authenticate, chargeLimits, countServedRequest } = options;
  // Both routes: the canonical target first, then the tenant key, then the tenant's limits, as on every
  // route; counted like every served request.
  const install = (route: GatewayRoute, admitTarget: Hook, handler: Handler) => {
    app.route({
      method: route.method,
      url: route.path,
      config: { gatewayRoute: route },
      onRequest: [admitTarget, authenticate],
      preHandler: chargeLimits,
      handler,
      onResponse: countServedRequest,
    });
  };
  install(LIST_ROUTE, admitRequestTarget, async (request, reply) => {
    const deliveries = await webhooks.list(tenantOf(request).id, LISTED_DELIVERIES);
    return reply.type('application/json').send(successEnvelope(deliveries));
  });
  install(REDELIVER_ROUTE, admitRedeliverTarget, async (request, reply) => {
    const deliveryId = deliveryIdOf(request).toLowerCase();
    if (!(await webhooks.redeliver(tenantOf(request).id, deliveryId))) {
      throw gatewayError('delivery_not_found', { deliveryId });
    }
    return reply
      .code(202)
      .type('application/json')
      .send({ status: 202, data: { id: deliveryId, queued: true } });
  });
}
