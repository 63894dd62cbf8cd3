import { idSchema } from '../../ids.js';
import {
  DEFERRAL_ACTIONS,
  DEFERRAL_REASONS,
  OUTPUT_FIELD_TYPES,
  TRANSFORM_MODES,
} from '../../transform/view-records.js';
import type { JsonSchema } from '../http/route.js';
import { filterParamSchema } from '../http/filters.js';
import { isoDateString, object, restoreOnly, text } from '../http/schemas.js';

/** Bounds the spec gives (Limits) and the ones it leaves open (ours; docs/views.md). */
export const VIEW_LIMITS = {
  name: 128,
  outputFields: 256,
  fieldName: 128,
  fieldDescription: 512,
  script: 65_536,
  hint: 4096,
  joins: 16,
  alias: 64,
  joinField: 256,
  policyEntries: 256,
  policyPath: 256,
  maxReadDepth: 32,
  decisionReason: 512,
} as const;

export const ALIAS_PATTERN = '^[a-z][a-z0-9_]{0,63}$';

const outputField = object(
  {
    name: text(1, VIEW_LIMITS.fieldName),
    type: { enum: [...OUTPUT_FIELD_TYPES] },
    description: {
      type: 'string',
      maxLength: VIEW_LIMITS.fieldDescription,
      errorHint: `must be a string of at most ${VIEW_LIMITS.fieldDescription} characters`,
    },
  },
  ['name', 'type'],
);

export const outputSchema: JsonSchema = {
  type: 'array',
  maxItems: VIEW_LIMITS.outputFields,
  items: outputField,
  errorHint: `must be an array of at most ${VIEW_LIMITS.outputFields} fields, each {"name", "type", "description"?}`,
};

/** 1 to 65,536 characters; "not whitespace-only" is checked by the handler so the message can say so. */
export const transformScript: JsonSchema = text(1, VIEW_LIMITS.script);

const hint: JsonSchema = {
  type: ['string', 'null'],
  maxLength: VIEW_LIMITS.hint,
  errorHint: `must be a string of at most ${VIEW_LIMITS.hint} characters, or null`,
};

const pathText = text(1, VIEW_LIMITS.policyPath);
const pathList: JsonSchema = {
  type: 'array',
  maxItems: VIEW_LIMITS.policyEntries,
  items: pathText,
  errorHint: `must be an array of at most ${VIEW_LIMITS.policyEntries} input paths`,
};

const mappingPolicy = object({
  nullable_inputs: pathList,
  fallback_groups: {
    type: 'array',
    maxItems: VIEW_LIMITS.policyEntries,
    items: { ...pathList, minItems: 1 },
    errorHint: `must be an array of at most ${VIEW_LIMITS.policyEntries} groups, each a non-empty array of input paths`,
  },
  output_bindings: {
    type: 'object',
    maxProperties: VIEW_LIMITS.policyEntries,
    additionalProperties: pathList,
    errorHint: `must map output field names to arrays of input paths (at most ${VIEW_LIMITS.policyEntries} entries)`,
  },
  allow_drops: { type: 'boolean' },
});

export const viewCreateBody = object(
  {
    name: text(1, VIEW_LIMITS.name),
    output_schema: outputSchema,
    hint,
    mapping_policy: mappingPolicy,
    project_id: idSchema('project'),
    collection_id: idSchema('collection'),
    parent_view_id: idSchema('view'),
    transform_script: transformScript,
    transform_mode: { enum: [...TRANSFORM_MODES] },
    // Named so the answer says why rather than "unknown field".
    source_id: {
      not: {},
      errorHint:
        'is not accepted: views read a collection (collection_id) or a view (parent_view_id); find collections with GET .../collections?source_id=',
    },
  },
  ['name'],
);

const joinClause = object(
  {
    lookup_view_id: idSchema('view'),
    alias: {
      type: 'string',
      pattern: ALIAS_PATTERN,
      errorHint: 'must be 1 to 64 characters of lowercase letters, digits and "_", starting with a letter',
    },
    join_type: { enum: ['left', 'inner'] },
    base_field: text(1, VIEW_LIMITS.joinField),
    lookup_field: text(1, VIEW_LIMITS.joinField),
    match_strategy: { enum: ['latest'] },
    priority: {
      type: 'integer',
      minimum: 0,
      maximum: 1_000_000,
      errorHint: 'must be an integer from 0 to 1000000 (lower runs first)',
    },
  },
  ['lookup_view_id', 'alias', 'base_field', 'lookup_field'],
);

export const viewJoinBody = object(
  {
    name: text(1, VIEW_LIMITS.name),
    project_id: idSchema('project'),
    base_view_id: idSchema('view'),
    joins: {
      type: 'array',
      minItems: 1,
      maxItems: VIEW_LIMITS.joins,
      items: joinClause,
      errorHint: `must be an array of 1 to ${VIEW_LIMITS.joins} join clauses`,
    },
    output_schema: outputSchema,
    transform_script: transformScript,
    hint,
  },
  ['name', 'base_view_id', 'joins'],
);

export const viewUpdateBody = object({
  mapping_policy: mappingPolicy,
  name: text(1, VIEW_LIMITS.name),
  output_schema: outputSchema,
  hint,
  transform_mode: { enum: [...TRANSFORM_MODES] },
  view_transform_id: idSchema('viewTransform'),
  deleted_at: restoreOnly,
  collection_id: { not: {}, errorHint: 'cannot be changed: a view keeps the collection it reads; create another view' },
  parent_view_id: {
    not: {},
    errorHint: 'cannot be changed: a view keeps the view it derives from; create another view',
  },
});

const maxReadDepth: JsonSchema = {
  type: ['integer', 'null'],
  minimum: 1,
  maximum: VIEW_LIMITS.maxReadDepth,
  errorHint: `must be an integer from 1 to ${VIEW_LIMITS.maxReadDepth}, or null`,
};

export const transformCreateBody = object({ transform_script: transformScript, max_read_depth: maxReadDepth });

export const transformUpdateBody = object({
  transform_script: transformScript,
  status: { enum: ['active', 'disabled'] },
  max_read_depth: maxReadDepth,
});

export const decisionBody = object(
  {
    action: { enum: [...DEFERRAL_ACTIONS] },
    transform_id: idSchema('viewTransform'),
    reason: text(1, VIEW_LIMITS.decisionReason),
  },
  ['action'],
);

export const viewListFilters = {
  project_id: idSchema('project'),
  collection_id: idSchema('collection'),
  parent_view_id: idSchema('view'),
  deleted_at: filterParamSchema,
};

export const deferralListFilters = {
  reason: { enum: [...DEFERRAL_REASONS] },
  resolved_at: filterParamSchema,
};

export const versionListFilters = {
  transform_id: idSchema('viewTransform'),
};

export const recordsQueryFilters = { start_at: isoDateString, end_at: isoDateString };
