// Node 24 (V8) implements the TC39 "JSON.parse source text access" proposal; TypeScript's lib does not
// declare it yet. Only what src/simulator/lossless-json.ts uses is declared here.
interface JsonReviverContext {
  /** The literal's source text; present for primitive values only. */
  source?: string;
}

interface RawJson {
  readonly rawJSON: string;
}

interface JSON {
  parse(
    text: string,
    reviver: (this: unknown, key: string, value: unknown, context: JsonReviverContext) => unknown,
  ): unknown;
  rawJSON(text: string): RawJson;
}
