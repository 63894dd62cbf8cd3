/** A JSON Schema object (ajv compiles it at start-up). */
export type JsonSchema = Record<string, unknown>;
