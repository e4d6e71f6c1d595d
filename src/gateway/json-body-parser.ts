// The gateway's only content-type parser: application/json in UTF-8, parsed once
// (src/validation/json-body.ts) into the request's state. Every other media type gets Fastify's 415,
// which the error handler words. The parsed body lives in the state alone, where the policy's rewrite
// and the requestId assignment replace it; `request.body` stays empty, so no copy of it can go stale.
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { assertUtf8Charset, parseJsonBody } from '../validation/json-body.ts';

export interface JsonBodyParserOptions {
  /** `server.bodyLimitBytes`: a longer body is refused with 413 before it is parsed. */
  bodyLimitBytes: number;
}

function parseIntoState(request: FastifyRequest, raw: Buffer, done: (error: Error | null) => void): void {
  try {
    assertUtf8Charset(request.headers['content-type']);
    const body = parseJsonBody(raw);
    request.gateway.body = body;
    request.gateway.clientBody = body;
    done(null);
  } catch (error) {
    done(error as Error);
  }
}

export const jsonBodyParser = fp<JsonBodyParserOptions>(
  (app, options, done) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser(
      'application/json',
      { parseAs: 'buffer', bodyLimit: options.bodyLimitBytes },
      parseIntoState,
    );
    done();
  },
  { name: 'gengate-json-body-parser', fastify: '5.x', dependencies: ['gengate-request-state'] },
);
